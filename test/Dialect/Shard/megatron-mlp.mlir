// Probe of what upstream MLIR 22 gives for Megatron tensor parallelism: a
// two-matmul MLP annotated by hand (first weight split by columns, second by
// rows) partitions into per-chip matmuls and exactly one shard.all_reduce.
// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition,canonicalize))' | FileCheck %s

// CHECK: shard.grid @grid(shape = 2)
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W1:.*]]: tensor<16x16xf32>, %[[W2:.*]]: tensor<16x16xf32>) -> tensor<8x16xf32>
// CHECK-NOT: shard.all_
// CHECK: %[[H:.*]] = linalg.matmul ins(%[[X]], %[[W1]] : tensor<8x16xf32>, tensor<16x16xf32>)
// CHECK-NOT: shard.all_
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[H]], %[[W2]] : tensor<8x16xf32>, tensor<16x16xf32>)
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[P]] on @grid grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: return %[[R]]
shard.grid @grid(shape = 2)
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %s_col = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %s_row = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %s_rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %w1s = shard.shard %w1 to %s_col annotate_for_users : tensor<16x32xf32>
  %w2s = shard.shard %w2 to %s_row annotate_for_users : tensor<32x16xf32>
  %c0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x32xf32>
  %f1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = linalg.matmul ins(%x, %w1s : tensor<8x16xf32>, tensor<16x32xf32>) outs(%f1 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %f2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%h, %w2s : tensor<8x32xf32>, tensor<32x16xf32>) outs(%f2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %ys = shard.shard %y to %s_rep : tensor<8x16xf32>
  return %ys : tensor<8x16xf32>
}
