// RUN: nova-opt %s --split-input-file --nova-expand-batch-dims | FileCheck %s

// q @ k^T as torch lowers it: B and H collapsed into one batch dimension.
// The collapses are folded into a 5-loop contraction on the [B, H, ...]
// tensors; the init is expanded and the result collapsed back.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @batch_matmul_two_batch_dims
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x4x8x16xf32>)
// CHECK: %[[FILL:.*]] = linalg.fill
// CHECK: %[[INIT:.*]] = tensor.expand_shape %[[FILL]] {{\[\[}}0, 1], [2], [3]] output_shape [2, 4, 16, 16] : tensor<8x16x16xf32> into tensor<2x4x16x16xf32>
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[Q]], %[[K]] : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) outs(%[[INIT]] : tensor<2x4x16x16xf32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK: linalg.yield %[[S]] : f32
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[G]] {{\[\[}}0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
// CHECK-NOT: linalg.batch_matmul
// CHECK: return %[[R]] : tensor<8x16x16xf32>
func.func @batch_matmul_two_batch_dims(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<8x16x16xf32> {
  %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x8x16xf32> into tensor<8x8x16xf32>
  %e = tensor.empty() : tensor<8x16x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %m : tensor<8x16x16xf32>
}

// -----

// Three batch dimensions: six loops, the last a reduction.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d4)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @batch_matmul_three_batch_dims
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3x4x16x8xf32>, %[[K:.*]]: tensor<2x3x4x8x16xf32>, %[[F:.*]]: tensor<24x16x16xf32>)
// CHECK: %[[INIT:.*]] = tensor.expand_shape %[[F]] {{\[\[}}0, 1, 2], [3], [4]] output_shape [2, 3, 4, 16, 16]
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[Q]], %[[K]] : {{.*}}) outs(%[[INIT]] : tensor<2x3x4x16x16xf32>)
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[G]] {{\[\[}}0, 1, 2], [3], [4]] : tensor<2x3x4x16x16xf32> into tensor<24x16x16xf32>
// CHECK: return %[[R]]
func.func @batch_matmul_three_batch_dims(%q: tensor<2x3x4x16x8xf32>, %k: tensor<2x3x4x8x16xf32>, %f: tensor<24x16x16xf32>) -> tensor<24x16x16xf32> {
  %a = tensor.collapse_shape %q [[0, 1, 2], [3], [4]] : tensor<2x3x4x16x8xf32> into tensor<24x16x8xf32>
  %b = tensor.collapse_shape %k [[0, 1, 2], [3], [4]] : tensor<2x3x4x8x16xf32> into tensor<24x8x16xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<24x16x8xf32>, tensor<24x8x16xf32>) outs(%f : tensor<24x16x16xf32>) -> tensor<24x16x16xf32>
  return %m : tensor<24x16x16xf32>
}

// -----

// CHECK-LABEL: func.func @negative_integer
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<8x16x8xi32>, tensor<8x8x16xi32>)
func.func @negative_integer(%q: tensor<2x4x16x8xi32>, %k: tensor<2x4x8x16xi32>, %f: tensor<8x16x16xi32>) -> tensor<8x16x16xi32> {
  %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xi32> into tensor<8x16x8xi32>
  %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x8x16xi32> into tensor<8x8x16xi32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x8xi32>, tensor<8x8x16xi32>) outs(%f : tensor<8x16x16xi32>) -> tensor<8x16x16xi32>
  return %m : tensor<8x16x16xi32>
}

// -----

// The rhs is already a [B*H, K, N] tensor: nothing to fold it from.
// CHECK-LABEL: func.func @negative_one_operand_collapsed
// CHECK-SAME: %[[RHS:[^:]*]]: tensor<8x8x16xf32>
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul ins(%{{.*}}, %[[RHS]] : tensor<8x16x8xf32>, tensor<8x8x16xf32>)
func.func @negative_one_operand_collapsed(%q: tensor<2x4x16x8xf32>, %b: tensor<8x8x16xf32>, %f: tensor<8x16x16xf32>) -> tensor<8x16x16xf32> {
  %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %m : tensor<8x16x16xf32>
}

// -----

// A batch_matmul with user-defined indexing maps (rhs transposed).
// CHECK-LABEL: func.func @negative_user_indexing_maps
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul indexing_maps =
func.func @negative_user_indexing_maps(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %f: tensor<8x16x16xf32>) -> tensor<8x16x16xf32> {
  %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %m = linalg.batch_matmul indexing_maps = [
         affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
         affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>,
         affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>]
       ins(%a, %b : tensor<8x16x8xf32>, tensor<8x16x8xf32>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %m : tensor<8x16x16xf32>
}

// -----

// Both collapse to 8, but from [2, 4] and [4, 2]: no common batch loops.
// CHECK-LABEL: func.func @negative_batch_shapes_differ
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul
func.func @negative_batch_shapes_differ(%q: tensor<2x4x16x8xf32>, %k: tensor<4x2x8x16xf32>, %f: tensor<8x16x16xf32>) -> tensor<8x16x16xf32> {
  %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<4x2x8x16xf32> into tensor<8x8x16xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %m : tensor<8x16x16xf32>
}

// -----

// bf16 inputs accumulated in f32 (autocast's attention): the same
// contraction, each operand extended in the body as batch_matmul extends it.
// CHECK-LABEL: func.func @batch_matmul_mixed_precision
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xbf16>, %[[K:.*]]: tensor<2x4x8x16xbf16>
// CHECK: %[[G:.*]] = linalg.generic
// CHECK-SAME: ins(%[[Q]], %[[K]] : tensor<2x4x16x8xbf16>, tensor<2x4x8x16xbf16>) outs(%{{.*}} : tensor<2x4x16x16xf32>)
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[ACC:.*]]: f32):
// CHECK-DAG: %[[EA:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-DAG: %[[EB:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK: %[[P:.*]] = arith.mulf %[[EA]], %[[EB]] : f32
// CHECK: %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK: linalg.yield %[[S]] : f32
// CHECK-NOT: linalg.batch_matmul
func.func @batch_matmul_mixed_precision(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x8x16xbf16>, %f: tensor<8x16x16xf32>) -> tensor<8x16x16xf32> {
  %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xbf16> into tensor<8x16x8xbf16>
  %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x8x16xbf16> into tensor<8x8x16xbf16>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x8xbf16>, tensor<8x8x16xbf16>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %m : tensor<8x16x16xf32>
}

// -----

// f32 inputs into an f16 result would round the operands: left alone.
// CHECK-LABEL: func.func @negative_narrowing
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%{{.*}} : tensor<8x16x16xf16>)
func.func @negative_narrowing(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>, %f: tensor<8x16x16xf16>) -> tensor<8x16x16xf16> {
  %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x8x16xf32> into tensor<8x8x16xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%f : tensor<8x16x16xf16>) -> tensor<8x16x16xf16>
  return %m : tensor<8x16x16xf16>
}

// -----

// The collapses merge M and K dimensions, not batch dimensions.
// CHECK-LABEL: func.func @negative_collapse_not_of_batch_dims
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul
func.func @negative_collapse_not_of_batch_dims(%q: tensor<8x4x4x8xf32>, %k: tensor<8x8x4x4xf32>, %f: tensor<8x16x16xf32>) -> tensor<8x16x16xf32> {
  %a = tensor.collapse_shape %q [[0], [1, 2], [3]] : tensor<8x4x4x8xf32> into tensor<8x16x8xf32>
  %b = tensor.collapse_shape %k [[0], [1], [2, 3]] : tensor<8x8x4x4xf32> into tensor<8x8x16xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %m : tensor<8x16x16xf32>
}

// -----

// The backward of attention transposes the saved, collapsed k before its
// batch matmul: the transpose is moved above the collapse (on [B, H, ...])
// so that the matmul is expanded too.
// CHECK-LABEL: func.func @transposed_collapse
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x4x16x8xf32>)
// CHECK: %[[KT:.*]] = linalg.transpose ins(%[[K]] : tensor<2x4x16x8xf32>) outs(%{{.*}} : tensor<2x4x8x16xf32>) permutation = [0, 1, 3, 2]
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %[[KT]] : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>)
// CHECK-NOT: linalg.batch_matmul
func.func @transposed_collapse(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>) -> tensor<8x16x16xf32> {
  %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %t0 = tensor.empty() : tensor<8x8x16xf32>
  %bt = linalg.transpose ins(%b : tensor<8x16x8xf32>) outs(%t0 : tensor<8x8x16xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<8x16x16xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %m = linalg.batch_matmul ins(%a, %bt : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  return %m : tensor<8x16x16xf32>
}

// -----

// A transpose that moves the batch dimension is left alone.
// CHECK-LABEL: func.func @transpose_moves_batch
// CHECK: tensor.collapse_shape
// CHECK: linalg.transpose {{.*}} permutation = [1, 0, 2]
func.func @transpose_moves_batch(%k: tensor<2x4x16x8xf32>) -> tensor<16x8x8xf32> {
  %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %t0 = tensor.empty() : tensor<16x8x8xf32>
  %bt = linalg.transpose ins(%b : tensor<8x16x8xf32>) outs(%t0 : tensor<16x8x8xf32>) permutation = [1, 0, 2]
  return %bt : tensor<16x8x8xf32>
}

// -----

// Autocast's q @ k^T: bf16 operands, f32 scores rounded to bf16 on the
// collapsed [B*H, S, S] tensor before the view back to [B, H, S, S]. The
// rounding moves onto the 4-D result, so the collapse meets the expand.
// CHECK-LABEL: func.func @mixed_precision_rounded_scores
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x4x16x8xbf16>, tensor<2x4x8x16xbf16>) outs(%{{.*}} : tensor<2x4x16x16xf32>)
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<2x4x16x16xf32>) outs(%{{.*}} : tensor<2x4x16x16xbf16>)
// CHECK: arith.truncf
// CHECK-NOT: linalg.generic {{.*}} tensor<8x16x16xf32>
func.func @mixed_precision_rounded_scores(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x8x16xbf16>, %f: tensor<8x16x16xf32>) -> tensor<2x4x16x16xbf16> {
  %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xbf16> into tensor<8x16x8xbf16>
  %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x8x16xbf16> into tensor<8x8x16xbf16>
  %m = linalg.batch_matmul ins(%a, %b : tensor<8x16x8xbf16>, tensor<8x8x16xbf16>) outs(%f : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %e = tensor.empty() : tensor<8x16x16xbf16>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%m : tensor<8x16x16xf32>) outs(%e : tensor<8x16x16xbf16>) {
  ^bb0(%i: f32, %o: bf16):
    %r = arith.truncf %i : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<8x16x16xbf16>
  %v = tensor.expand_shape %t [[0, 1], [2], [3]] output_shape [2, 4, 16, 16] : tensor<8x16x16xbf16> into tensor<2x4x16x16xbf16>
  return %v : tensor<2x4x16x16xbf16>
}

// -----

// A cast of a collapse that is not of batch dimensions stays where it is.
// CHECK-LABEL: func.func @negative_cast_of_other_collapse
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0], [1, 2]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<8x256xf32>)
func.func @negative_cast_of_other_collapse(%x: tensor<8x16x16xf32>) -> tensor<8x256xbf16> {
  %c = tensor.collapse_shape %x [[0], [1, 2]] : tensor<8x16x16xf32> into tensor<8x256xf32>
  %e = tensor.empty() : tensor<8x256xbf16>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<8x256xf32>) outs(%e : tensor<8x256xbf16>) {
  ^bb0(%i: f32, %o: bf16):
    %r = arith.truncf %i : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<8x256xbf16>
  return %t : tensor<8x256xbf16>
}
