// RUN: nova-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" | FileCheck %s

// tensor.extract_slice (lib/Extensions/SliceSharding.cpp): a fused QKV
// projection split into q along the feature dimension keeps the batch split;
// each chip slices its own rows.
// CHECK-LABEL: func.func @qkv_split_keeps_the_batch_split
// CHECK-SAME: (%[[X:.*]]: tensor<4x16x192xf32>) -> tensor<4x16x64xf32>
// CHECK: tensor.extract_slice %[[X]][0, 0, 64] [4, 16, 64] [1, 1, 1] : tensor<4x16x192xf32> to tensor<4x16x64xf32>
// CHECK-NOT: shard.all
shard.grid @grid(shape = 2)
func.func @qkv_split_keeps_the_batch_split(%x: tensor<8x16x192xf32>) -> tensor<8x16x64xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<8x16x192xf32>
  %k = tensor.extract_slice %a[0, 0, 64] [8, 16, 64] [1, 1, 1] : tensor<8x16x192xf32> to tensor<8x16x64xf32>
  %r = shard.shard %k to %s : tensor<8x16x64xf32>
  return %r : tensor<8x16x64xf32>
}

// -----

// A rank-reducing slice (the causal-mask buffer cut to the sequence, after
// unit dimensions were folded) keeps the split of the dimensions it keeps.
// CHECK-LABEL: func.func @rank_reducing_slice
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0] [2, 1, 16] [1, 1, 1] : tensor<2x1x64xf32> to tensor<2x16xf32>
// CHECK-NOT: shard.all
shard.grid @grid(shape = 2)
func.func @rank_reducing_slice(%x: tensor<4x1x64xf32>) -> tensor<4x16xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<4x1x64xf32>
  %k = tensor.extract_slice %a[0, 0, 0] [4, 1, 16] [1, 1, 1] : tensor<4x1x64xf32> to tensor<4x16xf32>
  %r = shard.shard %k to %s : tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// A split of the sliced dimension is dropped: the slice needs the whole
// dimension, gathered first.
// CHECK-LABEL: func.func @sliced_dim_is_gathered
// CHECK: shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 1 : tensor<8x96xf32> -> tensor<8x192xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, 64] [8, 64] [1, 1] : tensor<8x192xf32> to tensor<8x64xf32>
shard.grid @grid(shape = 2)
func.func @sliced_dim_is_gathered(%x: tensor<8x192xf32>) -> tensor<8x64xf32> {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<8x192xf32>
  %k = tensor.extract_slice %a[0, 64] [8, 64] [1, 1] : tensor<8x192xf32> to tensor<8x64xf32>
  return %k : tensor<8x64xf32>
}

// -----

// tensor.concat (Llama's rotate_half) joins along the last dimension; the
// batch split passes through.
// CHECK-LABEL: func.func @concat_keeps_the_batch_split
// CHECK: tensor.concat dim(1) %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
// CHECK-NOT: shard.all
shard.grid @grid(shape = 2)
func.func @concat_keeps_the_batch_split(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<8x8xf32>
  %b = shard.shard %y to %s annotate_for_users : tensor<8x8xf32>
  %c = tensor.concat dim(1) %a, %b : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x16xf32>
  %r = shard.shard %c to %s : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// tensor.insert_slice (slice assignment `z[:, 1:3] = y`): the batch split
// passes through; each chip writes its rows' columns 1..2.
// CHECK-LABEL: func.func @insert_slice_keeps_the_batch_split
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 1] [4, 2] [1, 1] : tensor<4x2xf32> into tensor<4x6xf32>
// CHECK-NOT: shard.all
shard.grid @grid(shape = 2)
func.func @insert_slice_keeps_the_batch_split(%z: tensor<8x6xf32>, %y: tensor<8x2xf32>) -> tensor<8x6xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %z to %s annotate_for_users : tensor<8x6xf32>
  %b = shard.shard %y to %s annotate_for_users : tensor<8x2xf32>
  %i = tensor.insert_slice %b into %a[0, 1] [8, 2] [1, 1] : tensor<8x2xf32> into tensor<8x6xf32>
  %r = shard.shard %i to %s : tensor<8x6xf32>
  return %r : tensor<8x6xf32>
}
