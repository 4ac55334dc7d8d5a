// RUN: nova-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" | FileCheck %s

// shard-partition of tensor.collapse_shape / tensor.expand_shape
// (lib/Extensions/ReshapeSharding.cpp): each chip reshapes its own block.

// [2, 16, 64] split [[0]] on 2 chips: each holds 1x16x64 and collapses it to
// its 16 rows of the [32, 64] result.
// CHECK-LABEL: func.func @collapse_local_types
// CHECK-SAME: (%[[X:.*]]: tensor<1x16x64xf32>) -> tensor<16x64xf32>
// CHECK-NOT: shard.
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<1x16x64xf32> into tensor<16x64xf32>
// CHECK-NEXT: return %[[C]] : tensor<16x64xf32>
shard.grid @grid(shape = 2)
func.func @collapse_local_types(%x: tensor<2x16x64xf32>) -> tensor<32x64xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x16x64xf32>
  %c = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
  return %c : tensor<32x64xf32>
}

// -----

// Columns split: each chip expands its [32, 96] half.
// CHECK-LABEL: func.func @expand_local_types
// CHECK-SAME: (%[[X:.*]]: tensor<32x96xf32>) -> tensor<2x16x96xf32>
// CHECK-NOT: shard.
// CHECK: %[[E:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0, 1], [2]] output_shape [2, 16, 96] : tensor<32x96xf32> into tensor<2x16x96xf32>
// CHECK-NEXT: return %[[E]] : tensor<2x16x96xf32>
shard.grid @grid(shape = 2)
func.func @expand_local_types(%x: tensor<32x192xf32>) -> tensor<2x16x192xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<32x192xf32>
  %e = tensor.expand_shape %xs [[0, 1], [2]] output_shape [2, 16, 192] : tensor<32x192xf32> into tensor<2x16x192xf32>
  return %e : tensor<2x16x192xf32>
}

// -----

// A 2x4 grid: every chip holds one (b, h) pair and one row of B*H.
// CHECK-LABEL: func.func @collapse_2d_grid_local_types
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x16xf32>) -> tensor<1x16xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<1x1x16xf32> into tensor<1x16xf32>
// CHECK-NEXT: return %[[C]] : tensor<1x16xf32>
shard.grid @g(shape = 2x4)
func.func @collapse_2d_grid_local_types(%x: tensor<2x4x16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x4x16xf32>
  %c = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// A non-contiguous split (heads only) is gathered first; the collapse then
// runs on the whole tensor.
// CHECK-LABEL: func.func @collapse_noncontiguous_gathers_first
// CHECK-SAME: (%[[X:.*]]: tensor<2x2x16x16xf32>) -> tensor<8x16x16xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[X]] on @grid grid_axes = [0] gather_axis = 1 : tensor<2x2x16x16xf32> -> tensor<2x4x16x16xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
// CHECK-NEXT: return %[[C]] : tensor<8x16x16xf32>
shard.grid @grid(shape = 2)
func.func @collapse_noncontiguous_gathers_first(%x: tensor<2x4x16x16xf32>) -> tensor<8x16x16xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x4x16x16xf32>
  %c = tensor.collapse_shape %xs [[0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
  return %c : tensor<8x16x16xf32>
}

// -----

// A split of the collapsed side that does not fall on the expanded
// dimensions' boundaries (32 rows over 4 chips, expanded to [2, 16]): the
// expand runs replicated, after an all-gather of the split operand.
shard.grid @grid4(shape = 4)
// CHECK-LABEL: func.func @expand_split_off_boundaries
// CHECK-SAME: (%[[X:.*]]: tensor<8x192xf32>) -> tensor<2x16x192xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[X]] on @grid4 grid_axes = [0] gather_axis = 0
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 16, 192] : tensor<32x192xf32> into tensor<2x16x192xf32>
func.func @expand_split_off_boundaries(%x: tensor<32x192xf32>) -> tensor<2x16x192xf32> {
  %s = shard.sharding @grid4 split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<32x192xf32>
  %e = tensor.expand_shape %a [[0, 1], [2]] output_shape [2, 16, 192] : tensor<32x192xf32> into tensor<2x16x192xf32>
  return %e : tensor<2x16x192xf32>
}
