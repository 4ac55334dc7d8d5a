// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-bucket-all-gathers))' -split-input-file | FileCheck %s
// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-bucket-all-gathers{bucket-bytes=64}))' -split-input-file | FileCheck %s --check-prefix=SMALL

// Two ZeRO parameter shards, one gathered along dim 0 and one along dim 1:
// one all-gather of their concatenation, each cut back out of the chips'
// rows (the second with the chip dimension moved before dim 1).
// CHECK-LABEL: func.func @two_shards
// CHECK-SAME: (%[[SA:.*]]: tensor<2x4xf32>, %[[SB:.*]]: tensor<3x2xf32>)
// CHECK-DAG: %[[FA:.*]] = tensor.collapse_shape %[[SA]] {{\[}}[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
// CHECK-DAG: %[[FB:.*]] = tensor.collapse_shape %[[SB]] {{\[}}[0, 1]] : tensor<3x2xf32> into tensor<6xf32>
// CHECK: %[[C:.*]] = tensor.concat dim(0) %[[FA]], %[[FB]] : (tensor<8xf32>, tensor<6xf32>) -> tensor<14xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[C]] on @g grid_axes = [0] gather_axis = 0 : tensor<14xf32> -> tensor<28xf32>
// CHECK-NOT: shard.all_gather
// CHECK: %[[R:.*]] = tensor.expand_shape %[[G]] {{\[}}[0, 1]] output_shape [2, 14] : tensor<28xf32> into tensor<2x14xf32>
// CHECK: %[[PA:.*]] = tensor.extract_slice %[[R]][0, 0] [2, 8] [1, 1] : tensor<2x14xf32> to tensor<2x8xf32>
// CHECK: %[[EA:.*]] = tensor.expand_shape %[[PA]] {{\[}}[0], [1, 2]] output_shape [2, 2, 4] : tensor<2x8xf32> into tensor<2x2x4xf32>
// CHECK: %[[A:.*]] = tensor.collapse_shape %[[EA]] {{\[}}[0, 1], [2]] : tensor<2x2x4xf32> into tensor<4x4xf32>
// CHECK: %[[PB:.*]] = tensor.extract_slice %[[R]][0, 8] [2, 6] [1, 1] : tensor<2x14xf32> to tensor<2x6xf32>
// CHECK: %[[EB:.*]] = tensor.expand_shape %[[PB]] {{\[}}[0], [1, 2]] output_shape [2, 3, 2] : tensor<2x6xf32> into tensor<2x3x2xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3x2x2xf32>
// CHECK: %[[TB:.*]] = linalg.transpose ins(%[[EB]] : tensor<2x3x2xf32>) outs(%[[E]] : tensor<3x2x2xf32>) permutation = [1, 0, 2]
// CHECK: %[[B:.*]] = tensor.collapse_shape %[[TB]] {{\[}}[0], [1, 2]] : tensor<3x2x2xf32> into tensor<3x4xf32>
// CHECK: return %[[A]], %[[B]]
// With 64-byte buckets the first gather (64 bytes gathered) fills one alone:
// it is issued as it is, and the second joins no one.
// SMALL-LABEL: func.func @two_shards
// SMALL-NOT: tensor.concat
// SMALL-COUNT-2: shard.all_gather
shard.grid @g(shape = 2)
func.func @two_shards(%sa: tensor<2x4xf32>, %sb: tensor<3x2xf32>) -> (tensor<4x4xf32>, tensor<3x4xf32>) {
  %a = shard.all_gather %sa on @g grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  %b = shard.all_gather %sb on @g grid_axes = [0] gather_axis = 1 : tensor<3x2xf32> -> tensor<3x4xf32>
  return %a, %b : tensor<4x4xf32>, tensor<3x4xf32>
}

// -----

// A gather along the last of three dims on a DP x TP grid (over dp, axis 0):
// the chip dimension goes before dim 2.
// CHECK-LABEL: func.func @last_dim_of_three
// CHECK: shard.all_gather %{{.*}} on @g grid_axes = [0] gather_axis = 0 : tensor<16xf32> -> tensor<32xf32>
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x2x2x2xf32>) outs(%{{.*}} : tensor<2x2x2x2xf32>) permutation = [1, 2, 0, 3]
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<2x2x2x2xf32> into tensor<2x2x4xf32>
shard.grid @g(shape = 2x4)
func.func @last_dim_of_three(%sa: tensor<2x2x2xf32>, %sb: tensor<8xf32>) -> (tensor<2x2x4xf32>, tensor<16xf32>) {
  %a = shard.all_gather %sa on @g grid_axes = [0] gather_axis = 2 : tensor<2x2x2xf32> -> tensor<2x2x4xf32>
  %b = shard.all_gather %sb on @g grid_axes = [0] gather_axis = 0 : tensor<8xf32> -> tensor<16xf32>
  return %a, %b : tensor<2x2x4xf32>, tensor<16xf32>
}

// -----

// Sequence parallelism's gather is used before the next gather: it stays
// alone, issued where it was.
// CHECK-LABEL: func.func @negative_used_before_the_next
// CHECK-NOT: tensor.concat
// CHECK: %[[A:.*]] = shard.all_gather %arg0
// CHECK: linalg.generic
// CHECK: shard.all_gather
shard.grid @g(shape = 4)
func.func @negative_used_before_the_next(%x: tensor<4xf32>) -> tensor<64xf32> {
  %a = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<16xf32>
  %e = tensor.empty() : tensor<16xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %d = arith.addf %i, %i : f32
    linalg.yield %d : f32
  } -> tensor<16xf32>
  %b = shard.all_gather %s on @g grid_axes = [0] gather_axis = 0 : tensor<16xf32> -> tensor<64xf32>
  return %b : tensor<64xf32>
}

// -----

// Gathers over different grid axes (dp and tp) or of different element
// types never share a bucket; a lone gather is left as it is.
// CHECK-LABEL: func.func @negative_kinds_apart
// CHECK-NOT: tensor.concat
// CHECK: shard.all_gather %arg0 on @g grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
// CHECK: shard.all_gather %arg1 on @g grid_axes = [1] gather_axis = 0 : tensor<2xf32> -> tensor<8xf32>
// CHECK: shard.all_gather %arg2 on @g grid_axes = [0] gather_axis = 0 : tensor<2xbf16> -> tensor<4xbf16>
shard.grid @g(shape = 2x4)
func.func @negative_kinds_apart(%x: tensor<2xf32>, %y: tensor<2xf32>, %z: tensor<2xbf16>)
    -> (tensor<4xf32>, tensor<8xf32>, tensor<4xbf16>) {
  %a = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
  %b = shard.all_gather %y on @g grid_axes = [1] gather_axis = 0 : tensor<2xf32> -> tensor<8xf32>
  %c = shard.all_gather %z on @g grid_axes = [0] gather_axis = 0 : tensor<2xbf16> -> tensor<4xbf16>
  return %a, %b, %c : tensor<4xf32>, tensor<8xf32>, tensor<4xbf16>
}

// -----

// ZeRO's update: each gathered step is subtracted from its decayed
// parameter at once. The subtractions move down to their first user (the
// return), so both gathers share one bucket.
// CHECK-LABEL: func.func @updates_sunk
// CHECK: %[[C:.*]] = tensor.concat dim(0)
// CHECK: shard.all_gather %[[C]]
// CHECK-NOT: shard.all_gather
// CHECK: arith.subf
// CHECK: arith.subf
// CHECK: return
#id = affine_map<(d0) -> (d0)>
shard.grid @g(shape = 2)
func.func @updates_sunk(%sa: tensor<2xf32>, %sb: tensor<2xf32>, %pa: tensor<4xf32>, %pb: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %a = shard.all_gather %sa on @g grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
  %na = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%pa, %a : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %b = shard.all_gather %sb on @g grid_axes = [0] gather_axis = 0 : tensor<2xf32> -> tensor<4xf32>
  %nb = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%pb, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %na, %nb : tensor<4xf32>, tensor<4xf32>
}
