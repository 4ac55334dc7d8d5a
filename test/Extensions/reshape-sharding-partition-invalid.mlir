// RUN: nova-opt %s --split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(shard-partition))"

// Annotations written by hand (no propagation to reshard them): the source is
// split on its leading fine dimension, which collapses to a split of dim 0,
// but the result claims a split of dim 1.
shard.grid @grid(shape = 2)
func.func @negative_collapse_shardings_disagree(%x: tensor<2x16x64xf32>) -> tensor<32x64xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<2x16x64xf32>
  // expected-error @+1 {{operand and result shardings do not describe the same split of the data}}
  %c = tensor.collapse_shape %xs [[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
  %r = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %cs = shard.shard %c to %r : tensor<32x64xf32>
  return %cs : tensor<32x64xf32>
}

// -----

// The same for an expand: a replicated source cannot become a split result
// without a reshard.
shard.grid @grid(shape = 2)
func.func @negative_expand_shardings_disagree(%x: tensor<32x192xf32>) -> tensor<2x16x192xf32> {
  %s = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %x to %s annotate_for_users : tensor<32x192xf32>
  // expected-error @+1 {{operand and result shardings do not describe the same split of the data}}
  %e = tensor.expand_shape %xs [[0, 1], [2]] output_shape [2, 16, 192] : tensor<32x192xf32> into tensor<2x16x192xf32>
  %r = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %es = shard.shard %e to %r : tensor<2x16x192xf32>
  return %es : tensor<2x16x192xf32>
}
