// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-materialize-reshards))' | FileCheck %s
// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-materialize-reshards,shard-partition))' | FileCheck %s --check-prefix=PART
// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-materialize-reshards,shard-partition),convert-shard-to-nova)' | FileCheck %s --check-prefix=NOVA

// ZeRO on the data-parallel axis (0) of a DP x TP grid: a gradient split
// over tp along dim 1 is sliced over dp along dim 0 (the optimizer state's
// sharding), and the updated shard gathered back over dp. Each change goes
// through a nova.reshard; partitioning gives one all_slice and one
// all_gather, each over the one grid axis that changes.
// CHECK-LABEL: func.func @zero_over_dp
// CHECK: %[[G:.*]] = shard.shard %arg0 to %[[TP:.*]] : tensor<8x16xf32>
// CHECK: %[[R:.*]] = shard.shard %[[G]] to %[[TP]] annotate_for_users
// CHECK: %[[X:.*]] = nova.reshard %[[R]] : tensor<8x16xf32>
// CHECK: shard.shard %[[X]] to %[[DPTP:.*]] : tensor<8x16xf32>
// CHECK: nova.reshard
// CHECK-NOT: nova.reshard
// CHECK: return
// PART-LABEL: func.func @zero_over_dp
// PART-SAME: (%[[ARG:.*]]: tensor<8x8xf32>) -> tensor<8x8xf32>
// PART: %[[S:.*]] = shard.all_slice %[[ARG]] on @g grid_axes = [0] slice_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// PART: %[[U:.*]] = linalg.generic {{.*}} ins(%[[S]]
// PART: shard.all_gather %[[U]] on @g grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// NOVA-LABEL: func.func @zero_over_dp
// NOVA: nova.all_gather {{.*}} dim 0 groups {{\[\[}}0, 2], [1, 3]]
shard.grid @g(shape = 2x2)
func.func @zero_over_dp(%grad: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %tp = shard.sharding @g split_axes = [[], [1]] : !shard.sharding
  %dptp = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %0 = shard.shard %grad to %tp : tensor<8x16xf32>
  %1 = shard.shard %0 to %dptp annotate_for_users : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %se = shard.shard %e to %dptp : tensor<8x16xf32>
  %ae = shard.shard %se to %dptp annotate_for_users : tensor<8x16xf32>
  %u = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<8x16xf32>) outs(%ae : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  %2 = shard.shard %u to %dptp : tensor<8x16xf32>
  %3 = shard.shard %2 to %tp annotate_for_users : tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}

// -----

// Splits that share no prefix: [[0], [1]] -> [[1], [0]] gathers each
// dimension's split (the last split axis first) and slices the new ones.
// PART-LABEL: func.func @swap_axes
// PART: shard.all_gather %{{.*}} grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// PART: shard.all_gather %{{.*}} grid_axes = [1] gather_axis = 1 : tensor<8x4xf32> -> tensor<8x8xf32>
// PART: shard.all_slice %{{.*}} grid_axes = [1] slice_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// PART: shard.all_slice %{{.*}} grid_axes = [0] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
shard.grid @g2(shape = 2x2)
func.func @swap_axes(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @g2 split_axes = [[0], [1]] : !shard.sharding
  %s1 = shard.sharding @g2 split_axes = [[1], [0]] : !shard.sharding
  %0 = shard.shard %a to %s0 : tensor<8x8xf32>
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<8x8xf32>
  %2 = shard.shard %1 to %s1 : tensor<8x8xf32>
  %3 = shard.shard %2 to %s0 annotate_for_users : tensor<8x8xf32>
  return %3 : tensor<8x8xf32>
}

// -----

// A dimension split over both axes loses only its minor one: one gather.
// PART-LABEL: func.func @drop_minor_axis
// PART: shard.all_gather %{{.*}} grid_axes = [1] gather_axis = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
// PART-NOT: shard.all_
// PART: return
shard.grid @g3(shape = 2x2)
func.func @drop_minor_axis(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @g3 split_axes = [[0, 1]] : !shard.sharding
  %s1 = shard.sharding @g3 split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %a to %s0 : tensor<8x8xf32>
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}

// -----

// On a 1-D grid upstream's resharding is used: nothing changes.
// CHECK-LABEL: func.func @one_d_grid
// CHECK-NOT: nova.reshard
// CHECK: return
shard.grid @line(shape = 4)
func.func @one_d_grid(%a: tensor<8xf32>) -> tensor<8xf32> {
  %s0 = shard.sharding @line split_axes = [[0]] : !shard.sharding
  %s1 = shard.sharding @line split_axes = [[]] : !shard.sharding
  %0 = shard.shard %a to %s0 : tensor<8xf32>
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// A result annotation after a user annotation (an argument returned under
// another placement: ZeRO's updated state) is resharded too.
// CHECK-LABEL: func.func @returned_argument
// CHECK: %[[U:.*]] = shard.shard %arg0 to %{{.*}} annotate_for_users
// CHECK: %[[X:.*]] = nova.reshard %[[U]]
// PART-LABEL: func.func @returned_argument
// PART: shard.all_slice %{{.*}} on @g4 grid_axes = [1] slice_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
shard.grid @g4(shape = 2x2)
func.func @returned_argument(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @g4 split_axes = [[0]] : !shard.sharding
  %s1 = shard.sharding @g4 split_axes = [[0, 1]] : !shard.sharding
  %0 = shard.shard %a to %s0 annotate_for_users : tensor<8x8xf32>
  %1 = shard.shard %0 to %s1 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
