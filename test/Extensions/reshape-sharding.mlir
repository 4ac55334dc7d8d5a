// RUN: nova-opt %s --split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(sharding-propagation))" | FileCheck %s

// Sharding propagation through the ShardingInterface models of
// tensor.collapse_shape and tensor.expand_shape (lib/Extensions/ReshapeSharding.cpp).

// A split of the leading fine dimension with one element per chip is a
// contiguous block of the collapsed dimension: the split carries over.
// CHECK-LABEL: func.func @collapse_split_leading_dim
// CHECK: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK: %[[X:.*]] = shard.shard %{{.*}} to %[[S]] annotate_for_users : tensor<2x16x64xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
// CHECK: %[[RS:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK: %[[R:.*]] = shard.shard %[[C]] to %[[RS]] : tensor<32x64xf32>
// CHECK: return %[[R]]
shard.grid @grid(shape = 2)
func.func @collapse_split_leading_dim(%x: tensor<2x16x64xf32>) -> tensor<32x64xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x16x64xf32>
  %c = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
  return %c : tensor<32x64xf32>
}

// -----

// A split of a coarse dimension that is its own group moves to the fine
// dimension it becomes: dim 1 of the source is dim 2 of the result.
// CHECK-LABEL: func.func @expand_split_ungrouped_dim
// CHECK: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [0]] : !shard.sharding
// CHECK: %[[X:.*]] = shard.shard %{{.*}} to %[[S]] annotate_for_users : tensor<32x192xf32>
// CHECK: %[[E:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0, 1], [2]] output_shape [2, 16, 192] : tensor<32x192xf32> into tensor<2x16x192xf32>
// CHECK: %[[RS:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [], [0]] : !shard.sharding
// CHECK: %[[R:.*]] = shard.shard %[[E]] to %[[RS]] : tensor<2x16x192xf32>
// CHECK: return %[[R]]
shard.grid @grid(shape = 2)
func.func @expand_split_ungrouped_dim(%x: tensor<32x192xf32>) -> tensor<2x16x192xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<32x192xf32>
  %e = tensor.expand_shape %xs [[0, 1], [2]] output_shape [2, 16, 192] : tensor<32x192xf32> into tensor<2x16x192xf32>
  return %e : tensor<2x16x192xf32>
}

// -----

// Backward: the expand's result is split on its leading fine dimension (one
// element per chip), so the source is split on the collapsed dimension.
// CHECK-LABEL: func.func @expand_result_sharding_to_source
// CHECK-SAME: (%[[ARG:.*]]: tensor<32x192xf32>)
// CHECK: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK: %[[X:.*]] = shard.shard %[[ARG]] to %[[S]] annotate_for_users : tensor<32x192xf32>
// CHECK: tensor.expand_shape %[[X]] {{\[\[}}0, 1], [2]]
shard.grid @grid(shape = 2)
func.func @expand_result_sharding_to_source(%x: tensor<32x192xf32>) -> tensor<2x16x192xf32> {
  %e = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, 16, 192] : tensor<32x192xf32> into tensor<2x16x192xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %es = shard.shard %e to %s : tensor<2x16x192xf32>
  return %es : tensor<2x16x192xf32>
}

// -----

// Heads split, batch not: chip i holds heads 2i..2i+1 of every batch row,
// which is no block of B*H. The reshape runs replicated: the source is
// resharded to [[]] before it and the result is replicated.
// CHECK-LABEL: func.func @negative_collapse_noncontiguous_split
// CHECK: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}], [0]] : !shard.sharding
// CHECK: %[[X:.*]] = shard.shard %{{.*}} to %[[S]] annotate_for_users : tensor<2x4x16x16xf32>
// CHECK: %[[REP:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] : !shard.sharding
// CHECK: %[[X1:.*]] = shard.shard %[[X]] to %[[REP]] : tensor<2x4x16x16xf32>
// CHECK: %[[X2:.*]] = shard.shard %[[X1]] to %[[REP]] annotate_for_users : tensor<2x4x16x16xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X2]] {{\[\[}}0, 1], [2], [3]]
// CHECK: %[[RS:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] : !shard.sharding
// CHECK: shard.shard %[[C]] to %[[RS]] : tensor<8x16x16xf32>
shard.grid @grid(shape = 2)
func.func @negative_collapse_noncontiguous_split(%x: tensor<2x4x16x16xf32>) -> tensor<8x16x16xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x4x16x16xf32>
  %c = tensor.collapse_shape %xs [[0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
  return %c : tensor<8x16x16xf32>
}

// -----

// Only the non-contiguous group is dropped: the split of fine dim 2 (its own
// group) survives as a split of coarse dim 1.
// CHECK-LABEL: func.func @collapse_noncontiguous_group_keeps_other_dims
// CHECK: %[[S:.*]] = shard.sharding @g split_axes = {{\[\[}}], [0], [1]] : !shard.sharding
// CHECK: %[[X:.*]] = shard.shard %{{.*}} to %[[S]] annotate_for_users : tensor<2x4x16x16xf32>
// CHECK: %[[FS:.*]] = shard.sharding @g split_axes = {{\[\[}}], [], [1]] : !shard.sharding
// CHECK: %[[X1:.*]] = shard.shard %[[X]] to %[[FS]] : tensor<2x4x16x16xf32>
// CHECK: %[[X2:.*]] = shard.shard %[[X1]] to %[[FS]] annotate_for_users : tensor<2x4x16x16xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X2]] {{\[\[}}0, 1], [2], [3]]
// CHECK: %[[RS:.*]] = shard.sharding @g split_axes = {{\[\[}}], [1]] : !shard.sharding
// CHECK: shard.shard %[[C]] to %[[RS]] : tensor<8x16x16xf32>
shard.grid @g(shape = 2x2)
func.func @collapse_noncontiguous_group_keeps_other_dims(%x: tensor<2x4x16x16xf32>) -> tensor<8x16x16xf32> {
  %s = shard.sharding @g split_axes = [[], [0], [1]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x4x16x16xf32>
  %c = tensor.collapse_shape %xs [[0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
  return %c : tensor<8x16x16xf32>
}

// -----

// [B, H] split [[dp], [tp]] with B == dp collapses to B*H split over both
// axes, major to minor.
// CHECK-LABEL: func.func @collapse_2d_grid_concatenates_axes
// CHECK: %[[S:.*]] = shard.sharding @g split_axes = {{\[\[}}0], [1]] : !shard.sharding
// CHECK: %[[X:.*]] = shard.shard %{{.*}} to %[[S]] annotate_for_users : tensor<2x4x16xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
// CHECK: %[[RS:.*]] = shard.sharding @g split_axes = {{\[\[}}0, 1]] : !shard.sharding
// CHECK: shard.shard %[[C]] to %[[RS]] : tensor<8x16xf32>
shard.grid @g(shape = 2x4)
func.func @collapse_2d_grid_concatenates_axes(%x: tensor<2x4x16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x4x16xf32>
  %c = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// The inverse: B*H split [[0, 1]] expands to B split [[0]], H split [[1]].
// CHECK-LABEL: func.func @expand_2d_grid_splits_axes
// CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
// CHECK: %[[RS:.*]] = shard.sharding @g split_axes = {{\[\[}}0], [1]] : !shard.sharding
// CHECK: shard.shard %[[E]] to %[[RS]] : tensor<2x4x16xf32>
shard.grid @g(shape = 2x4)
func.func @expand_2d_grid_splits_axes(%x: tensor<8x16xf32>) -> tensor<2x4x16xf32> {
  %s = shard.sharding @g split_axes = [[0, 1]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<8x16xf32>
  %e = tensor.expand_shape %xs [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  return %e : tensor<2x4x16xf32>
}

// -----

// The interface method fails; propagation skips the op (its pass still
// succeeds) and leaves the reshape without sharding annotations.
// CHECK-LABEL: func.func @negative_dynamic_shape
// CHECK: %[[C:.*]] = tensor.collapse_shape
// CHECK-NEXT: return %[[C]]
shard.grid @grid(shape = 2)
func.func @negative_dynamic_shape(%x: tensor<?x16x64xf32>) -> tensor<?x64xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<?x16x64xf32>
  // expected-error @+1 {{sharding a reshape needs static shapes}}
  %c = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<?x16x64xf32> into tensor<?x64xf32>
  return %c : tensor<?x64xf32>
}

// -----

// The rows of a 2-D matmul (a linear layer's tokens) keep only the leading
// split of their group: [B, S] split [[dp], [tp]] with B == dp collapses to
// tokens split over dp, the sequence gathered (Megatron's sequence
// parallelism), where merging them would leave the tp-split weight to be
// gathered instead.
// CHECK-LABEL: func.func @collapse_matmul_rows_keeps_the_leading_split
// CHECK: %[[WS:.*]] = shard.sharding @g split_axes = {{\[\[}}], [1]] : !shard.sharding
// CHECK: %[[W:.*]] = shard.shard %arg1 to %[[WS]] annotate_for_users : tensor<16x32xf32>
// CHECK: %[[S:.*]] = shard.sharding @g split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK: shard.shard %{{.*}} to %[[S]] annotate_for_users : tensor<2x8x16xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %[[W]] : tensor<16x16xf32>, tensor<16x32xf32>)
shard.grid @g(shape = 2x2)
func.func @collapse_matmul_rows_keeps_the_leading_split(%x: tensor<2x8x16xf32>, %w: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %s = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x8x16xf32>
  %ws_s = shard.sharding @g split_axes = [[], [1]] : !shard.sharding
  %ws = shard.shard %w to %ws_s annotate_for_users : tensor<16x32xf32>
  %c = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
  %e = tensor.empty() : tensor<16x32xf32>
  %cst = arith.constant 0.0 : f32
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.matmul ins(%c, %ws : tensor<16x16xf32>, tensor<16x32xf32>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %ys_s = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %ys = shard.shard %y to %ys_s : tensor<16x32xf32>
  return %ys : tensor<16x32xf32>
}

// -----

// Under autocast a cast sits between the collapse and the matmul: the rows
// still keep only the batch split.
// CHECK-LABEL: func.func @collapse_cast_matmul_rows_keeps_the_leading_split
// CHECK: %[[S:.*]] = shard.sharding @g split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK: shard.shard %{{.*}} to %[[S]] annotate_for_users : tensor<2x8x16xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
shard.grid @g(shape = 2x2)
func.func @collapse_cast_matmul_rows_keeps_the_leading_split(%x: tensor<2x8x16xf32>, %w: tensor<16x32xbf16>) -> tensor<16x32xf32> {
  %s = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x8x16xf32>
  %ws_s = shard.sharding @g split_axes = [[], [1]] : !shard.sharding
  %ws = shard.shard %w to %ws_s annotate_for_users : tensor<16x32xbf16>
  %c = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
  %eb = tensor.empty() : tensor<16x16xbf16>
  %cb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<16x16xf32>) outs(%eb : tensor<16x16xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<16x16xbf16>
  %e = tensor.empty() : tensor<16x32xf32>
  %cst = arith.constant 0.0 : f32
  %z = linalg.fill ins(%cst : f32) outs(%e : tensor<16x32xf32>) -> tensor<16x32xf32>
  %y = linalg.matmul ins(%cb, %ws : tensor<16x16xbf16>, tensor<16x32xbf16>) outs(%z : tensor<16x32xf32>) -> tensor<16x32xf32>
  %ys_s = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %ys = shard.shard %y to %ys_s : tensor<16x32xf32>
  return %ys : tensor<16x32xf32>
}
