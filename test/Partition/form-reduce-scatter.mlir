// RUN: nova-opt %s --split-input-file --nova-form-reduce-scatter | FileCheck %s

// CHECK-DAG: #[[$ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[$BIAS3:.*]] = affine_map<(d0, d1, d2) -> (d2)>

// Sequence parallelism after shard-partition: an all-reduce, a bias add, an
// expand to [B, S, E], and each chip's slice of S. The partial sums are
// expanded and reduce-scattered along S; the bias add runs on the slice.
// CHECK-LABEL: func.func @reduce_bias_expand_slice
// CHECK-SAME: (%[[P:.*]]: tensor<32x64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xf32> into tensor<2x16x64xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[E]] on @grid grid_axes = [0] scatter_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x4x64xf32>
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[$ID3]], #[[$BIAS3]], #[[$ID3]]]
// CHECK-SAME: ins(%[[RS]], %[[B]] : tensor<2x4x64xf32>, tensor<64xf32>) outs(%[[INIT]] : tensor<2x4x64xf32>)
// CHECK: arith.addf
// CHECK: return %[[Y]]
// CHECK-NOT: shard.all_
shard.grid @grid(shape = 4)
func.func @reduce_bias_expand_slice(%p: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<2x4x64xf32> {
  %r = shard.all_reduce %p on @grid grid_axes = [0] : tensor<32x64xf32> -> tensor<32x64xf32>
  %e0 = tensor.empty() : tensor<32x64xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %b : tensor<32x64xf32>, tensor<64xf32>) outs(%e0 : tensor<32x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  %x = tensor.expand_shape %g [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xf32> into tensor<2x16x64xf32>
  %s = shard.all_slice %x on @grid grid_axes = [0] slice_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
  return %s : tensor<2x4x64xf32>
}

// -----

// The bare pair: all_reduce then all_slice on the same axes.
// CHECK-LABEL: func.func @reduce_then_slice
// CHECK: %[[RS:.*]] = shard.reduce_scatter %{{.*}} on @grid grid_axes = [0] reduction = max scatter_axis = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[RS]]
shard.grid @grid(shape = 4)
func.func @reduce_then_slice(%p: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %r = shard.all_reduce %p on @grid grid_axes = [0] reduction = max : tensor<16x8xf32> -> tensor<16x8xf32>
  %s = shard.all_slice %r on @grid grid_axes = [0] slice_axis = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// Left alone: the reduced value has another use (every chip needs it whole),
// and an operand of the elementwise op indexes the sliced dimension.
// CHECK-LABEL: func.func @negative_cases
// CHECK-NOT: shard.reduce_scatter
// CHECK: shard.all_reduce
// CHECK: shard.all_slice
// CHECK: shard.all_reduce
// CHECK: shard.all_slice
// CHECK-NOT: shard.reduce_scatter
shard.grid @grid(shape = 4)
func.func @negative_cases(%p: tensor<16x8xf32>, %q: tensor<16x8xf32>, %c: tensor<16xf32>) -> (tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x8xf32>) {
  %r = shard.all_reduce %p on @grid grid_axes = [0] : tensor<16x8xf32> -> tensor<16x8xf32>
  %s = shard.all_slice %r on @grid grid_axes = [0] slice_axis = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  %r2 = shard.all_reduce %q on @grid grid_axes = [0] : tensor<16x8xf32> -> tensor<16x8xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r2, %c : tensor<16x8xf32>, tensor<16xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %a = arith.addf %x, %y : f32
    linalg.yield %a : f32
  } -> tensor<16x8xf32>
  %s2 = shard.all_slice %g on @grid grid_axes = [0] slice_axis = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %s, %r, %s2 : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x8xf32>
}

// -----

// Under bf16 autocast the f32 partial is rounded after the reduce: the
// reduce-scatter stays f32 and the rounding runs on the chip's slice.
// CHECK-LABEL: func.func @reduce_round_expand_slice
// CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} : tensor<32x64xf32> into tensor<2x16x64xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[E]] on @grid grid_axes = [0] scatter_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[RS]] : tensor<2x4x64xf32>) outs(%{{.*}} : tensor<2x4x64xbf16>)
// CHECK: arith.truncf
// CHECK: return %[[Y]]
// CHECK-NOT: shard.all_
shard.grid @grid(shape = 4)
func.func @reduce_round_expand_slice(%p: tensor<32x64xf32>) -> tensor<2x4x64xbf16> {
  %r = shard.all_reduce %p on @grid grid_axes = [0] : tensor<32x64xf32> -> tensor<32x64xf32>
  %e0 = tensor.empty() : tensor<32x64xbf16>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<32x64xf32>) outs(%e0 : tensor<32x64xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %t = arith.truncf %x : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<32x64xbf16>
  %x = tensor.expand_shape %g [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xbf16> into tensor<2x16x64xbf16>
  %s = shard.all_slice %x on @grid grid_axes = [0] slice_axis = 1 : tensor<2x16x64xbf16> -> tensor<2x4x64xbf16>
  return %s : tensor<2x4x64xbf16>
}
