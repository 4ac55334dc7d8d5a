// The Megatron plan of nova.parallel (megatron_mlp_plan("fc1", "fc2") on a
// 2-chip mesh) as python/nova/parallel/annotate.py writes it on torch-mlir's
// MLP (Linear 16->32, exact GELU, Linear 32->16, batch 8). nova-partition
// gives per-chip weights, and exactly one collective: an all-reduce after the
// second matmul, before its (replicated) bias.
// RUN: nova-opt %s --nova-partition | FileCheck %s
// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-partition{propagate-only=true})' | FileCheck %s --check-prefix=PROP

// propagate-only stops after sharding propagation: whole shapes, every value
// annotated (the first matmul's result split over its columns, fc1's rows),
// no collective yet.
// PROP-LABEL: func.func @forward
// PROP-SAME: (%arg0: tensor<32x16xf32>, %arg1: tensor<32xf32>, %arg2: tensor<16x32xf32>, %arg3: tensor<16xf32>, %arg4: tensor<8x16xf32>) -> tensor<8x16xf32>
// PROP: shard.sharding @nova_mesh split_axes = {{\[}}[0], []]
// PROP-NOT: nova.all_
// PROP: linalg.matmul {{.*}} -> tensor<8x32xf32>
// PROP-NOT: nova.all_
// PROP: return

// CHECK-NOT: shard.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: tensor<16x16xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: tensor<16x16xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-NOT: nova.all_
// CHECK: linalg.matmul
// CHECK-NOT: nova.all_
// CHECK: math.erf
// CHECK-NOT: nova.all_
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK-NOT: nova.all_
// CHECK: %[[IN:.*]] = bufferization.to_buffer %[[P]] read_only
// CHECK: %[[T:.*]] = nova.all_reduce <sum> ins(%[[IN]] : {{.*}}) outs(%[[OUT:.*]] : {{.*}}) groups {{\[}}[0, 1]]
// CHECK: nova.wait %[[T]]
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]]
// CHECK-NOT: nova.all_
// CHECK: linalg.generic {{.*}} ins(%[[R]], %{{.*}} : tensor<8x16xf32>, tensor<16xf32>)
// CHECK-NOT: nova.all_
// CHECK-NOT: shard.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d1)>
module {
  shard.grid @nova_mesh(shape = 2)
  func.func @forward(%arg0: tensor<32x16xf32>, %arg1: tensor<32xf32>, %arg2: tensor<16x32xf32>, %arg3: tensor<16xf32>, %arg4: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %sharding = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated = shard.shard %arg0 to %sharding annotate_for_users : tensor<32x16xf32>
    %sharding_0 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %arg1 to %sharding_0 annotate_for_users : tensor<32xf32>
    %sharding_2 = shard.sharding @nova_mesh split_axes = [[], [0]] : !shard.sharding
    %sharding_annotated_3 = shard.shard %arg2 to %sharding_2 annotate_for_users : tensor<16x32xf32>
    %sharding_4 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_5 = shard.shard %arg3 to %sharding_4 annotate_for_users : tensor<16xf32>
    %sharding_6 = shard.sharding @nova_mesh split_axes = [[], []] : !shard.sharding
    %sharding_annotated_7 = shard.shard %arg4 to %sharding_6 annotate_for_users : tensor<8x16xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %cst_8 = arith.constant 0.70710678118654757 : f64
    %cst_9 = arith.constant 5.000000e-01 : f32
    %cst_10 = arith.constant 1.000000e+00 : f32
    %0 = tensor.empty() : tensor<16x32xf32>
    %transposed = linalg.transpose ins(%sharding_annotated : tensor<32x16xf32>) outs(%0 : tensor<16x32xf32>) permutation = [1, 0] 
    %1 = tensor.empty() : tensor<8x32xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<8x32xf32>) -> tensor<8x32xf32>
    %3 = linalg.matmul ins(%sharding_annotated_7, %transposed : tensor<8x16xf32>, tensor<16x32xf32>) outs(%2 : tensor<8x32xf32>) -> tensor<8x32xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%3, %sharding_annotated_1 : tensor<8x32xf32>, tensor<32xf32>) outs(%1 : tensor<8x32xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %15 = arith.addf %in, %in_14 : f32
      linalg.yield %15 : f32
    } -> tensor<8x32xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<8x32xf32>) outs(%1 : tensor<8x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %15 = arith.mulf %in, %cst_9 : f32
      linalg.yield %15 : f32
    } -> tensor<8x32xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<8x32xf32>) outs(%1 : tensor<8x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %15 = arith.truncf %cst_8 : f64 to f32
      %16 = arith.mulf %in, %15 : f32
      linalg.yield %16 : f32
    } -> tensor<8x32xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%6 : tensor<8x32xf32>) outs(%1 : tensor<8x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %15 = math.erf %in : f32
      linalg.yield %15 : f32
    } -> tensor<8x32xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%7 : tensor<8x32xf32>) outs(%1 : tensor<8x32xf32>) {
    ^bb0(%in: f32, %out: f32):
      %15 = arith.addf %in, %cst_10 : f32
      linalg.yield %15 : f32
    } -> tensor<8x32xf32>
    %9 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %8 : tensor<8x32xf32>, tensor<8x32xf32>) outs(%1 : tensor<8x32xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %15 = arith.mulf %in, %in_14 : f32
      linalg.yield %15 : f32
    } -> tensor<8x32xf32>
    %10 = tensor.empty() : tensor<32x16xf32>
    %transposed_11 = linalg.transpose ins(%sharding_annotated_3 : tensor<16x32xf32>) outs(%10 : tensor<32x16xf32>) permutation = [1, 0] 
    %11 = tensor.empty() : tensor<8x16xf32>
    %12 = linalg.fill ins(%cst : f32) outs(%11 : tensor<8x16xf32>) -> tensor<8x16xf32>
    %13 = linalg.matmul ins(%9, %transposed_11 : tensor<8x32xf32>, tensor<32x16xf32>) outs(%12 : tensor<8x16xf32>) -> tensor<8x16xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%13, %sharding_annotated_5 : tensor<8x16xf32>, tensor<16xf32>) outs(%11 : tensor<8x16xf32>) {
    ^bb0(%in: f32, %in_14: f32, %out: f32):
      %15 = arith.addf %in, %in_14 : f32
      linalg.yield %15 : f32
    } -> tensor<8x16xf32>
    %sharding_12 = shard.sharding @nova_mesh split_axes = [[], []] : !shard.sharding
    %sharding_annotated_13 = shard.shard %14 to %sharding_12 : tensor<8x16xf32>
    return %sharding_annotated_13 : tensor<8x16xf32>
  }
}

