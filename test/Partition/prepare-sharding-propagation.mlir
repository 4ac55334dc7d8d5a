// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-prepare-sharding,sharding-propagation{traversal=forward-backward}))' | FileCheck %s

// One arange shared by the one-hot of a vocabulary split across the grid
// (a vocab-parallel LM head's cross-entropy) and the one-hot of a whole
// vocabulary (the embedding lookup): without a copy per use, the backward
// traversal of sharding-propagation asserts in getSharding(OpResult) (two
// shardings asked of one value). Each copy takes its user's sharding.
// CHECK-LABEL: func.func @shared_arange_split_and_whole
// CHECK: %[[A0:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<16xi64>)
// CHECK: } -> tensor<16xi64>
// CHECK-NEXT: %[[S0:.*]] = shard.sharding @grid split_axes = {{\[\[}}]] : !shard.sharding
// CHECK-NEXT: shard.shard %[[A0]] to %[[S0]] : tensor<16xi64>
// CHECK: %[[A1:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<16xi64>)
// CHECK: } -> tensor<16xi64>
// CHECK-NEXT: %[[S1:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK-NEXT: shard.shard %[[A1]] to %[[S1]] : tensor<16xi64>
#id = affine_map<(d0) -> (d0)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2)
func.func @shared_arange_split_and_whole(%ids: tensor<8xi64>, %y: tensor<8x16xf32>, %z: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %ys = shard.shard %y to %s annotate_for_users : tensor<8x16xf32>
  %r = shard.sharding @grid split_axes = [[], []] : !shard.sharding
  %zs = shard.shard %z to %r annotate_for_users : tensor<8x16xf32>
  %e = tensor.empty() : tensor<16xi64>
  %iota = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%e : tensor<16xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<16xi64>
  %e1 = tensor.empty() : tensor<8x16xf32>
  %a = linalg.generic {indexing_maps = [#row, #col, #all, #all], iterator_types = ["parallel", "parallel"]} ins(%ids, %iota, %ys : tensor<8xi64>, tensor<16xi64>, tensor<8x16xf32>) outs(%e1 : tensor<8x16xf32>) {
  ^bb0(%t: i64, %k: i64, %v: f32, %out: f32):
    %eq = arith.cmpi eq, %t, %k : i64
    %zero = arith.constant 0.0 : f32
    %p = arith.select %eq, %v, %zero : f32
    linalg.yield %p : f32
  } -> tensor<8x16xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %b = linalg.generic {indexing_maps = [#row, #col, #all, #all], iterator_types = ["parallel", "parallel"]} ins(%ids, %iota, %zs : tensor<8xi64>, tensor<16xi64>, tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%t: i64, %k: i64, %v: f32, %out: f32):
    %eq = arith.cmpi eq, %t, %k : i64
    %zero = arith.constant 0.0 : f32
    %p = arith.select %eq, %v, %zero : f32
    linalg.yield %p : f32
  } -> tensor<8x16xf32>
  %sa = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %ra = shard.shard %a to %sa : tensor<8x16xf32>
  %sb = shard.sharding @grid split_axes = [[], []] : !shard.sharding
  %rb = shard.shard %b to %sb : tensor<8x16xf32>
  return %ra, %rb : tensor<8x16xf32>, tensor<8x16xf32>
}
