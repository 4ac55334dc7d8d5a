// RUN: nova-opt %s -split-input-file -verify-diagnostics --convert-shard-to-nova

shard.grid @grid(shape = 2)
func.func @negative_product(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot be lowered to nova: reduction 'product' has no nova collective (sum, max, min, average)}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] reduction = product : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

shard.grid @grid(shape = ?)
func.func @negative_dynamic_grid(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot be lowered to nova: grid grid has a dynamic shape; nova needs a static one}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

shard.grid @grid(shape = 2)
func.func @negative_small_integer(%x: tensor<8xi8>) -> tensor<8xi8> {
  // expected-error @+1 {{cannot be lowered to nova: nova collectives take f32, bf16, f16, i64 or i32, got i8}}
  %r = shard.all_reduce %x on @grid grid_axes = [0] : tensor<8xi8> -> tensor<8xi8>
  return %r : tensor<8xi8>
}

// -----

shard.grid @grid(shape = 2)
func.func @negative_unpartitioned(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot be lowered to nova: 'shard.sharding' has no nova lowering (run sharding-propagation and shard-partition first; only all_reduce, all_gather, reduce_scatter, all_to_all and all_slice are lowered)}}
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  // expected-error @+1 {{cannot be lowered to nova: 'shard.shard' has no nova lowering}}
  %r = shard.shard %x to %s : tensor<8xf32>
  return %r : tensor<8xf32>
}
