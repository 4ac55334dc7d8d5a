// RUN: nova-opt %s --split-input-file --nova-sequence-parallel-embedding | FileCheck %s

// Sequence parallelism with a vocabulary-parallel embedding on a dp x tp
// grid: the ids split [[0], [1]] (batch over dp, sequence over tp), the
// table's rows over tp. The one-hot reads the ids gathered over tp, and the
// embedding's [B, T, D] output is annotated split as the ids are.
// CHECK-LABEL: func.func @sequence_parallel_embedding
// CHECK: %[[SEQ:.*]] = shard.sharding @g split_axes = {{\[\[}}0], [1]]
// CHECK: %[[IDS:.*]] = shard.shard %arg0 to %[[SEQ]] annotate_for_users
// CHECK: %[[WHOLE:.*]] = shard.sharding @g split_axes = {{\[\[}}0], []]
// CHECK: %[[AS:.*]] = shard.shard %[[IDS]] to %[[SEQ]] : tensor<4x16xi64>
// CHECK: %[[GATHERED:.*]] = shard.shard %[[AS]] to %[[WHOLE]] annotate_for_users
// CHECK: linalg.generic {{.*}} ins(%[[GATHERED]], %{{.*}} : tensor<4x16xi64>, tensor<64xi64>)
// CHECK: %[[E:.*]] = linalg.matmul
// CHECK: %[[X:.*]] = tensor.expand_shape
// CHECK: %[[OUT:.*]] = shard.sharding @g split_axes = {{\[\[}}0], [1], []]
// CHECK: %[[MADE:.*]] = shard.shard %[[X]] to %[[OUT]] : tensor<4x16x8xf32>
// CHECK: %[[READ:.*]] = shard.shard %[[MADE]] to %[[OUT]] annotate_for_users
// CHECK: linalg.generic {{.*}} ins(%[[READ]] : tensor<4x16x8xf32>)
shard.grid @g(shape = 2x2)
func.func @sequence_parallel_embedding(%arg0: tensor<4x16xi64>, %arg1: tensor<64x8xf32>) -> tensor<4x16x8xf32> {
  %seq = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %ids = shard.shard %arg0 to %seq annotate_for_users : tensor<4x16xi64>
  %rows = shard.sharding @g split_axes = [[1], []] : !shard.sharding
  %w = shard.shard %arg1 to %rows annotate_for_users : tensor<64x8xf32>
  %e64 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e64 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<64xi64>
  %eb = tensor.empty() : tensor<4x16x64xi1>
  %oh = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids, %iota : tensor<4x16xi64>, tensor<64xi64>) outs(%eb : tensor<4x16x64xi1>) {
  ^bb0(%a: i64, %b: i64, %out: i1):
    %eq = arith.cmpi eq, %a, %b : i64
    linalg.yield %eq : i1
  } -> tensor<4x16x64xi1>
  %ef = tensor.empty() : tensor<4x16x64xf32>
  %ohf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%oh : tensor<4x16x64xi1>) outs(%ef : tensor<4x16x64xf32>) {
  ^bb0(%a: i1, %out: f32):
    %f = arith.uitofp %a : i1 to f32
    linalg.yield %f : f32
  } -> tensor<4x16x64xf32>
  %c = tensor.collapse_shape %ohf [[0, 1], [2]] : tensor<4x16x64xf32> into tensor<64x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x8xf32>
  %f0 = linalg.fill ins(%z : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
  %mm = linalg.matmul ins(%c, %w : tensor<64x64xf32>, tensor<64x8xf32>) outs(%f0 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %x = tensor.expand_shape %mm [[0, 1], [2]] output_shape [4, 16, 8] : tensor<64x8xf32> into tensor<4x16x8xf32>
  %ey = tensor.empty() : tensor<4x16x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<4x16x8xf32>) outs(%ey : tensor<4x16x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %t = arith.addf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<4x16x8xf32>
  return %y : tensor<4x16x8xf32>
}

// -----

// Without sequence parallelism (the ids split over dp only) nothing changes.
// CHECK-LABEL: func.func @vocabulary_parallel_only
// CHECK-NOT: shard.sharding @g split_axes = {{\[\[}}0], [1], []]
// CHECK: return
shard.grid @g(shape = 2x2)
func.func @vocabulary_parallel_only(%arg0: tensor<4x16xi64>, %arg1: tensor<64x8xf32>) -> tensor<4x16x8xf32> {
  %dp = shard.sharding @g split_axes = [[0], []] : !shard.sharding
  %ids = shard.shard %arg0 to %dp annotate_for_users : tensor<4x16xi64>
  %rows = shard.sharding @g split_axes = [[1], []] : !shard.sharding
  %w = shard.shard %arg1 to %rows annotate_for_users : tensor<64x8xf32>
  %e64 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e64 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<64xi64>
  %eb = tensor.empty() : tensor<4x16x64xi1>
  %oh = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids, %iota : tensor<4x16xi64>, tensor<64xi64>) outs(%eb : tensor<4x16x64xi1>) {
  ^bb0(%a: i64, %b: i64, %out: i1):
    %eq = arith.cmpi eq, %a, %b : i64
    linalg.yield %eq : i1
  } -> tensor<4x16x64xi1>
  %ef = tensor.empty() : tensor<4x16x64xf32>
  %ohf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%oh : tensor<4x16x64xi1>) outs(%ef : tensor<4x16x64xf32>) {
  ^bb0(%a: i1, %out: f32):
    %f = arith.uitofp %a : i1 to f32
    linalg.yield %f : f32
  } -> tensor<4x16x64xf32>
  %c = tensor.collapse_shape %ohf [[0, 1], [2]] : tensor<4x16x64xf32> into tensor<64x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x8xf32>
  %f0 = linalg.fill ins(%z : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
  %mm = linalg.matmul ins(%c, %w : tensor<64x64xf32>, tensor<64x8xf32>) outs(%f0 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %x = tensor.expand_shape %mm [[0, 1], [2]] output_shape [4, 16, 8] : tensor<64x8xf32> into tensor<4x16x8xf32>
  return %x : tensor<4x16x8xf32>
}
