// RUN: nova-opt %s --split-input-file --nova-partition | FileCheck %s

// x + arange(64) with x split over 4 chips: each chip's iota must count
// from its own offset (16 x its coordinate), not from 0, and the ranges
// recorded for the pass are dropped afterwards.
// CHECK-LABEL: func.func @iota_on_split_dim
// CHECK-SAME: (%{{.*}}: tensor<16xf32>)
// CHECK: %[[ID:.*]] = nova.chip_id
// CHECK: %[[C:.*]] = arith.remui %{{.*}}, %c4
// CHECK: %[[OFF:.*]] = arith.muli %[[C]], %c16
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: arith.addi %[[I]], %[[OFF]] : index
// CHECK-NOT: nova_loop_ranges
shard.grid @nova_mesh(shape = 4)
func.func @iota_on_split_dim(%x: tensor<64xf32>) -> tensor<64xf32> {
  %s = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<64xf32>
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%xs : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = arith.index_cast %i : index to i64
    %f = arith.sitofp %j : i64 to f32
    %y = arith.addf %in, %f : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  %rs = shard.shard %r to %s : tensor<64xf32>
  return %rs : tensor<64xf32>
}

// A gather (tensor.extract of a captured tensor) is left as partitioning
// makes it: its index may address the chip's own slice, which is local.
// CHECK-LABEL: func.func @gather_from_local_slice
// CHECK-NOT: nova.chip_id
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK-NOT: arith.addi %[[I]]
// CHECK: tensor.extract %{{.*}}[%[[I]], %{{.*}}] : tensor<16x8xf32>
// CHECK: return
func.func @gather_from_local_slice(%t: tensor<64x8xf32>, %x: tensor<64xf32>) -> tensor<64xf32> {
  %s = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
  %ts = shard.shard %t to %s annotate_for_users : tensor<64x8xf32>
  %xs = shard.shard %x to %s annotate_for_users : tensor<64xf32>
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%xs : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %c0 = arith.constant 0 : index
    %v = tensor.extract %ts[%i, %c0] : tensor<64x8xf32>
    %j = arith.index_cast %i : index to i64
    %f = arith.sitofp %j : i64 to f32
    %a = arith.addf %v, %f : f32
    %y = arith.addf %in, %a : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  %rs = shard.shard %r to %s : tensor<64xf32>
  return %rs : tensor<64xf32>
}

// An iota whose values are positions for a gather (a mask's rows under data
// parallelism) stays local: the gather reads the chip's own slice.
// CHECK-LABEL: func.func @iota_feeding_a_gather
// CHECK-NOT: nova.chip_id
// CHECK: return
func.func @iota_feeding_a_gather(%m: tensor<64xf32>) -> tensor<64xf32> {
  %s = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
  %ms = shard.shard %m to %s annotate_for_users : tensor<64xf32>
  %e0 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e0 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %j = arith.index_cast %i : index to i64
    linalg.yield %j : i64
  } -> tensor<64xi64>
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%iota : tensor<64xi64>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: i64, %out: f32):
    %k = arith.index_cast %in : i64 to index
    %v = tensor.extract %ms[%k] : tensor<64xf32>
    linalg.yield %v : f32
  } -> tensor<64xf32>
  %rs = shard.shard %r to %s : tensor<64xf32>
  return %rs : tensor<64xf32>
}

// The positions of a learned position embedding under sequence parallelism:
// an iota split over the chips indexes a whole (replicated) table, so each
// chip's positions count from its own offset.
// CHECK-LABEL: func.func @iota_indexing_a_whole_table
// CHECK: %[[ID:.*]] = nova.chip_id
// CHECK: %[[C:.*]] = arith.remui %{{.*}}, %c4
// CHECK: %[[OFF:.*]] = arith.muli %[[C]], %c16
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: arith.addi %[[I]], %[[OFF]] : index
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<64x8xf32>
func.func @iota_indexing_a_whole_table(%table: tensor<64x8xf32>) -> tensor<64x8xf32> {
  %r0 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
  %ts = shard.shard %table to %r0 annotate_for_users : tensor<64x8xf32>
  %e0 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e0 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %j = arith.index_cast %i : index to i64
    linalg.yield %j : i64
  } -> tensor<64xi64>
  %s = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
  %is = shard.shard %iota to %s : tensor<64xi64>
  %iu = shard.shard %is to %s annotate_for_users : tensor<64xi64>
  %e = tensor.empty() : tensor<64x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%iu : tensor<64xi64>) outs(%e : tensor<64x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %k = arith.index_cast %in : i64 to index
    %d = linalg.index 1 : index
    %v = tensor.extract %ts[%k, %d] : tensor<64x8xf32>
    linalg.yield %v : f32
  } -> tensor<64x8xf32>
  %s2 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
  %rs = shard.shard %r to %s2 : tensor<64x8xf32>
  return %rs : tensor<64x8xf32>
}

// -----

// On a 2 x 2 grid a loop split 2 ways could be either axis's: the axis is
// the one its annotations split it over (here 1, the inner one: the chip's
// coordinate is id mod 2), not guessed from the ratio.
// CHECK-LABEL: func.func @iota_split_over_the_inner_axis_of_a_2d_grid
// CHECK: %[[ID:.*]] = nova.chip_id
// CHECK-NOT: arith.divui
// CHECK: %[[C:.*]] = arith.remui %[[ID]], %c2
// CHECK: %[[OFF:.*]] = arith.muli %[[C]], %c32
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: arith.addi %[[I]], %[[OFF]] : index
// CHECK-NOT: nova_loop_axes
shard.grid @nova_mesh(shape = 2x2)
func.func @iota_split_over_the_inner_axis_of_a_2d_grid(%x: tensor<64xf32>) -> tensor<64xf32> {
  %s = shard.sharding @nova_mesh split_axes = [[1]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<64xf32>
  %e = tensor.empty() : tensor<64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%xs : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = arith.index_cast %i : index to i64
    %f = arith.sitofp %j : i64 to f32
    %y = arith.addf %in, %f : f32
    linalg.yield %y : f32
  } -> tensor<64xf32>
  %rs = shard.shard %r to %s : tensor<64xf32>
  return %rs : tensor<64xf32>
}
