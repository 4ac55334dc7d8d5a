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

// A computation from shapes alone (a causal mask built from an iota, as
// Hugging Face builds one without an attention_mask): propagation places
// nothing for it (its split user's operand is placed), and it
// runs replicated: replicated annotations on its results and operands, and
// partitioning slices what the split user reads.
// CHECK-LABEL: func.func @unplaced_runs_replicated
// CHECK: %[[REP:.*]] = shard.sharding @grid split_axes = [] : !shard.sharding
// CHECK: %[[E:.*]] = tensor.empty() : tensor<8x4xf32>
// CHECK: %[[SE:.*]] = shard.shard %[[E]] to %[[REP]] : tensor<8x4xf32>
// CHECK: %[[AE:.*]] = shard.shard %[[SE]] to %[[REP]] annotate_for_users : tensor<8x4xf32>
// CHECK: %[[M:.*]] = linalg.generic {{.*}} outs(%[[AE]] : tensor<8x4xf32>)
// CHECK: %[[SM:.*]] = shard.shard %[[M]] to %[[REP]] : tensor<8x4xf32>
// CHECK: shard.shard %[[SM]] to %{{.*}} annotate_for_users : tensor<8x4xf32>
shard.grid @grid(shape = 2)
func.func @unplaced_runs_replicated(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %split annotate_for_users : tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<8x4xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %f = arith.sitofp %c : i64 to f32
    linalg.yield %f : f32
  } -> tensor<8x4xf32>
  %am = shard.shard %m to %split annotate_for_users : tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %se2 = shard.shard %e2 to %split : tensor<8x4xf32>
  %ae2 = shard.shard %se2 to %split annotate_for_users : tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a, %am : tensor<8x4xf32>, tensor<8x4xf32>) outs(%ae2 : tensor<8x4xf32>) {
  ^bb0(%in: f32, %k: f32, %out: f32):
    %s = arith.addf %in, %k : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  %sr = shard.shard %r to %split : tensor<8x4xf32>
  return %sr : tensor<8x4xf32>
}

// -----

// A replicated input whose result is placed split: the generic is placed on
// one side and not the other, a real conflict: an error at the op.
shard.grid @grid(shape = 2)
func.func @conflict(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %split = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %rep annotate_for_users : tensor<8x4xf32>
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

// The same on a 2-D grid (the unplaced tensor.empty runs replicated, as on
// a 1-D grid; the generic's conflict is an error at the op).
shard.grid @grid2(shape = 2x2)
func.func @conflict_2d(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %rep = shard.sharding @grid2 split_axes = [[]] : !shard.sharding
  %split = shard.sharding @grid2 split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %rep annotate_for_users : tensor<8x4xf32>
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

// A change of sharding on a 2-D grid passes: nova-materialize-reshards
// turns it into a nova.reshard, which Nova partitions.
// CHECK-LABEL: func.func @reshard_2d
// CHECK: shard.shard %{{.*}} to %{{.*}} annotate_for_users
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
  return %ar : tensor<8x4xf32>
}

// -----

// Placements shard-partition would assert on are diagnosed first.
shard.grid @g4(shape = 4)
func.func @negative_split_beyond_rank(%a: tensor<8xf32>) -> tensor<8xf32> {
  %s = shard.sharding @g4 split_axes = [[], [0]] : !shard.sharding
  // expected-error @+1 {{splits dimension 1 of a rank-1 tensor}}
  %0 = shard.shard %a to %s : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

shard.grid @huge(shape = 9223372036854775807)
func.func @negative_grid_too_large(%a: tensor<8xf32>) -> tensor<8xf32> {
  %s = shard.sharding @huge split_axes = [[0]] : !shard.sharding
  // expected-error @+1 {{is placed on grid @huge whose axes must be static sizes in [1, 256]}}
  %0 = shard.shard %a to %s : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

shard.grid @g3(shape = 3)
func.func @negative_split_does_not_divide(%a: tensor<8xf32>) -> tensor<8xf32> {
  %s = shard.sharding @g3 split_axes = [[0]] : !shard.sharding
  // expected-error @+1 {{splits dimension 0 of size 8 over 3 chips, which do not divide it}}
  %0 = shard.shard %a to %s : tensor<8xf32>
  return %0 : tensor<8xf32>
}
