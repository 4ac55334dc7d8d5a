// RUN: nova-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" -verify-diagnostics | FileCheck %s

// tensor.pad (lib/Extensions/PadSharding.cpp): the batch split passes
// through the zero border of a convolution input; each chip pads its own
// images.
// CHECK-LABEL: func.func @pad_keeps_the_batch_split
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x8x8xf32>) -> tensor<1x3x10x10xf32>
// CHECK: tensor.pad %[[X]] low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor<1x3x8x8xf32> to tensor<1x3x10x10xf32>
// CHECK-NOT: shard.all
shard.grid @grid(shape = 2)
func.func @pad_keeps_the_batch_split(%x: tensor<2x3x8x8xf32>) -> tensor<2x3x10x10xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<2x3x8x8xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %a low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x8x8xf32> to tensor<2x3x10x10xf32>
  %r = shard.shard %p to %s : tensor<2x3x10x10xf32>
  return %r : tensor<2x3x10x10xf32>
}

// -----

// A split of a padded dimension is dropped: the rows are gathered first and
// every chip pads the whole image.
// CHECK-LABEL: func.func @padded_dim_is_gathered
// CHECK: shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 2 : tensor<2x3x4x8xf32> -> tensor<2x3x8x8xf32>
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor<2x3x8x8xf32> to tensor<2x3x10x10xf32>
shard.grid @grid(shape = 2)
func.func @padded_dim_is_gathered(%x: tensor<2x3x8x8xf32>) -> tensor<2x3x10x10xf32> {
  %s = shard.sharding @grid split_axes = [[], [], [0]] : !shard.sharding
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<2x3x8x8xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %a low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x8x8xf32> to tensor<2x3x10x10xf32>
  %r = shard.shard %p to %rep : tensor<2x3x10x10xf32>
  return %r : tensor<2x3x10x10xf32>
}
