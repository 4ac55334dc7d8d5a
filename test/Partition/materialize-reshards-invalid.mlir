// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-materialize-reshards,shard-partition))' -verify-diagnostics

// Halos are not resharded by nova.reshard: an error at the op, not a crash.
shard.grid @g(shape = 2x2)
func.func @negative_halo(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %s0 = shard.sharding @g split_axes = [[0]] halo_sizes = [1, 1] : !shard.sharding
  %s1 = shard.sharding @g split_axes = [[1]] : !shard.sharding
  %0 = shard.shard %a to %s0 : tensor<8x8xf32>
  // expected-error @+1 {{'nova.reshard' op cannot reshard with halos or explicit shard offsets}}
  %1 = shard.shard %0 to %s1 annotate_for_users : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
