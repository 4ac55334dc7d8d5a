// RUN: nova-opt %s --split-input-file --nova-collapse-batch-dims | FileCheck %s

#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#rhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

// What nova-expand-batch-dims produces: back to a batch_matmul over B*H,
// with the operands and the init collapsed and the result expanded.
// CHECK-LABEL: func.func @contraction_two_batch_dims
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x4x8x16xf32>, %[[F:.*]]: tensor<2x4x16x16xf32>)
// CHECK-NOT: linalg.generic
// CHECK-DAG: %[[INIT:.*]] = tensor.collapse_shape %[[F]] {{\[\[}}0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
// CHECK-DAG: %[[A:.*]] = tensor.collapse_shape %[[Q]] {{\[\[}}0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
// CHECK-DAG: %[[B:.*]] = tensor.collapse_shape %[[K]] {{\[\[}}0, 1], [2], [3]] : tensor<2x4x8x16xf32> into tensor<8x8x16xf32>
// CHECK: %[[M:.*]] = linalg.batch_matmul ins(%[[A]], %[[B]] : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%[[INIT]] : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
// CHECK: %[[R:.*]] = tensor.expand_shape %[[M]] {{\[\[}}0, 1], [2], [3]] output_shape [2, 4, 16, 16] : tensor<8x16x16xf32> into tensor<2x4x16x16xf32>
// CHECK: return %[[R]] : tensor<2x4x16x16xf32>
func.func @contraction_two_batch_dims(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>, %f: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) outs(%f : tensor<2x4x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4x16x16xf32>
  return %r : tensor<2x4x16x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#rhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

// mulf and addf with their operands swapped are the same contraction.
// CHECK-LABEL: func.func @contraction_commuted_body
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul
// CHECK: tensor.expand_shape
func.func @contraction_commuted_body(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>, %f: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) outs(%f : tensor<2x4x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %y, %x : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x4x16x16xf32>
  return %r : tensor<2x4x16x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#rhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

// Mixed precision as nova-expand-batch-dims writes it (bf16 operands
// extended to the f32 accumulator): a batch_matmul of the bf16 operands.
// CHECK-LABEL: func.func @contraction_mixed_precision
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<8x16x8xbf16>, tensor<8x8x16xbf16>) outs(%{{.*}} : tensor<8x16x16xf32>)
func.func @contraction_mixed_precision(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x8x16xbf16>, %f: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x8xbf16>, tensor<2x4x8x16xbf16>) outs(%f : tensor<2x4x16x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %ex = arith.extf %x : bf16 to f32
    %ey = arith.extf %y : bf16 to f32
    %p = arith.mulf %ex, %ey : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4x16x16xf32>
  return %r : tensor<2x4x16x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#rhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

// The first operand extended and squared: not a contraction of both.
// CHECK-LABEL: func.func @negative_mixed_squared
// CHECK: linalg.generic
// CHECK-NOT: linalg.batch_matmul
func.func @negative_mixed_squared(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x8x16xbf16>, %f: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x8xbf16>, tensor<2x4x8x16xbf16>) outs(%f : tensor<2x4x16x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %ex = arith.extf %x : bf16 to f32
    %p = arith.mulf %ex, %ex : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4x16x16xf32>
  return %r : tensor<2x4x16x16xf32>
}

// -----

// Three batch loops collapse into one batch dimension of 2*3*4.
// CHECK-LABEL: func.func @contraction_three_batch_dims
// CHECK-NOT: linalg.generic
// CHECK: %[[M:.*]] = linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<24x16x8xf32>, tensor<24x8x16xf32>) outs(%{{.*}} : tensor<24x16x16xf32>)
// CHECK: tensor.expand_shape %[[M]] {{\[\[}}0, 1, 2], [3], [4]] output_shape [2, 3, 4, 16, 16]
func.func @contraction_three_batch_dims(%q: tensor<2x3x4x16x8xf32>, %k: tensor<2x3x4x8x16xf32>, %f: tensor<2x3x4x16x16xf32>) -> tensor<2x3x4x16x16xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>,
                                        affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d4)>,
                                        affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x4x16x8xf32>, tensor<2x3x4x8x16xf32>) outs(%f : tensor<2x3x4x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x4x16x16xf32>
  return %r : tensor<2x3x4x16x16xf32>
}

// -----

// A plain matmul (3 loops, no batch) is left to the matmul patterns.
// CHECK-LABEL: func.func @negative_three_loops
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: linalg.batch_matmul
func.func @negative_three_loops(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %f: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%f : tensor<16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// One batch loop is already a batch_matmul shape; only two or more are
// collapsed.
// CHECK-LABEL: func.func @negative_one_batch_loop
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK-NOT: linalg.batch_matmul
func.func @negative_one_batch_loop(%a: tensor<8x16x8xf32>, %b: tensor<8x8x16xf32>, %f: tensor<8x16x16xf32>) -> tensor<8x16x16xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%f : tensor<8x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x16x16xf32>
  return %r : tensor<8x16x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#rhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

// A max-plus reduction has the contraction's maps but not its body.
// CHECK-LABEL: func.func @negative_body_mul_max
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK-NOT: linalg.batch_matmul
func.func @negative_body_mul_max(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>, %f: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) outs(%f : tensor<2x4x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.maximumf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4x16x16xf32>
  return %r : tensor<2x4x16x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#rhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

// mulf and addf, but wired as in0 * out + in1.
// CHECK-LABEL: func.func @negative_body_wrong_operands
// CHECK: linalg.generic
// CHECK-NOT: linalg.batch_matmul
func.func @negative_body_wrong_operands(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>, %f: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) outs(%f : tensor<2x4x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %acc : f32
    %s = arith.addf %y, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4x16x16xf32>
  return %r : tensor<2x4x16x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

// q @ k^T with k not transposed beforehand: not batch_matmul's default maps.
// CHECK-LABEL: func.func @negative_transposed_rhs_map
// CHECK: linalg.generic
// CHECK-NOT: linalg.batch_matmul
func.func @negative_transposed_rhs_map(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %f: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#lhs, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) outs(%f : tensor<2x4x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4x16x16xf32>
  return %r : tensor<2x4x16x16xf32>
}

// -----

#lhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#rhs = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @negative_dynamic_shape
// CHECK: linalg.generic
// CHECK-NOT: linalg.batch_matmul
func.func @negative_dynamic_shape(%q: tensor<?x4x16x8xf32>, %k: tensor<?x4x8x16xf32>, %f: tensor<?x4x16x16xf32>) -> tensor<?x4x16x16xf32> {
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<?x4x16x8xf32>, tensor<?x4x8x16xf32>) outs(%f : tensor<?x4x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x4x16x16xf32>
  return %r : tensor<?x4x16x16xf32>
}

// -----

// An integer contraction (first body op not arith.mulf) is left alone.
#a = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#b = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
#c = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @negative_integer_body
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.generic
// CHECK: arith.muli
func.func @negative_integer_body(%q: tensor<2x4x16x8xi32>, %k: tensor<2x4x8x16xi32>, %f: tensor<2x4x16x16xi32>) -> tensor<2x4x16x16xi32> {
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x4x16x8xi32>, tensor<2x4x8x16xi32>) outs(%f : tensor<2x4x16x16xi32>) {
  ^bb0(%x: i32, %y: i32, %acc: i32):
    %p = arith.muli %x, %y : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  } -> tensor<2x4x16x16xi32>
  return %r : tensor<2x4x16x16xi32>
}
