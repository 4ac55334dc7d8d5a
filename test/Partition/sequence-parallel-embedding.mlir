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

// -----

// Under autocast in a training forward: the product is rounded to bf16, and
// the rounded [B * T, D] is also returned (saved for the backward). The
// expand back to [B, T, D] is still found through the cast.
// CHECK-LABEL: func.func @cast_and_saved
// CHECK: %[[SEQ:.*]] = shard.sharding @g split_axes = {{\[\[}}0], [1]]
// CHECK: %[[IDS:.*]] = shard.shard %arg0 to %[[SEQ]] annotate_for_users
// CHECK: %[[WHOLE:.*]] = shard.sharding @g split_axes = {{\[\[}}0], []]
// CHECK: %[[AS:.*]] = shard.shard %[[IDS]] to %[[SEQ]] : tensor<4x16xi64>
// CHECK: %[[GATHERED:.*]] = shard.shard %[[AS]] to %[[WHOLE]] annotate_for_users
// CHECK: linalg.generic {{.*}} ins(%[[GATHERED]], %{{.*}} : tensor<4x16xi64>, tensor<64xi64>)
// CHECK: linalg.matmul
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: %[[X:.*]] = tensor.expand_shape %[[R]]
// CHECK: %[[OUT:.*]] = shard.sharding @g split_axes = {{\[\[}}0], [1], []]
// CHECK: %[[MADE:.*]] = shard.shard %[[X]] to %[[OUT]] : tensor<4x16x8xbf16>
// CHECK: %[[READ:.*]] = shard.shard %[[MADE]] to %[[OUT]] annotate_for_users
// CHECK: return %[[READ]], %[[R]]
shard.grid @g(shape = 2x2)
func.func @cast_and_saved(%arg0: tensor<4x16xi64>, %arg1: tensor<64x8xbf16>) -> (tensor<4x16x8xbf16>, tensor<64x8xbf16>) {
  %seq = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %ids = shard.shard %arg0 to %seq annotate_for_users : tensor<4x16xi64>
  %rows = shard.sharding @g split_axes = [[1], []] : !shard.sharding
  %w = shard.shard %arg1 to %rows annotate_for_users : tensor<64x8xbf16>
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
  %ef = tensor.empty() : tensor<4x16x64xbf16>
  %ohf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%oh : tensor<4x16x64xi1>) outs(%ef : tensor<4x16x64xbf16>) {
  ^bb0(%a: i1, %out: bf16):
    %f = arith.uitofp %a : i1 to bf16
    linalg.yield %f : bf16
  } -> tensor<4x16x64xbf16>
  %c = tensor.collapse_shape %ohf [[0, 1], [2]] : tensor<4x16x64xbf16> into tensor<64x64xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x8xf32>
  %f0 = linalg.fill ins(%z : f32) outs(%e : tensor<64x8xf32>) -> tensor<64x8xf32>
  %mm = linalg.matmul ins(%c, %w : tensor<64x64xbf16>, tensor<64x8xbf16>) outs(%f0 : tensor<64x8xf32>) -> tensor<64x8xf32>
  %eh = tensor.empty() : tensor<64x8xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<64x8xf32>) outs(%eh : tensor<64x8xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x8xbf16>
  %x = tensor.expand_shape %r [[0, 1], [2]] output_shape [4, 16, 8] : tensor<64x8xbf16> into tensor<4x16x8xbf16>
  return %x, %r : tensor<4x16x8xbf16>, tensor<64x8xbf16>
}
