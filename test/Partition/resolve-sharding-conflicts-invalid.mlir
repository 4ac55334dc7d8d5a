// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-resolve-sharding-conflicts{max-rounds=1}))' -verify-diagnostics

// A conflict the one allowed probe finds cannot be checked resolved: an
// error at the function instead of propagation's assertion.
#bcast = affine_map<(d0, d1, d2) -> (d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
shard.grid @grid(shape = 2)
// expected-error @+1 {{sharding conflicts remain after 1 rounds of pinning}}
func.func @conflict_left(%dy: tensor<16x32xf32>, %w: tensor<32xf32>, %xhat: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %dys = shard.shard %dy to %r annotate_for_users : tensor<16x32xf32>
  %ws = shard.shard %w to %r annotate_for_users : tensor<32xf32>
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %xhat to %s annotate_for_users : tensor<2x8x32xf32>
  %g = tensor.expand_shape %dys [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %e0 = tensor.empty() : tensor<2x8x32xf32>
  %a = linalg.generic {indexing_maps = [#id3, #bcast, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g, %ws : tensor<2x8x32xf32>, tensor<32xf32>) outs(%e0 : tensor<2x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<2x8x32xf32>
  %e1 = tensor.empty() : tensor<2x8x32xf32>
  %b = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g, %xs : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%e1 : tensor<2x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<2x8x32xf32>
  return %a, %b : tensor<2x8x32xf32>, tensor<2x8x32xf32>
}
