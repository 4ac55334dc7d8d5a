// RUN: nova-opt %s --nova-fold-shape-constants -split-input-file -verify-diagnostics | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (0, d1)>
#col = affine_map<(d0, d1) -> (d0, 0)>
#vec = affine_map<(d0) -> (d0)>

// The causal mask from MultiHeadAttention: iota, subi, cmpi, andi, xori,
// then a select in a float generic.
// CHECK-LABEL: func.func @causal_mask
// CHECK-NOT: linalg.index
// CHECK-NOT: xi64>
// CHECK-NOT: xi1>
// CHECK-DAG: %[[MASK:.*]] = arith.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 1.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[MASK]], %{{.*}} : tensor<3x3xf32>, tensor<3x3xf32>)
// CHECK: ^bb0(%[[M:.*]]: f32, %[[V:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[C:.*]] = arith.cmpf une, %[[M]], %[[Z]] : f32
// CHECK: arith.select %[[C]], %{{.*}}, %[[V]] : f32
func.func @causal_mask(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %c0 = arith.constant 0 : i64
  %true = arith.constant true
  %ninf = arith.constant 0xFF800000 : f32
  %ones = arith.constant dense<true> : tensor<3x3xi1>
  %e = tensor.empty() : tensor<3xi64>
  %iota = linalg.generic {indexing_maps = [#vec], iterator_types = ["parallel"]} outs(%e : tensor<3xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    linalg.yield %ii : i64
  } -> tensor<3xi64>
  %r = tensor.expand_shape %iota [[0, 1]] output_shape [1, 3] : tensor<3xi64> into tensor<1x3xi64>
  %c = tensor.expand_shape %iota [[0, 1]] output_shape [3, 1] : tensor<3xi64> into tensor<3x1xi64>
  %e2 = tensor.empty() : tensor<3x3xi64>
  %d = linalg.generic {indexing_maps = [#row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%r, %c : tensor<1x3xi64>, tensor<3x1xi64>) outs(%e2 : tensor<3x3xi64>) {
  ^bb0(%a: i64, %b: i64, %out: i64):
    %s = arith.subi %a, %b : i64
    linalg.yield %s : i64
  } -> tensor<3x3xi64>
  %e3 = tensor.empty() : tensor<3x3xi1>
  %le = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : tensor<3x3xi64>) outs(%e3 : tensor<3x3xi1>) {
  ^bb0(%a: i64, %out: i1):
    %p = arith.cmpi sle, %a, %c0 : i64
    linalg.yield %p : i1
  } -> tensor<3x3xi1>
  %and = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%le, %ones : tensor<3x3xi1>, tensor<3x3xi1>) outs(%e3 : tensor<3x3xi1>) {
  ^bb0(%a: i1, %b: i1, %out: i1):
    %p = arith.andi %a, %b : i1
    linalg.yield %p : i1
  } -> tensor<3x3xi1>
  %not = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%and : tensor<3x3xi1>) outs(%e3 : tensor<3x3xi1>) {
  ^bb0(%a: i1, %out: i1):
    %p = arith.xori %a, %true : i1
    linalg.yield %p : i1
  } -> tensor<3x3xi1>
  %ef = tensor.empty() : tensor<3x3xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%not, %x : tensor<3x3xi1>, tensor<3x3xf32>) outs(%ef : tensor<3x3xf32>) {
  ^bb0(%m: i1, %v: f32, %out: f32):
    %s = arith.select %m, %ninf, %v : f32
    linalg.yield %s : f32
  } -> tensor<3x3xf32>
  return %y : tensor<3x3xf32>
}

// -----

// An integer constant (a position table) read through sitofp.
// CHECK-LABEL: func.func @positions_sitofp
// CHECK: %[[POS:.*]] = arith.constant dense<[0.000000e+00, 2.000000e+00, 4.000000e+00, 6.000000e+00]> : tensor<4xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[POS]] : tensor<4xf32>, tensor<4xf32>)
// CHECK-NOT: arith.sitofp
// CHECK: arith.addf
func.func @positions_sitofp(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = arith.constant 2 : i32
  %e = tensor.empty() : tensor<4xi32>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<4xi32>) {
  ^bb0(%out: i32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %m = arith.muli %ii, %two : i32
    linalg.yield %m : i32
  } -> tensor<4xi32>
  %ef = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %pos : tensor<4xf32>, tensor<4xi32>) outs(%ef : tensor<4xf32>) {
  ^bb0(%v: f32, %p: i32, %out: f32):
    %f = arith.sitofp %p : i32 to f32
    %a = arith.addf %v, %f : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// RMSNorm's x.pow(2): fpowi with a constant exponent.
// CHECK-LABEL: func.func @fpowi_constant
// CHECK-NOT: math.fpowi
// CHECK: %[[SQ:.*]] = arith.mulf %[[IN:.*]], %[[IN]] : f32
// CHECK: linalg.yield %[[SQ]]
func.func @fpowi_constant(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c2 = arith.constant 2 : i64
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.fpowi %in, %c2 : f32, i64
    linalg.yield %p : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @negative_float_only
// CHECK: linalg.generic
// CHECK: arith.mulf
func.func @negative_float_only(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %p = arith.mulf %in, %in : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A mask that depends on run-time data is not folded: it stays an i1
// computation for the vector unit.
// CHECK-LABEL: func.func @runtime_mask_stays_on_chip
// CHECK: %[[M:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4xi1>)
// CHECK: arith.cmpf ogt
// CHECK: linalg.generic {{.*}} ins(%[[M]], %{{.*}} : tensor<4xi1>, tensor<4xf32>)
func.func @runtime_mask_stays_on_chip(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xi1>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xi1>) {
  ^bb0(%in: f32, %out: i1):
    %p = arith.cmpf ogt, %in, %zero : f32
    linalg.yield %p : i1
  } -> tensor<4xi1>
  %ef = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%m, %x : tensor<4xi1>, tensor<4xf32>) outs(%ef : tensor<4xf32>) {
  ^bb0(%c: i1, %v: f32, %out: f32):
    %s = arith.select %c, %v, %zero : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// An integer tensor that leaves the function is computed on chip: the iota
// is not replaced by a float constant (no float consumer).
// CHECK-LABEL: func.func @integer_result_stays
// CHECK: linalg.index 0
// CHECK: return %{{.*}} : tensor<4xi64>
func.func @integer_result_stays() -> tensor<4xi64> {
  %e = tensor.empty() : tensor<4xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<4xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    linalg.yield %ii : i64
  } -> tensor<4xi64>
  return %iota : tensor<4xi64>
}

// -----

// Integer token ids from the caller are run-time data, left to the chip.
// CHECK-LABEL: func.func @integer_argument_stays
// CHECK: ins(%{{.*}}, %{{.*}} : tensor<4xi64>, tensor<4xf32>)
// CHECK: arith.sitofp
func.func @integer_argument_stays(%ids: tensor<4xi64>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %ef = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ids, %x : tensor<4xi64>, tensor<4xf32>) outs(%ef : tensor<4xf32>) {
  ^bb0(%p: i64, %v: f32, %out: f32):
    %f = arith.sitofp %p : i64 to f32
    %a = arith.addf %v, %f : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}
