// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-resolve-sharding-conflicts))' | FileCheck %s
// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-resolve-sharding-conflicts,sharding-propagation{traversal=forward-backward}))' | FileCheck %s --check-prefix=PROP

// The start of a LayerNorm's backward under sequence parallelism: the
// gradient of its output arrives whole (%dy, all-reduced) and is expanded to
// [batch, seq, d]; the first op reads it with the replicated weight, the
// next with the sequence-split normalised input. Propagation's forward
// traversal annotates the expanded value whole for the first and split for
// the second and gives it no sharding of its own: its backward traversal
// then asserts. The value is pinned to the split (the probe is undone: no
// other annotation is left), and propagation then runs both ops on each
// chip's slice of the sequence.
// CHECK-LABEL: func.func @layer_norm_gradient_sequence_split
// CHECK: %[[G:.*]] = tensor.expand_shape
// CHECK-NEXT: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [0]] : !shard.sharding
// CHECK-NEXT: %[[P:.*]] = shard.shard %[[G]] to %[[S]] : tensor<2x8x32xf32>
// CHECK-NOT: shard.shard
// CHECK: linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<2x8x32xf32>, tensor<32xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<2x8x32xf32>, tensor<2x8x32xf32>)
// PROP-LABEL: func.func @layer_norm_gradient_sequence_split
// PROP: %[[A:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x8x32xf32>, tensor<32xf32>)
// PROP: %[[SA:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [0]] : !shard.sharding
// PROP-NEXT: shard.shard %[[A]] to %[[SA]] : tensor<2x8x32xf32>
#bcast = affine_map<(d0, d1, d2) -> (d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
shard.grid @grid(shape = 2)
func.func @layer_norm_gradient_sequence_split(%dy: tensor<16x32xf32>, %w: tensor<32xf32>, %xhat: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %dys = shard.shard %dy to %r annotate_for_users : tensor<16x32xf32>
  %ws = shard.shard %w to %r annotate_for_users : tensor<32xf32>
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %xhat to %s annotate_for_users : tensor<2x8x32xf32>
  %g = tensor.expand_shape %dys [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %e0 = tensor.empty() : tensor<2x8x32xf32>
  %a = linalg.generic {indexing_maps = [#id3, #bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g, %ws : tensor<2x8x32xf32>, tensor<32xf32>) outs(%e0 : tensor<2x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<2x8x32xf32>
  %e1 = tensor.empty() : tensor<2x8x32xf32>
  %b = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g, %xs : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%e1 : tensor<2x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<2x8x32xf32>
  return %a, %b : tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// -----

// Users that agree (both split): nothing is pinned, nothing is left.
// CHECK-LABEL: func.func @negative_users_agree
// CHECK: tensor.expand_shape
// CHECK-NOT: shard.shard
// CHECK: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
shard.grid @grid(shape = 2)
func.func @negative_users_agree(%dy: tensor<16x32xf32>, %xhat: tensor<2x8x32xf32>, %h: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %xhat to %s annotate_for_users : tensor<2x8x32xf32>
  %hs = shard.shard %h to %s annotate_for_users : tensor<2x8x32xf32>
  %g = tensor.expand_shape %dy [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %e0 = tensor.empty() : tensor<2x8x32xf32>
  %a = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g, %hs : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%e0 : tensor<2x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<2x8x32xf32>
  %e1 = tensor.empty() : tensor<2x8x32xf32>
  %b = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g, %xs : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%e1 : tensor<2x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<2x8x32xf32>
  return %a, %b : tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// -----

// A pipeline stage's backward under sequence parallelism recomputes
// `x + attn_out` from its arguments: the residual split along the sequence
// over tp (axis 1) and a saved bf16 `attn_out` split over dp alone. The
// elementwise add's inputs ask different shardings and propagation would give
// it none; the whole one is annotated again, split as the residual, for the
// add alone (partitioning slices it).
// CHECK-LABEL: func.func @elementwise_inputs_aligned
// CHECK: %[[SX:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] : !shard.sharding
// CHECK: %[[X:.*]] = shard.shard %arg0 to %[[SX]] annotate_for_users : tensor<2x8x32xf32>
// CHECK: %[[SA:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK: %[[A:.*]] = shard.shard %arg1 to %[[SA]] annotate_for_users : tensor<2x8x32xbf16>
// CHECK: %[[S2:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] : !shard.sharding
// CHECK-NEXT: %[[A2:.*]] = shard.shard %[[A]] to %[[S2]] annotate_for_users : tensor<2x8x32xbf16>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[X]], %[[A2]] : tensor<2x8x32xf32>, tensor<2x8x32xbf16>)
// PROP-LABEL: func.func @elementwise_inputs_aligned
// PROP: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0], [1]] : !shard.sharding
// PROP: %[[Y:.*]] = linalg.generic
// PROP: shard.shard %[[Y]] to %[[S]] : tensor<2x8x32xf32>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
shard.grid @grid(shape = 2x2)
func.func @elementwise_inputs_aligned(%x: tensor<2x8x32xf32>, %a: tensor<2x8x32xbf16>) -> tensor<2x8x32xf32> {
  %sx = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %xs = shard.shard %x to %sx annotate_for_users : tensor<2x8x32xf32>
  %sa = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %as = shard.shard %a to %sa annotate_for_users : tensor<2x8x32xbf16>
  %e = tensor.empty() : tensor<2x8x32xf32>
  %y = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xs, %as : tensor<2x8x32xf32>, tensor<2x8x32xbf16>) outs(%e : tensor<2x8x32xf32>) {
  ^bb0(%u: f32, %v: bf16, %o: f32):
    %w = arith.extf %v : bf16 to f32
    %s = arith.addf %u, %w : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32xf32>
  %ys = shard.shard %y to %sx : tensor<2x8x32xf32>
  return %ys : tensor<2x8x32xf32>
}
