// RUN: nova-opt %s --split-input-file --nova-verify-sharding -verify-diagnostics | FileCheck %s

// Fully annotated (what sharding-propagation gives the Megatron MLP): fine.
// CHECK-LABEL: func.func @annotated
// CHECK: linalg.generic
shard.grid @grid(shape = 2)
func.func @annotated(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %se = shard.shard %e to %s : tensor<8x4xf32>
  %ae = shard.shard %se to %s annotate_for_users : tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x4xf32>) outs(%ae : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %sr = shard.shard %r to %s : tensor<8x4xf32>
  return %sr : tensor<8x4xf32>
}

// -----

// A replicated input whose result is placed split: propagation decides
// nothing for the generic. On a 1-D grid it runs replicated: its
// destination gets replicated annotations (its own and for its user), and
// partitioning slices the result for the split use.
// CHECK-LABEL: func.func @conflict_runs_replicated
// CHECK: %[[REP:.*]] = shard.sharding @grid split_axes = [] : !shard.sharding
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK: %[[SE:.*]] = shard.shard %[[E]] to %[[REP]] : tensor<8x4xf32>
// CHECK: %[[AE:.*]] = shard.shard %[[SE]] to %[[REP]] annotate_for_users : tensor<8x4xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%[[AE]] : tensor<8x4xf32>)
// CHECK: shard.shard %[[R]] to %{{.*}} : tensor<8x4xf32>
shard.grid @grid(shape = 2)
func.func @conflict_runs_replicated(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %rep annotate_for_users : tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %sr = shard.shard %r to %split : tensor<8x4xf32>
  return %sr : tensor<8x4xf32>
}

// -----

// On a 2-D grid there is no resharding to fall back on: an op left without
// annotations is an error at the op.
shard.grid @grid2(shape = 2x2)
func.func @conflict_2d(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %rep = shard.sharding @grid2 split_axes = [[]] : !shard.sharding
  %split = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %rep annotate_for_users : tensor<8x4xf32>
  // expected-error @+1 {{'tensor.empty' op result #0 has no sharding after sharding propagation}}
  %e = tensor.empty() : tensor<8x4xf32>
  // expected-error @+1 {{operand #1 has no sharding after sharding propagation}}
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %sr = shard.shard %r to %split : tensor<8x4xf32>
  return %sr : tensor<8x4xf32>
}

// -----

// No shard annotations at all: a single-chip program, nothing to check.
// CHECK-LABEL: func.func @unannotated
func.func @unannotated(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  return %e : tensor<8x4xf32>
}

// -----

// A change of sharding on a 2-D grid: shard-partition would abort.
shard.grid @grid2(shape = 2x4)
func.func @reshard_2d(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s0 = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %s1 = shard.sharding @grid2 split_axes = [[1]] : !shard.sharding
  %a = shard.shard %x to %s0 annotate_for_users : tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %se = shard.shard %e to %s0 : tensor<8x4xf32>
  %ae = shard.shard %se to %s0 annotate_for_users : tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<8x4xf32>) outs(%ae : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8x4xf32>
  %sr = shard.shard %r to %s0 : tensor<8x4xf32>
  %ar = shard.shard %sr to %s1 annotate_for_users : tensor<8x4xf32>
  // expected-error @+1 {{needs its operand resharded on the 2-D grid @grid2, which MLIR 22's shard-partition supports only on 1-D grids}}
  return %ar : tensor<8x4xf32>
}
