// RUN: nova-opt %s --nova-partition | FileCheck %s

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
