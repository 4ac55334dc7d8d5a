// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-collapse-rank))' -split-input-file | FileCheck %s

// Llama's grouped-query repeat_kv: out[b, h, r, s, d] = in[b, h, s, d].
// The innermost pair (s, d) is adjacent in both operands: one loop of 256.
// CHECK-LABEL: func.func @repeat_kv_rank5
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<2x2x16x16xf32> into tensor<2x2x256xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME: outs(%{{.*}} : tensor<2x2x2x256xf32>)
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2], [3, 4]] output_shape [2, 2, 2, 16, 16] : tensor<2x2x2x256xf32> into tensor<2x2x2x16x16xf32>
func.func @repeat_kv_rank5(%x: tensor<2x2x16x16xf32>) -> tensor<2x2x2x16x16xf32> {
  %e = tensor.empty() : tensor<2x2x2x16x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x2x16x16xf32>) outs(%e : tensor<2x2x2x16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<2x2x2x16x16xf32>
  return %r : tensor<2x2x2x16x16xf32>
}

// -----

// Rank 4 already fits a tile: nothing to do.
// CHECK-LABEL: func.func @negative_rank4
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic
func.func @negative_rank4(%x: tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xf32> {
  %e = tensor.empty() : tensor<2x2x16x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x2x16x16xf32>) outs(%e : tensor<2x2x16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<2x2x16x16xf32>
  return %r : tensor<2x2x16x16xf32>
}

// -----

// A transpose of every adjacent pair cannot be collapsed: left for the
// lowering to report.
// CHECK-LABEL: func.func @negative_not_collapsible
// CHECK-NOT: tensor.collapse_shape
func.func @negative_not_collapsible(%x: tensor<2x3x4x5x6xf32>) -> tensor<6x5x4x3x2xf32> {
  %e = tensor.empty() : tensor<6x5x4x3x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d4, d3, d2, d1, d0)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x3x4x5x6xf32>) outs(%e : tensor<6x5x4x3x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<6x5x4x3x2xf32>
  return %r : tensor<6x5x4x3x2xf32>
}

// -----

// The backward of repeat_kv: a keep-dim sum over n_rep of a rank-5 tensor
// with unit leading loops. Dropping the unit loops brings it to rank 3.
// CHECK-LABEL: func.func @rank5_reduction_with_unit_loops
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3], [4]] : tensor<1x1x2x8x16xf32> into tensor<2x8x16xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]
// CHECK-SAME: outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: tensor.expand_shape %{{.*}} output_shape [1, 1, 1, 8, 16]
func.func @rank5_reduction_with_unit_loops(%x: tensor<1x1x2x8x16xf32>, %acc: tensor<1x1x1x8x16xf32>) -> tensor<1x1x1x8x16xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, 0, d3, d4)>], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]}
      ins(%x : tensor<1x1x2x8x16xf32>) outs(%acc : tensor<1x1x1x8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x1x1x8x16xf32>
  return %r : tensor<1x1x1x8x16xf32>
}
