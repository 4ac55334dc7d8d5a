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

// A transpose of every adjacent pair cannot be merged: the outermost loop
// becomes an scf.for of step 1 and the body, its unit loop dropped, is a
// rank-4 transpose.
// CHECK-LABEL: func.func @full_transpose_tiles_the_outer_loop
// CHECK: scf.for %[[I:.*]] = %c0 to %c6 step %c1
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0, 0, %[[I]]] [2, 3, 4, 5, 1]
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2], [3, 4]] : tensor<2x3x4x5x1xf32> into tensor<2x3x4x5xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME: outs(%{{.*}} : tensor<5x4x3x2xf32>)
// CHECK: tensor.insert_slice
func.func @full_transpose_tiles_the_outer_loop(%x: tensor<2x3x4x5x6xf32>) -> tensor<6x5x4x3x2xf32> {
  %e = tensor.empty() : tensor<6x5x4x3x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d4, d3, d2, d1, d0)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x3x4x5x6xf32>) outs(%e : tensor<6x5x4x3x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<6x5x4x3x2xf32>
  return %r : tensor<6x5x4x3x2xf32>
}

// -----

// Rank 6, an operand broadcast along every other dimension (indexed by 0):
// no merge applies; two outer loops are tiled and the body has rank 4.
// CHECK-LABEL: func.func @interleaved_broadcast_rank6
// CHECK: scf.for
// CHECK: scf.for
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK-SAME: outs(%{{.*}} : tensor<2x4x3x5xf32>)
// CHECK-NOT: linalg.generic
func.func @interleaved_broadcast_rank6(%x: tensor<2x3x2x4x3x5xf32>, %y: tensor<1x3x1x4x1x5xf32>) -> tensor<2x3x2x4x3x5xf32> {
  %e = tensor.empty() : tensor<2x3x2x4x3x5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (0, d1, 0, d3, 0, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %y : tensor<2x3x2x4x3x5xf32>, tensor<1x3x1x4x1x5xf32>) outs(%e : tensor<2x3x2x4x3x5xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x3x2x4x3x5xf32>
  return %r : tensor<2x3x2x4x3x5xf32>
}

// -----

// A mean over dims 1 and 3 of a rank-6 tensor: the inner parallel pair
// merges (5 loops), then the outer loop is tiled; the body reduces into its
// output slice.
// CHECK-LABEL: func.func @reduction_between_parallel_loops
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2], [3], [4, 5]] : tensor<2x3x2x4x3x5xf32> into tensor<2x3x2x4x15xf32>
// CHECK: scf.for %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<2x2x15xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction", "parallel"]
// CHECK-SAME: outs(%{{.*}} : tensor<2x15xf32>)
func.func @reduction_between_parallel_loops(%x: tensor<2x3x2x4x3x5xf32>) -> tensor<2x2x3x5xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2x3x5xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<2x2x3x5xf32>) -> tensor<2x2x3x5xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d2, d4, d5)>], iterator_types = ["parallel", "reduction", "parallel", "reduction", "parallel", "parallel"]}
      ins(%x : tensor<2x3x2x4x3x5xf32>) outs(%f : tensor<2x2x3x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<2x2x3x5xf32>
  return %r : tensor<2x2x3x5xf32>
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

// -----

// A gather from a rank-5 tensor (trilinear interpolation's corner reads)
// reads a collapse of the leading dimensions at index n * C + c.
// CHECK-LABEL: func.func @gather_rank5_source
// CHECK: %[[C:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2], [3], [4]] : tensor<2x3x4x5x6xf32> into tensor<6x4x5x6xf32>
// CHECK: linalg.generic
// CHECK: %[[N:.*]] = linalg.index 0
// CHECK: %[[CH:.*]] = linalg.index 1
// CHECK: %[[S:.*]] = arith.muli %[[N]], %c3
// CHECK: %[[L:.*]] = arith.addi %[[S]], %[[CH]]
// CHECK: tensor.extract %[[C]][%[[L]], %{{.*}}, %{{.*}}, %{{.*}}] : tensor<6x4x5x6xf32>
func.func @gather_rank5_source(%src: tensor<2x3x4x5x6xf32>, %idx: tensor<2x3xi64>) -> tensor<2x3xf32> {
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%idx : tensor<2x3xi64>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%i: i64, %out: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %d = arith.index_cast %i : i64 to index
    %v = tensor.extract %src[%n, %c, %d, %c1, %d] : tensor<2x3x4x5x6xf32>
    linalg.yield %v : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
