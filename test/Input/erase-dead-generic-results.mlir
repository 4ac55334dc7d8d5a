// RUN: nova-opt %s --nova-erase-dead-generic-results -split-input-file -verify-diagnostics | FileCheck %s

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>

// torch's max-with-index (softmax): only the max is used.
// CHECK-LABEL: func.func @max_with_dead_index
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<4xf32>)
// CHECK-NOT: linalg.index
// CHECK-NOT: arith.select
// CHECK: arith.maximumf
// CHECK: linalg.yield %{{.*}} : f32
// CHECK: return %[[MAX]]
func.func @max_with_dead_index(%x: tensor<4x8xf32>, %m: tensor<4xf32>, %i: tensor<4xi64>) -> tensor<4xf32> {
  %r:2 = linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m, %i : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %max = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ki, %idx : i64
    linalg.yield %max, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @negative_single_result
// CHECK: linalg.generic
// CHECK: arith.addf
func.func @negative_single_result(%x: tensor<4x8xf32>, %m: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @negative_both_results_live(%x: tensor<4x8xf32>, %m: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  // expected-error @+1 {{linalg.generic has 2 live results; nova normal form needs one result per generic}}
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m, %i : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %max = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ki, %idx : i64
    linalg.yield %max, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xi64>
}

// -----

// Both results live but independent: a sum over a window and the window's
// size, which depends only on its own loop index. The sum keeps the loops; the
// size becomes a parallel generic over its own dimension.
#x = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @independent_results_split
// CHECK:         %[[SUM:.+]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "reduction"]
// CHECK:           arith.addf
// CHECK:         %[[SIZE:.+]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel"]
// CHECK-SAME:      outs(
// CHECK:           linalg.index 0
// CHECK:           arith.sitofp
// CHECK:         return %[[SUM]], %[[SIZE]]
func.func @independent_results_split(%x: tensor<4x8xf32>, %s: tensor<4xf32>, %n: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = linalg.generic {indexing_maps = [#x, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%s, %n : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32, %size: f32):
    %i = linalg.index 0 : index
    %c1 = arith.constant 1 : index
    %w = arith.addi %i, %c1 : index
    %wi = arith.index_cast %w : index to i64
    %wf = arith.sitofp %wi : i64 to f32
    %sum = arith.addf %in, %acc : f32
    linalg.yield %sum, %wf : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A maximum and its index coupled through one compare (torch-mlir's adaptive
// max pooling with indices): the maximum as a maximumf reduction, then the
// smallest index whose value equals it (or is NaN), from a fill of INT64_MAX.
#src = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @arg_max_pair
// CHECK: %[[BIG:.*]] = arith.constant 9223372036854775807 : i64
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[BIG]] : i64)
// CHECK: %[[IDX:.*]] = linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[MAX]] : tensor<4x6xf32>, tensor<4xf32>) outs(%[[FILL]] : tensor<4xi64>)
// CHECK: ^bb0(%[[V:.*]]: f32, %[[M:.*]]: f32, %[[OUT:.*]]: i64):
// CHECK: %[[EQ:.*]] = arith.cmpf oeq, %[[V]], %[[M]]
// CHECK: %[[NAN:.*]] = arith.cmpf une, %[[V]], %[[V]]
// CHECK: %[[HIT:.*]] = arith.ori %[[EQ]], %[[NAN]]
// CHECK: %[[CAND:.*]] = arith.select %[[HIT]], %{{.*}}, %[[BIG]]
// CHECK: arith.minsi %[[CAND]], %[[OUT]]
// CHECK: return %[[MAX]], %[[IDX]]
func.func @arg_max_pair(%x: tensor<4x6xf32>) -> (tensor<4xf32>, tensor<4xi64>) {
  %lo = arith.constant -3.40282347E+38 : f32
  %e = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%lo : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi64>
  %r:2 = linalg.generic {indexing_maps = [#src, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf32>) outs(%init, %ei : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%v: f32, %m: f32, %i: i64):
    %k = linalg.index 1 : index
    %gt = arith.cmpf ogt, %v, %m : f32
    %nm = arith.select %gt, %v, %m : f32
    %ki = arith.index_cast %k : index to i64
    %ni = arith.select %gt, %ki, %i : i64
    linalg.yield %nm, %ni : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xi64>
}

// -----

// A running minimum kept by compare and select, operands swapped in the
// compare: a minimumf reduction.
#src = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @select_running_min
// CHECK: ^bb0(%[[V:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT: %[[R:.*]] = arith.minimumf %[[V]], %[[OUT]] : f32
// CHECK-NEXT: linalg.yield %[[R]]
// CHECK-NOT: arith.select
func.func @select_running_min(%x: tensor<4x6xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#src, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %m: f32):
    %gt = arith.cmpf ogt, %m, %v : f32
    %nm = arith.select %gt, %v, %m : f32
    linalg.yield %nm : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The running value read by something other than the compare and the
// select is no plain maximum: left as it is.
#src = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @select_with_other_use
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK-NOT: arith.maximumf
func.func @select_with_other_use(%x: tensor<4x6xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#src, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x6xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %m: f32):
    %gt = arith.cmpf ogt, %v, %m : f32
    %h = arith.mulf %m, %v : f32
    %nm = arith.select %gt, %h, %m : f32
    linalg.yield %nm : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// torch-mlir's adaptive max pooling index: the first window position whose
// value equals the window's maximum, from an init of -1. The index
// (d1 + d2) grows with the reduction loop d2, so the first match is the
// smallest matching index: a minsi reduction, then -1 where none matched.
#x = affine_map<(d0, d1, d2) -> (d0, d1)>
#w = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @first_match_index
// CHECK-DAG: %[[BIG:.*]] = arith.constant 9223372036854775807 : i64
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[BIG]] : i64)
// CHECK: %[[MIN:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%[[FILL]]
// CHECK: arith.cmpf oeq
// CHECK: arith.select
// CHECK: arith.minsi
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]{{.*}} ins(%[[MIN]]
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK-NOT: arith.cmpi eq
func.func @first_match_index(%src: tensor<3x4xf32>, %max: tensor<3x3xf32>, %win: tensor<2xi64>) -> tensor<3x3xi64> {
  %none = arith.constant -1 : i64
  %e = tensor.empty() : tensor<3x3xi64>
  %init = linalg.fill ins(%none : i64) outs(%e : tensor<3x3xi64>) -> tensor<3x3xi64>
  %r = linalg.generic {indexing_maps = [#x, #w, #x], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%max, %win : tensor<3x3xf32>, tensor<2xi64>) outs(%init : tensor<3x3xi64>) {
  ^bb0(%m: f32, %unused: i64, %out: i64):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %p = arith.addi %i1, %i2 : index
    %v = tensor.extract %src[%i0, %p] : tensor<3x4xf32>
    %eq = arith.cmpf oeq, %v, %m : f32
    %idx = arith.index_cast %p : index to i64
    %s = arith.select %eq, %idx, %out : i64
    %first = arith.cmpi eq, %out, %none : i64
    %y = arith.select %first, %s, %out : i64
    linalg.yield %y : i64
  } -> tensor<3x3xi64>
  return %r : tensor<3x3xi64>
}

// -----

// The index falls as the reduction advances (3 - d2): the first match is
// the largest index, not the smallest; left as it is.
#x = affine_map<(d0, d1, d2) -> (d0, d1)>
#w = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @negative_first_match_decreasing
// CHECK-NOT: arith.minsi
// CHECK: arith.cmpi eq
func.func @negative_first_match_decreasing(%src: tensor<3x4xf32>, %max: tensor<3x3xf32>, %win: tensor<2xi64>) -> tensor<3x3xi64> {
  %none = arith.constant -1 : i64
  %c3 = arith.constant 3 : index
  %e = tensor.empty() : tensor<3x3xi64>
  %init = linalg.fill ins(%none : i64) outs(%e : tensor<3x3xi64>) -> tensor<3x3xi64>
  %r = linalg.generic {indexing_maps = [#x, #w, #x], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%max, %win : tensor<3x3xf32>, tensor<2xi64>) outs(%init : tensor<3x3xi64>) {
  ^bb0(%m: f32, %unused: i64, %out: i64):
    %i0 = linalg.index 0 : index
    %i2 = linalg.index 2 : index
    %p = arith.subi %c3, %i2 : index
    %v = tensor.extract %src[%i0, %p] : tensor<3x4xf32>
    %eq = arith.cmpf oeq, %v, %m : f32
    %idx = arith.index_cast %p : index to i64
    %s = arith.select %eq, %idx, %out : i64
    %first = arith.cmpi eq, %out, %none : i64
    %y = arith.select %first, %s, %out : i64
    linalg.yield %y : i64
  } -> tensor<3x3xi64>
  return %r : tensor<3x3xi64>
}
