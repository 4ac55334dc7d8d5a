// RUN: nova-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(sharding-propagation,shard-partition))" | FileCheck %s

// lib/Extensions/ConvSharding.cpp: a convolution split along the batch is a
// local convolution on each chip's images (upstream's linalg model refuses
// to partition it: the input map reads oh + kh).
// CHECK-LABEL: func.func @conv_batch_split
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x10x10xf32>, %[[W:.*]]: tensor<8x3x3x3xf32>, %[[I:.*]]: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%[[X]], %[[W]] : tensor<1x3x10x10xf32>, tensor<8x3x3x3xf32>) outs(%[[I]] : tensor<1x8x8x8xf32>)
// CHECK-NOT: shard.all
shard.grid @grid(shape = 2)
func.func @conv_batch_split(%x: tensor<2x3x10x10xf32>, %w: tensor<8x3x3x3xf32>, %init: tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %ax = shard.shard %x to %s annotate_for_users : tensor<2x3x10x10xf32>
  %aw = shard.shard %w to %r annotate_for_users : tensor<8x3x3x3xf32>
  %ai = shard.shard %init to %s annotate_for_users : tensor<2x8x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%ax, %aw : tensor<2x3x10x10xf32>, tensor<8x3x3x3xf32>) outs(%ai : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %o = shard.shard %c to %s : tensor<2x8x8x8xf32>
  return %o : tensor<2x8x8x8xf32>
}

// -----

// Output channels: the filter split by rows gives each chip 4 of the 8
// output channels, no collective.
// CHECK-LABEL: func.func @conv_output_channel_split
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%{{.*}} : tensor<2x4x8x8xf32>)
// CHECK-NOT: shard.all
shard.grid @grid(shape = 2)
func.func @conv_output_channel_split(%x: tensor<2x3x10x10xf32>, %w: tensor<8x3x3x3xf32>, %init: tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %f = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %o1 = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %ax = shard.shard %x to %r annotate_for_users : tensor<2x3x10x10xf32>
  %aw = shard.shard %w to %f annotate_for_users : tensor<8x3x3x3xf32>
  %ai = shard.shard %init to %o1 annotate_for_users : tensor<2x8x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%ax, %aw : tensor<2x3x10x10xf32>, tensor<8x3x3x3xf32>) outs(%ai : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %o = shard.shard %c to %o1 : tensor<2x8x8x8xf32>
  return %o : tensor<2x8x8x8xf32>
}

// -----

// Rows of the image (read through the window oh + kh) cannot stay split:
// they are gathered, and every chip convolves the whole image.
// CHECK-LABEL: func.func @conv_spatial_split_is_gathered
// CHECK: shard.all_gather %{{.*}} on @grid grid_axes = [0] gather_axis = 2 : tensor<2x3x5x10xf32> -> tensor<2x3x10x10xf32>
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x3x10x10xf32>, tensor<8x3x3x3xf32>) outs(%{{.*}} : tensor<2x8x8x8xf32>)
shard.grid @grid(shape = 2)
func.func @conv_spatial_split_is_gathered(%x: tensor<2x3x10x10xf32>, %w: tensor<8x3x3x3xf32>, %init: tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32> {
  %h = shard.sharding @grid split_axes = [[], [], [0]] : !shard.sharding
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %ax = shard.shard %x to %h annotate_for_users : tensor<2x3x10x10xf32>
  %aw = shard.shard %w to %r annotate_for_users : tensor<8x3x3x3xf32>
  %ai = shard.shard %init to %r annotate_for_users : tensor<2x8x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
         ins(%ax, %aw : tensor<2x3x10x10xf32>, tensor<8x3x3x3xf32>) outs(%ai : tensor<2x8x8x8xf32>) -> tensor<2x8x8x8xf32>
  %o = shard.shard %c to %r : tensor<2x8x8x8xf32>
  return %o : tensor<2x8x8x8xf32>
}
