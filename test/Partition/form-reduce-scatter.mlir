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

// Left alone: the reduced value has another use (every chip needs it whole).
// An elementwise operand that indexes the sliced dimension as a plain
// dimension is sliced with the result: the second pair is a reduce-scatter.
// CHECK-LABEL: func.func @negative_cases
// CHECK: %[[R:.*]] = shard.all_reduce
// CHECK: shard.all_slice %[[R]]
// CHECK: %[[RS:.*]] = shard.reduce_scatter %{{.*}} on @grid grid_axes = [0] scatter_axis = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
// CHECK: %[[C:.*]] = shard.all_slice %{{.*}} on @grid grid_axes = [0] slice_axis = 0 : tensor<16xf32> -> tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[RS]], %[[C]] : tensor<4x8xf32>, tensor<4xf32>)
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

// -----

// The row-parallel output under autocast: a bias add and the bf16 rounding
// after the all-reduce, then the expand and the slice. The expand moves up
// to the partial sums, the slice to the reduce: both ops run on the slice.
// CHECK-LABEL: func.func @reduce_bias_round_expand_slice
// CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} : tensor<32x64xf32> into tensor<2x16x64xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[E]] on @grid grid_axes = [0] scatter_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[RS]], %{{.*}} : tensor<2x4x64xf32>, tensor<64xf32>) outs(%{{.*}} : tensor<2x4x64xf32>)
// CHECK: arith.addf
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<2x4x64xf32>) outs(%{{.*}} : tensor<2x4x64xbf16>)
// CHECK: arith.truncf
// CHECK: return %[[Y]]
// CHECK-NOT: shard.all_
shard.grid @grid(shape = 4)
func.func @reduce_bias_round_expand_slice(%p: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<2x4x64xbf16> {
  %r = shard.all_reduce %p on @grid grid_axes = [0] : tensor<32x64xf32> -> tensor<32x64xf32>
  %e0 = tensor.empty() : tensor<32x64xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %b : tensor<32x64xf32>, tensor<64xf32>) outs(%e0 : tensor<32x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  %e1 = tensor.empty() : tensor<32x64xbf16>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<32x64xf32>) outs(%e1 : tensor<32x64xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %s = arith.truncf %x : f32 to bf16
    linalg.yield %s : bf16
  } -> tensor<32x64xbf16>
  %x = tensor.expand_shape %t [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xbf16> into tensor<2x16x64xbf16>
  %s = shard.all_slice %x on @grid grid_axes = [0] slice_axis = 1 : tensor<2x16x64xbf16> -> tensor<2x4x64xbf16>
  return %s : tensor<2x4x64xbf16>
}

// -----

// Sequence parallelism's LayerNorm backward: the input gradient of the
// column-parallel layers is all-reduced, rounded, expanded and widened; some
// of the LayerNorm backward (the product with the weight, its row sums) then
// ran on the whole sequence before the slices, and the replicated bias's
// gradient summed the whole sequence. Now every op runs on the chip's slice,
// the all-reduce is a reduce-scatter, and the bias gradient is the chip's
// partial sum all-reduced (Megatron's form).
// CHECK-LABEL: func.func @layernorm_backward_slices
// CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} : tensor<32x64xf32> into tensor<2x16x64xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[E]] on @grid grid_axes = [0] scatter_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
// CHECK-NOT: tensor<2x16x64x
// CHECK: %[[BS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<2x4x64xf32>) outs(%{{.*}} : tensor<64xf32>)
// CHECK: %[[B:.*]] = shard.all_reduce %[[BS]] on @grid grid_axes = [0] : tensor<64xf32> -> tensor<64xf32>
// CHECK-NOT: tensor<2x16x64x
// CHECK: return %{{.*}}, %{{.*}}, %[[B]] : tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<64xf32>
shard.grid @grid(shape = 4)
func.func @layernorm_backward_slices(%p: tensor<32x64xf32>, %w: tensor<64xf32>) -> (tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<64xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %r = shard.all_reduce %p on @grid grid_axes = [0] : tensor<32x64xf32> -> tensor<32x64xf32>
  %e1 = tensor.empty() : tensor<32x64xbf16>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<32x64xf32>) outs(%e1 : tensor<32x64xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %s = arith.truncf %x : f32 to bf16
    linalg.yield %s : bf16
  } -> tensor<32x64xbf16>
  %x = tensor.expand_shape %t [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xbf16> into tensor<2x16x64xbf16>
  %e3 = tensor.empty() : tensor<2x16x64xf32>
  %dy = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x16x64xbf16>) outs(%e3 : tensor<2x16x64xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %s = arith.extf %a : bf16 to f32
    linalg.yield %s : f32
  } -> tensor<2x16x64xf32>
  %dyw = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%dy, %w : tensor<2x16x64xf32>, tensor<64xf32>) outs(%e3 : tensor<2x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x16x64xf32>
  %e2 = tensor.empty() : tensor<2x16xf32>
  %z2 = linalg.fill ins(%cst : f32) outs(%e2 : tensor<2x16xf32>) -> tensor<2x16xf32>
  %rows = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%dyw : tensor<2x16x64xf32>) outs(%z2 : tensor<2x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<2x16xf32>
  %centred = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%dyw, %rows : tensor<2x16x64xf32>, tensor<2x16xf32>) outs(%e3 : tensor<2x16x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x16x64xf32>
  %s1 = shard.all_slice %centred on @grid grid_axes = [0] slice_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
  %s2 = shard.all_slice %dyw on @grid grid_axes = [0] slice_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
  %e0 = tensor.empty() : tensor<64xf32>
  %z1 = linalg.fill ins(%cst : f32) outs(%e0 : tensor<64xf32>) -> tensor<64xf32>
  %db = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>], iterator_types = ["reduction", "reduction", "parallel"]} ins(%dy : tensor<2x16x64xf32>) outs(%z1 : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %s1, %s2, %db : tensor<2x4x64xf32>, tensor<2x4x64xf32>, tensor<64xf32>
}

// -----

// Left alone: the widened gradient has a user that is neither a slice nor a
// sum along the sequence (every chip needs it whole).
// CHECK-LABEL: func.func @whole_use_keeps_all_reduce
// CHECK: shard.all_reduce %{{.*}} : tensor<2x16x64xf32> -> tensor<2x16x64xf32>
// CHECK-NOT: shard.reduce_scatter
shard.grid @grid(shape = 4)
func.func @whole_use_keeps_all_reduce(%p: tensor<32x64xf32>) -> (tensor<2x4x64xf32>, tensor<2x16x64xf32>) {
  %r = shard.all_reduce %p on @grid grid_axes = [0] : tensor<32x64xf32> -> tensor<32x64xf32>
  %x = tensor.expand_shape %r [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xf32> into tensor<2x16x64xf32>
  %e3 = tensor.empty() : tensor<2x16x64xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x16x64xf32>) outs(%e3 : tensor<2x16x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.negf %a : f32
    linalg.yield %s : f32
  } -> tensor<2x16x64xf32>
  %s1 = shard.all_slice %n on @grid grid_axes = [0] slice_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
  return %s1, %n : tensor<2x4x64xf32>, tensor<2x16x64xf32>
}

// -----

// A slice of a slice over another grid axis (dp's rows, then tp's) after an
// elementwise op: hoisting the first slice replaces the value the second
// slices, which the pass then reads afresh (it used to crash here). Both
// slices move before the bias add, which runs on the chip's eighth.
// CHECK-LABEL: func.func @slice_of_a_slice
// CHECK: %[[R:.*]] = shard.all_reduce %{{.*}} on @grid grid_axes = [1] : tensor<32x32xf32> -> tensor<32x32xf32>
// CHECK: %[[S0:.*]] = shard.all_slice %[[R]] on @grid grid_axes = [0] slice_axis = 0 : tensor<32x32xf32> -> tensor<16x32xf32>
// CHECK: %[[S1:.*]] = shard.all_slice %[[S0]] on @grid grid_axes = [1] slice_axis = 0 : tensor<16x32xf32> -> tensor<8x32xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[S1]], %{{.*}} : tensor<8x32xf32>, tensor<32xf32>)
shard.grid @grid(shape = 2x2)
func.func @slice_of_a_slice(%p: tensor<32x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %r = shard.all_reduce %p on @grid grid_axes = [1] : tensor<32x32xf32> -> tensor<32x32xf32>
  %e0 = tensor.empty() : tensor<32x32xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %b : tensor<32x32xf32>, tensor<32xf32>) outs(%e0 : tensor<32x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<32x32xf32>
  %s0 = shard.all_slice %g on @grid grid_axes = [0] slice_axis = 0 : tensor<32x32xf32> -> tensor<16x32xf32>
  %s1 = shard.all_slice %s0 on @grid grid_axes = [1] slice_axis = 0 : tensor<16x32xf32> -> tensor<8x32xf32>
  return %s1 : tensor<8x32xf32>
}
