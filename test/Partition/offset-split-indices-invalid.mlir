// RUN: nova-opt %s --split-input-file --nova-offset-split-indices -verify-diagnostics

// A loop that shrank by a ratio no mesh axis has.
shard.grid @nova_mesh(shape = 4)
func.func @ratio_of_no_axis(%x: tensor<32xf32>) -> tensor<32xf32> {
  %e = tensor.empty() : tensor<32xf32>
  // expected-error @+1 {{the indices of loop 0 are split 2 ways, over several mesh axes}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<32xf32>) outs(%e : tensor<32xf32>) attrs = {nova_loop_ranges = array<i64: 64>} {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = arith.index_cast %i : index to i64
    %f = arith.sitofp %j : i64 to f32
    %y = arith.addf %in, %f : f32
    linalg.yield %y : f32
  } -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

// A loop whose recorded sharding (grid axes 0 and 1, 4 ways) disagrees with
// how much partitioning shrank it (2 ways).
shard.grid @nova_mesh(shape = 2x2)
func.func @ratio_not_the_recorded_axes(%x: tensor<32xf32>) -> tensor<32xf32> {
  %e = tensor.empty() : tensor<32xf32>
  // expected-error @+1 {{the indices of loop 0 are split 2 ways, but its sharding splits it 4 ways}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<32xf32>) outs(%e : tensor<32xf32>) attrs = {nova_loop_ranges = array<i64: 64>, nova_loop_axes = [array<i16: 0, 1>]} {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = arith.index_cast %i : index to i64
    %f = arith.sitofp %j : i64 to f32
    %y = arith.addf %in, %f : f32
    linalg.yield %y : f32
  } -> tensor<32xf32>
  return %r : tensor<32xf32>
}
