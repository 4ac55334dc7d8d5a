// The training step of a GPT block under tensor parallelism: forward, loss
// (mean of squares), backward and an SGD update, traced by
// nova.compile_train_step and annotated by nova.training.data_parallel with
// megatron_transformer_plan(block) on a 2-chip "tp" mesh (d_model 16, 2 heads,
// batch 2 x seq 8). Only the parameters are placed; propagation and
// shard-partition carry the plan through the backward and the update, and
// Megatron's collectives come out: exactly four all-reduces, two in the
// forward (after attention's output projection, after fc2) and two in the
// backward (the fc1 input gradient; the q, k and v input gradients, summed
// first by nova-combine-all-reduces and reduced once), none on a parameter
// gradient and no all-gather (the backward's transposes of the saved q and k
// keep the heads split: nova-expand-batch-dims). Regenerate with
//   compile_train_step(GPTBlock(GPTConfig(d_model=16, n_heads=2, seq_len=8)),
//       lambda y: y.square().mean(), torch.optim.SGD(..., lr=0.1),
//       torch.randn(2, 8, 16), mesh=Mesh((2,), ("tp",)), plan=..., dump_dir=D)
// and D/0-sharded.mlir passed through nova-opt (locations dropped).
// RUN: nova-opt %s --nova-partition | FileCheck %s
// RUN: nova-opt %s --nova-partition | FileCheck %s --check-prefix=COUNT

// CHECK-LABEL: func.func @forward
// Each chip's q weight, bias and so on: 8 of 16 rows.
// CHECK-SAME: %arg2: tensor<8x16xf32> {nova.aliasing_output = 3 : i64}
// Forward: attention's output projection, then fc2.
// CHECK: nova.all_reduce <sum> ins(%{{.*}} : memref<16x16xf32, #nova.memory_space<hbm>>) {{.*}} groups {{\[}}[0, 1]]
// CHECK-NOT: nova.all_
// CHECK: math.erf
// CHECK-NOT: nova.all_
// CHECK: nova.all_reduce <sum> ins(%{{.*}} : memref<16x16xf32, #nova.memory_space<hbm>>) {{.*}} groups {{\[}}[0, 1]]
// Backward: fc1's input gradient, then q + k + v's in one.
// CHECK-NOT: nova.all_
// CHECK: nova.all_reduce <sum> ins(%{{.*}} : memref<16x16xf32, #nova.memory_space<hbm>>) {{.*}} groups {{\[}}[0, 1]]
// CHECK-NOT: nova.all_
// CHECK: nova.all_reduce <sum> ins(%{{.*}} : memref<2x8x16xf32, #nova.memory_space<hbm>>) {{.*}} groups {{\[}}[0, 1]]
// The updates: every parameter on its own shard, no collective.
// CHECK-NOT: nova.all_
// CHECK: return {{.*}} : tensor<f32>, tensor<16xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<16x8xf32>

// COUNT-COUNT-4: nova.all_reduce
// COUNT-NOT: nova.all_
// COUNT-NOT: nova.send

#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#map2 = affine_map<(d0, d1, d2) -> (d2)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1) -> (d1)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map6 = affine_map<(d0) -> (d0)>
#map7 = affine_map<(d0, d1) -> (0, d1)>
#map8 = affine_map<(d0, d1) -> (d0, 0)>
#map9 = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#map10 = affine_map<(d0, d1, d2, d3) -> ()>
#map11 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#map12 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map13 = affine_map<(d0, d1, d2) -> ()>
#map14 = affine_map<() -> ()>
#map15 = affine_map<(d0) -> ()>
#map16 = affine_map<(d0, d1) -> ()>
module {
  shard.grid @nova_mesh(shape = 2)
  func.func @forward(%arg0: tensor<16xf32> {nova.aliasing_output = 1 : i64}, %arg1: tensor<16xf32> {nova.aliasing_output = 2 : i64}, %arg2: tensor<16x16xf32> {nova.aliasing_output = 3 : i64}, %arg3: tensor<16xf32> {nova.aliasing_output = 4 : i64}, %arg4: tensor<16x16xf32> {nova.aliasing_output = 5 : i64}, %arg5: tensor<16xf32> {nova.aliasing_output = 6 : i64}, %arg6: tensor<16x16xf32> {nova.aliasing_output = 7 : i64}, %arg7: tensor<16xf32> {nova.aliasing_output = 8 : i64}, %arg8: tensor<16x16xf32> {nova.aliasing_output = 9 : i64}, %arg9: tensor<16xf32> {nova.aliasing_output = 10 : i64}, %arg10: tensor<16xf32> {nova.aliasing_output = 11 : i64}, %arg11: tensor<16xf32> {nova.aliasing_output = 12 : i64}, %arg12: tensor<64x16xf32> {nova.aliasing_output = 13 : i64}, %arg13: tensor<64xf32> {nova.aliasing_output = 14 : i64}, %arg14: tensor<16x64xf32> {nova.aliasing_output = 15 : i64}, %arg15: tensor<16xf32> {nova.aliasing_output = 16 : i64}, %arg16: tensor<f32>, %arg17: tensor<f32>, %arg18: tensor<2x8x16xf32>) -> (tensor<f32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<16xf32>) {
    %sharding = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated = shard.shard %arg0 to %sharding annotate_for_users : tensor<16xf32>
    %sharding_0 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %arg1 to %sharding_0 annotate_for_users : tensor<16xf32>
    %sharding_2 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_3 = shard.shard %arg2 to %sharding_2 annotate_for_users : tensor<16x16xf32>
    %sharding_4 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_5 = shard.shard %arg3 to %sharding_4 annotate_for_users : tensor<16xf32>
    %sharding_6 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_7 = shard.shard %arg4 to %sharding_6 annotate_for_users : tensor<16x16xf32>
    %sharding_8 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_9 = shard.shard %arg5 to %sharding_8 annotate_for_users : tensor<16xf32>
    %sharding_10 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_11 = shard.shard %arg6 to %sharding_10 annotate_for_users : tensor<16x16xf32>
    %sharding_12 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_13 = shard.shard %arg7 to %sharding_12 annotate_for_users : tensor<16xf32>
    %sharding_14 = shard.sharding @nova_mesh split_axes = [[], [0]] : !shard.sharding
    %sharding_annotated_15 = shard.shard %arg8 to %sharding_14 annotate_for_users : tensor<16x16xf32>
    %sharding_16 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_17 = shard.shard %arg9 to %sharding_16 annotate_for_users : tensor<16xf32>
    %sharding_18 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_19 = shard.shard %arg10 to %sharding_18 annotate_for_users : tensor<16xf32>
    %sharding_20 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_21 = shard.shard %arg11 to %sharding_20 annotate_for_users : tensor<16xf32>
    %sharding_22 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_23 = shard.shard %arg12 to %sharding_22 annotate_for_users : tensor<64x16xf32>
    %sharding_24 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_25 = shard.shard %arg13 to %sharding_24 annotate_for_users : tensor<64xf32>
    %sharding_26 = shard.sharding @nova_mesh split_axes = [[], [0]] : !shard.sharding
    %sharding_annotated_27 = shard.shard %arg14 to %sharding_26 annotate_for_users : tensor<16x64xf32>
    %sharding_28 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_29 = shard.shard %arg15 to %sharding_28 annotate_for_users : tensor<16xf32>
    %sharding_30 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_31 = shard.shard %arg16 to %sharding_30 annotate_for_users : tensor<f32>
    %sharding_32 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_33 = shard.shard %arg17 to %sharding_32 annotate_for_users : tensor<f32>
    %sharding_34 = shard.sharding @nova_mesh split_axes = [[], [], []] : !shard.sharding
    %sharding_annotated_35 = shard.shard %arg18 to %sharding_34 annotate_for_users : tensor<2x8x16xf32>
    %c1_i64 = arith.constant 1 : i64
    %c0_i64 = arith.constant 0 : i64
    %c2_i64 = arith.constant 2 : i64
    %cst = arith.constant 0.000000e+00 : f64
    %cst_36 = arith.constant 0.000000e+00 : f32
    %true = arith.constant true
    %cst_37 = arith.constant 0xFF800000 : f32
    %cst_38 = arith.constant dense<0.000000e+00> : tensor<f32>
    %cst_39 = arith.constant dense<1.000000e+00> : tensor<2x8x16xf32>
    %cst_40 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_41 = arith.constant dense<true> : tensor<8x8xi1>
    %cst_42 = arith.constant 0.3989422804014327 : f64
    %cst_43 = arith.constant 0.70710678118654757 : f64
    %cst_44 = arith.constant 0.35355339059327373 : f64
    %cst_45 = arith.constant 1.000000e-05 : f64
    %cst_46 = arith.constant 1.600000e+01 : f64
    %cst_47 = arith.constant 1.600000e+01 : f32
    %cst_48 = arith.constant 5.000000e-01 : f32
    %cst_49 = arith.constant 1.000000e+00 : f32
    %cst_50 = arith.constant 2.560000e+02 : f32
    %cst_51 = arith.constant 2.000000e+00 : f32
    %cst_52 = arith.constant -5.000000e-01 : f32
    %0 = tensor.empty() : tensor<2x8x16xf64>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated_35 : tensor<2x8x16xf32>) outs(%0 : tensor<2x8x16xf64>) {
    ^bb0(%in: f32, %out: f64):
      %226 = arith.extf %in : f32 to f64
      linalg.yield %226 : f64
    } -> tensor<2x8x16xf64>
    %2 = tensor.empty() : tensor<2x8x1xf64>
    %3 = linalg.fill ins(%cst : f64) outs(%2 : tensor<2x8x1xf64>) -> tensor<2x8x1xf64>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%1 : tensor<2x8x16xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %226 = arith.addf %in, %out : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x1xf64>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %226 = arith.divf %in, %cst_46 : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x1xf64>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %5 : tensor<2x8x16xf64>, tensor<2x8x1xf64>) outs(%0 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_151: f64, %out: f64):
      %226 = arith.subf %in, %in_151 : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x16xf64>
    %7 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6, %6 : tensor<2x8x16xf64>, tensor<2x8x16xf64>) outs(%0 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_151: f64, %out: f64):
      %226 = arith.mulf %in, %in_151 : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x16xf64>
    %8 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x8x16xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %226 = arith.addf %in, %out : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x1xf64>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%8 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %226 = arith.divf %in, %cst_46 : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x1xf64>
    %10 = tensor.empty() : tensor<2x8x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9 : tensor<2x8x1xf64>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %226 = arith.truncf %in : f64 to f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %12 = linalg.fill ins(%cst_36 : f32) outs(%10 : tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%sharding_annotated_35 : tensor<2x8x16xf32>) outs(%12 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%13 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.divf %in, %cst_47 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.truncf %cst_45 : f64 to f32
      %227 = arith.addf %in, %226 : f32
      linalg.yield %227 : f32
    } -> tensor<2x8x1xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = math.rsqrt %in : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %17 = tensor.empty() : tensor<2x8x16xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated_35, %14 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %19 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%18, %16 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %20 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%19, %sharding_annotated : tensor<2x8x16xf32>, tensor<16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %21 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20, %sharding_annotated_1 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %collapsed = tensor.collapse_shape %21 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %22 = tensor.empty() : tensor<16x16xf32>
    %transposed = linalg.transpose ins(%sharding_annotated_3 : tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) permutation = [1, 0] 
    %23 = linalg.fill ins(%cst_36 : f32) outs(%22 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %24 = linalg.matmul ins(%collapsed, %transposed : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %25 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%24, %sharding_annotated_5 : tensor<16x16xf32>, tensor<16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %transposed_53 = linalg.transpose ins(%sharding_annotated_7 : tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) permutation = [1, 0] 
    %26 = linalg.matmul ins(%collapsed, %transposed_53 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %27 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%26, %sharding_annotated_9 : tensor<16x16xf32>, tensor<16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %transposed_54 = linalg.transpose ins(%sharding_annotated_11 : tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) permutation = [1, 0] 
    %28 = linalg.matmul ins(%collapsed, %transposed_54 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %29 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%28, %sharding_annotated_13 : tensor<16x16xf32>, tensor<16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %expanded = tensor.expand_shape %25 [[0, 1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<16x16xf32> into tensor<2x8x2x8xf32>
    %30 = tensor.empty() : tensor<2x2x8x8xf32>
    %transposed_55 = linalg.transpose ins(%expanded : tensor<2x8x2x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %expanded_56 = tensor.expand_shape %27 [[0, 1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<16x16xf32> into tensor<2x8x2x8xf32>
    %expanded_57 = tensor.expand_shape %29 [[0, 1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<16x16xf32> into tensor<2x8x2x8xf32>
    %transposed_58 = linalg.transpose ins(%expanded_57 : tensor<2x8x2x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %transposed_59 = linalg.transpose ins(%expanded_56 : tensor<2x8x2x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) permutation = [0, 2, 3, 1] 
    %collapsed_60 = tensor.collapse_shape %transposed_55 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %collapsed_61 = tensor.collapse_shape %transposed_59 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %31 = tensor.empty() : tensor<4x8x8xf32>
    %32 = linalg.fill ins(%cst_36 : f32) outs(%31 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %33 = linalg.batch_matmul ins(%collapsed_60, %collapsed_61 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%32 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %expanded_62 = tensor.expand_shape %33 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %34 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_62 : tensor<2x2x8x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.truncf %cst_44 : f64 to f32
      %227 = arith.mulf %in, %226 : f32
      linalg.yield %227 : f32
    } -> tensor<2x2x8x8xf32>
    %35 = tensor.empty() : tensor<8xi64>
    %36 = linalg.generic {indexing_maps = [#map6], iterator_types = ["parallel"]} outs(%35 : tensor<8xi64>) {
    ^bb0(%out: i64):
      %226 = linalg.index 0 : index
      %227 = arith.index_cast %226 : index to i64
      linalg.yield %227 : i64
    } -> tensor<8xi64>
    %expanded_63 = tensor.expand_shape %36 [[0, 1]] output_shape [1, 8] : tensor<8xi64> into tensor<1x8xi64>
    %expanded_64 = tensor.expand_shape %36 [[0, 1]] output_shape [8, 1] : tensor<8xi64> into tensor<8x1xi64>
    %37 = tensor.empty() : tensor<8x8xi64>
    %38 = linalg.generic {indexing_maps = [#map7, #map8, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_63, %expanded_64 : tensor<1x8xi64>, tensor<8x1xi64>) outs(%37 : tensor<8x8xi64>) {
    ^bb0(%in: i64, %in_151: i64, %out: i64):
      %226 = arith.subi %in, %in_151 : i64
      linalg.yield %226 : i64
    } -> tensor<8x8xi64>
    %39 = tensor.empty() : tensor<8x8xi1>
    %40 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%38 : tensor<8x8xi64>) outs(%39 : tensor<8x8xi1>) {
    ^bb0(%in: i64, %out: i1):
      %226 = arith.cmpi sle, %in, %c0_i64 : i64
      linalg.yield %226 : i1
    } -> tensor<8x8xi1>
    %41 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%40, %cst_41 : tensor<8x8xi1>, tensor<8x8xi1>) outs(%39 : tensor<8x8xi1>) {
    ^bb0(%in: i1, %in_151: i1, %out: i1):
      %226 = arith.andi %in, %in_151 : i1
      linalg.yield %226 : i1
    } -> tensor<8x8xi1>
    %42 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%41 : tensor<8x8xi1>) outs(%39 : tensor<8x8xi1>) {
    ^bb0(%in: i1, %out: i1):
      %226 = arith.xori %in, %true : i1
      linalg.yield %226 : i1
    } -> tensor<8x8xi1>
    %43 = linalg.generic {indexing_maps = [#map9, #map10, #map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%42, %cst_40, %34 : tensor<8x8xi1>, tensor<f32>, tensor<2x2x8x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: i1, %in_151: f32, %in_152: f32, %out: f32):
      %226 = arith.select %in, %in_151, %in_152 : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x8xf32>
    %44 = tensor.empty() : tensor<2x2x8xi64>
    %45 = linalg.fill ins(%c0_i64 : i64) outs(%44 : tensor<2x2x8xi64>) -> tensor<2x2x8xi64>
    %46 = tensor.empty() : tensor<2x2x8xf32>
    %47 = linalg.fill ins(%cst_37 : f32) outs(%46 : tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %48:2 = linalg.generic {indexing_maps = [#map5, #map11, #map11], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%43 : tensor<2x2x8x8xf32>) outs(%47, %45 : tensor<2x2x8xf32>, tensor<2x2x8xi64>) {
    ^bb0(%in: f32, %out: f32, %out_151: i64):
      %226 = linalg.index 3 : index
      %227 = arith.index_cast %226 : index to i64
      %228 = arith.maximumf %in, %out : f32
      %229 = arith.cmpf ogt, %in, %out : f32
      %230 = arith.select %229, %227, %out_151 : i64
      linalg.yield %228, %230 : f32, i64
    } -> (tensor<2x2x8xf32>, tensor<2x2x8xi64>)
    %expanded_65 = tensor.expand_shape %48#0 [[0], [1], [2, 3]] output_shape [2, 2, 8, 1] : tensor<2x2x8xf32> into tensor<2x2x8x1xf32>
    %49 = linalg.generic {indexing_maps = [#map5, #map12, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%43, %expanded_65 : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x8xf32>
    %50 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%49 : tensor<2x2x8x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = math.exp %in : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x8xf32>
    %51 = tensor.empty() : tensor<2x2x8x1xf32>
    %52 = linalg.fill ins(%cst_36 : f32) outs(%51 : tensor<2x2x8x1xf32>) -> tensor<2x2x8x1xf32>
    %53 = linalg.generic {indexing_maps = [#map5, #map12], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%50 : tensor<2x2x8x8xf32>) outs(%52 : tensor<2x2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x1xf32>
    %54 = linalg.generic {indexing_maps = [#map5, #map12, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%50, %53 : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.divf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x8xf32>
    %collapsed_66 = tensor.collapse_shape %54 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %collapsed_67 = tensor.collapse_shape %transposed_58 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %55 = linalg.batch_matmul ins(%collapsed_66, %collapsed_67 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%32 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %expanded_68 = tensor.expand_shape %55 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %56 = tensor.empty() : tensor<2x8x2x8xf32>
    %transposed_69 = linalg.transpose ins(%expanded_68 : tensor<2x2x8x8xf32>) outs(%56 : tensor<2x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_70 = tensor.collapse_shape %transposed_69 [[0, 1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<16x16xf32>
    %transposed_71 = linalg.transpose ins(%sharding_annotated_15 : tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) permutation = [1, 0] 
    %57 = linalg.matmul ins(%collapsed_70, %transposed_71 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %58 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%57, %sharding_annotated_17 : tensor<16x16xf32>, tensor<16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %expanded_72 = tensor.expand_shape %58 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %59 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated_35, %expanded_72 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %60 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%59 : tensor<2x8x16xf32>) outs(%0 : tensor<2x8x16xf64>) {
    ^bb0(%in: f32, %out: f64):
      %226 = arith.extf %in : f32 to f64
      linalg.yield %226 : f64
    } -> tensor<2x8x16xf64>
    %61 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%60 : tensor<2x8x16xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %226 = arith.addf %in, %out : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x1xf64>
    %62 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%61 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %226 = arith.divf %in, %cst_46 : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x1xf64>
    %63 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%60, %62 : tensor<2x8x16xf64>, tensor<2x8x1xf64>) outs(%0 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_151: f64, %out: f64):
      %226 = arith.subf %in, %in_151 : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x16xf64>
    %64 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%63, %63 : tensor<2x8x16xf64>, tensor<2x8x16xf64>) outs(%0 : tensor<2x8x16xf64>) {
    ^bb0(%in: f64, %in_151: f64, %out: f64):
      %226 = arith.mulf %in, %in_151 : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x16xf64>
    %65 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%64 : tensor<2x8x16xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %226 = arith.addf %in, %out : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x1xf64>
    %66 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%65 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %226 = arith.divf %in, %cst_46 : f64
      linalg.yield %226 : f64
    } -> tensor<2x8x1xf64>
    %67 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%66 : tensor<2x8x1xf64>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %226 = arith.truncf %in : f64 to f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %68 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%59 : tensor<2x8x16xf32>) outs(%12 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %69 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%68 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.divf %in, %cst_47 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %70 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%67 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.truncf %cst_45 : f64 to f32
      %227 = arith.addf %in, %226 : f32
      linalg.yield %227 : f32
    } -> tensor<2x8x1xf32>
    %71 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%70 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = math.rsqrt %in : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %72 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%59, %69 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %73 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%72, %71 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %74 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%73, %sharding_annotated_19 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %75 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%74, %sharding_annotated_21 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %collapsed_73 = tensor.collapse_shape %75 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %76 = tensor.empty() : tensor<16x64xf32>
    %transposed_74 = linalg.transpose ins(%sharding_annotated_23 : tensor<64x16xf32>) outs(%76 : tensor<16x64xf32>) permutation = [1, 0] 
    %77 = linalg.fill ins(%cst_36 : f32) outs(%76 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %78 = linalg.matmul ins(%collapsed_73, %transposed_74 : tensor<16x16xf32>, tensor<16x64xf32>) outs(%77 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %79 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%78, %sharding_annotated_25 : tensor<16x64xf32>, tensor<64xf32>) outs(%76 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x64xf32>
    %expanded_75 = tensor.expand_shape %79 [[0, 1], [2]] output_shape [2, 8, 64] : tensor<16x64xf32> into tensor<2x8x64xf32>
    %80 = tensor.empty() : tensor<2x8x64xf32>
    %81 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_75 : tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.mulf %in, %cst_48 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %82 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_75 : tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.truncf %cst_43 : f64 to f32
      %227 = arith.mulf %in, %226 : f32
      linalg.yield %227 : f32
    } -> tensor<2x8x64xf32>
    %83 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%82 : tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = math.erf %in : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %84 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%83 : tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %cst_49 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %85 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%81, %84 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %collapsed_76 = tensor.collapse_shape %85 [[0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
    %86 = tensor.empty() : tensor<64x16xf32>
    %transposed_77 = linalg.transpose ins(%sharding_annotated_27 : tensor<16x64xf32>) outs(%86 : tensor<64x16xf32>) permutation = [1, 0] 
    %87 = linalg.matmul ins(%collapsed_76, %transposed_77 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %88 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%87, %sharding_annotated_29 : tensor<16x16xf32>, tensor<16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %expanded_78 = tensor.expand_shape %88 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %89 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%59, %expanded_78 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %90 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%89 : tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = math.fpowi %in, %c2_i64 : f32, i64
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %91 = tensor.empty() : tensor<f32>
    %92 = linalg.fill ins(%cst_36 : f32) outs(%91 : tensor<f32>) -> tensor<f32>
    %93 = linalg.generic {indexing_maps = [#map, #map13], iterator_types = ["reduction", "reduction", "reduction"]} ins(%90 : tensor<2x8x16xf32>) outs(%92 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<f32>
    %94 = linalg.generic {indexing_maps = [#map14, #map14], iterator_types = []} ins(%93 : tensor<f32>) outs(%91 : tensor<f32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.divf %in, %cst_50 : f32
      linalg.yield %226 : f32
    } -> tensor<f32>
    %95 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%cst_39 : tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.divf %in, %cst_50 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %96 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%89 : tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = math.fpowi %in, %c1_i64 : f32, i64
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %97 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%96 : tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.mulf %in, %cst_51 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %98 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%95, %97 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %collapsed_79 = tensor.collapse_shape %98 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %99 = linalg.matmul ins(%collapsed_79, %sharding_annotated_27 : tensor<16x16xf32>, tensor<16x64xf32>) outs(%77 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %transposed_80 = linalg.transpose ins(%collapsed_79 : tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) permutation = [1, 0] 
    %100 = linalg.matmul ins(%transposed_80, %collapsed_76 : tensor<16x16xf32>, tensor<16x64xf32>) outs(%77 : tensor<16x64xf32>) -> tensor<16x64xf32>
    %101 = tensor.empty() : tensor<1x16xf32>
    %102 = linalg.fill ins(%cst_36 : f32) outs(%101 : tensor<1x16xf32>) -> tensor<1x16xf32>
    %103 = linalg.generic {indexing_maps = [#map3, #map7], iterator_types = ["reduction", "parallel"]} ins(%collapsed_79 : tensor<16x16xf32>) outs(%102 : tensor<1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<1x16xf32>
    %collapsed_81 = tensor.collapse_shape %103 [[0, 1]] : tensor<1x16xf32> into tensor<16xf32>
    %expanded_82 = tensor.expand_shape %99 [[0, 1], [2]] output_shape [2, 8, 64] : tensor<16x64xf32> into tensor<2x8x64xf32>
    %104 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%84 : tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.mulf %in, %cst_48 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %105 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_75, %expanded_75 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %106 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%105 : tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.mulf %in, %cst_52 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %107 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%106 : tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = math.exp %in : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %108 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%107 : tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.truncf %cst_42 : f64 to f32
      %227 = arith.mulf %in, %226 : f32
      linalg.yield %227 : f32
    } -> tensor<2x8x64xf32>
    %109 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_75, %108 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %110 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%104, %109 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %111 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_82, %110 : tensor<2x8x64xf32>, tensor<2x8x64xf32>) outs(%80 : tensor<2x8x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x64xf32>
    %collapsed_83 = tensor.collapse_shape %111 [[0, 1], [2]] : tensor<2x8x64xf32> into tensor<16x64xf32>
    %112 = linalg.matmul ins(%collapsed_83, %sharding_annotated_23 : tensor<16x64xf32>, tensor<64x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %transposed_84 = linalg.transpose ins(%collapsed_83 : tensor<16x64xf32>) outs(%86 : tensor<64x16xf32>) permutation = [1, 0] 
    %113 = linalg.fill ins(%cst_36 : f32) outs(%86 : tensor<64x16xf32>) -> tensor<64x16xf32>
    %114 = linalg.matmul ins(%transposed_84, %collapsed_73 : tensor<64x16xf32>, tensor<16x16xf32>) outs(%113 : tensor<64x16xf32>) -> tensor<64x16xf32>
    %115 = tensor.empty() : tensor<1x64xf32>
    %116 = linalg.fill ins(%cst_36 : f32) outs(%115 : tensor<1x64xf32>) -> tensor<1x64xf32>
    %117 = linalg.generic {indexing_maps = [#map3, #map7], iterator_types = ["reduction", "parallel"]} ins(%collapsed_83 : tensor<16x64xf32>) outs(%116 : tensor<1x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<1x64xf32>
    %collapsed_85 = tensor.collapse_shape %117 [[0, 1]] : tensor<1x64xf32> into tensor<64xf32>
    %expanded_86 = tensor.expand_shape %112 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %118 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_86, %sharding_annotated_19 : tensor<2x8x16xf32>, tensor<16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %119 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%118 : tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.mulf %in, %cst_47 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %120 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%118 : tensor<2x8x16xf32>) outs(%12 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %121 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%118, %73 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %122 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%121 : tensor<2x8x16xf32>) outs(%12 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %123 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%73, %122 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %124 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%119, %120 : tensor<2x8x16xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %125 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%124, %123 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %126 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%71 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.divf %in, %cst_47 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x1xf32>
    %127 = linalg.generic {indexing_maps = [#map1, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%126, %125 : tensor<2x8x1xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %128 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_86, %73 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %129 = tensor.empty() : tensor<16xf32>
    %130 = linalg.fill ins(%cst_36 : f32) outs(%129 : tensor<16xf32>) -> tensor<16xf32>
    %131 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["reduction", "reduction", "parallel"]} ins(%128 : tensor<2x8x16xf32>) outs(%130 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %132 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["reduction", "reduction", "parallel"]} ins(%expanded_86 : tensor<2x8x16xf32>) outs(%130 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %133 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%98, %127 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %collapsed_87 = tensor.collapse_shape %133 [[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
    %134 = linalg.matmul ins(%collapsed_87, %sharding_annotated_15 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %transposed_88 = linalg.transpose ins(%collapsed_87 : tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) permutation = [1, 0] 
    %135 = linalg.matmul ins(%transposed_88, %collapsed_70 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %136 = linalg.generic {indexing_maps = [#map3, #map7], iterator_types = ["reduction", "parallel"]} ins(%collapsed_87 : tensor<16x16xf32>) outs(%102 : tensor<1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<1x16xf32>
    %collapsed_89 = tensor.collapse_shape %136 [[0, 1]] : tensor<1x16xf32> into tensor<16xf32>
    %expanded_90 = tensor.expand_shape %134 [[0, 1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<16x16xf32> into tensor<2x8x2x8xf32>
    %transposed_91 = linalg.transpose ins(%expanded_90 : tensor<2x8x2x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_92 = tensor.collapse_shape %transposed_91 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %transposed_93 = linalg.transpose ins(%collapsed_66 : tensor<4x8x8xf32>) outs(%31 : tensor<4x8x8xf32>) permutation = [0, 2, 1] 
    %137 = linalg.batch_matmul ins(%transposed_93, %collapsed_92 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%32 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %transposed_94 = linalg.transpose ins(%collapsed_67 : tensor<4x8x8xf32>) outs(%31 : tensor<4x8x8xf32>) permutation = [0, 2, 1] 
    %138 = linalg.batch_matmul ins(%collapsed_92, %transposed_94 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%32 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %expanded_95 = tensor.expand_shape %137 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %expanded_96 = tensor.expand_shape %138 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %139 = linalg.generic {indexing_maps = [#map5, #map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_96, %54 : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x8xf32>
    %140 = linalg.generic {indexing_maps = [#map5, #map12], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%139 : tensor<2x2x8x8xf32>) outs(%52 : tensor<2x2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x1xf32>
    %141 = linalg.generic {indexing_maps = [#map5, #map12, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%54, %140 : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x8xf32>
    %142 = linalg.generic {indexing_maps = [#map5, #map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%139, %141 : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x8xf32>
    %143 = linalg.generic {indexing_maps = [#map9, #map10, #map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%42, %cst_38, %142 : tensor<8x8xi1>, tensor<f32>, tensor<2x2x8x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: i1, %in_151: f32, %in_152: f32, %out: f32):
      %226 = arith.select %in, %in_151, %in_152 : f32
      linalg.yield %226 : f32
    } -> tensor<2x2x8x8xf32>
    %144 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%143 : tensor<2x2x8x8xf32>) outs(%30 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.truncf %cst_44 : f64 to f32
      %227 = arith.mulf %in, %226 : f32
      linalg.yield %227 : f32
    } -> tensor<2x2x8x8xf32>
    %collapsed_97 = tensor.collapse_shape %144 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %transposed_98 = linalg.transpose ins(%collapsed_60 : tensor<4x8x8xf32>) outs(%31 : tensor<4x8x8xf32>) permutation = [0, 2, 1] 
    %145 = linalg.batch_matmul ins(%transposed_98, %collapsed_97 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%32 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %transposed_99 = linalg.transpose ins(%collapsed_61 : tensor<4x8x8xf32>) outs(%31 : tensor<4x8x8xf32>) permutation = [0, 2, 1] 
    %146 = linalg.batch_matmul ins(%collapsed_97, %transposed_99 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%32 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %expanded_100 = tensor.expand_shape %145 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %expanded_101 = tensor.expand_shape %146 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %transposed_102 = linalg.transpose ins(%expanded_95 : tensor<2x2x8x8xf32>) outs(%56 : tensor<2x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %transposed_103 = linalg.transpose ins(%expanded_100 : tensor<2x2x8x8xf32>) outs(%56 : tensor<2x8x2x8xf32>) permutation = [0, 3, 1, 2] 
    %transposed_104 = linalg.transpose ins(%expanded_101 : tensor<2x2x8x8xf32>) outs(%56 : tensor<2x8x2x8xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_105 = tensor.collapse_shape %transposed_102 [[0, 1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<16x16xf32>
    %147 = linalg.matmul ins(%collapsed_105, %sharding_annotated_11 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %transposed_106 = linalg.transpose ins(%collapsed_105 : tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) permutation = [1, 0] 
    %148 = linalg.matmul ins(%transposed_106, %collapsed : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %149 = linalg.generic {indexing_maps = [#map3, #map7], iterator_types = ["reduction", "parallel"]} ins(%collapsed_105 : tensor<16x16xf32>) outs(%102 : tensor<1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<1x16xf32>
    %collapsed_107 = tensor.collapse_shape %149 [[0, 1]] : tensor<1x16xf32> into tensor<16xf32>
    %expanded_108 = tensor.expand_shape %147 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %collapsed_109 = tensor.collapse_shape %transposed_103 [[0, 1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<16x16xf32>
    %150 = linalg.matmul ins(%collapsed_109, %sharding_annotated_7 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %transposed_110 = linalg.transpose ins(%collapsed_109 : tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) permutation = [1, 0] 
    %151 = linalg.matmul ins(%transposed_110, %collapsed : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %152 = linalg.generic {indexing_maps = [#map3, #map7], iterator_types = ["reduction", "parallel"]} ins(%collapsed_109 : tensor<16x16xf32>) outs(%102 : tensor<1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<1x16xf32>
    %collapsed_111 = tensor.collapse_shape %152 [[0, 1]] : tensor<1x16xf32> into tensor<16xf32>
    %expanded_112 = tensor.expand_shape %150 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %153 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_108, %expanded_112 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %collapsed_113 = tensor.collapse_shape %transposed_104 [[0, 1], [2, 3]] : tensor<2x8x2x8xf32> into tensor<16x16xf32>
    %154 = linalg.matmul ins(%collapsed_113, %sharding_annotated_3 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %transposed_114 = linalg.transpose ins(%collapsed_113 : tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) permutation = [1, 0] 
    %155 = linalg.matmul ins(%transposed_114, %collapsed : tensor<16x16xf32>, tensor<16x16xf32>) outs(%23 : tensor<16x16xf32>) -> tensor<16x16xf32>
    %156 = linalg.generic {indexing_maps = [#map3, #map7], iterator_types = ["reduction", "parallel"]} ins(%collapsed_113 : tensor<16x16xf32>) outs(%102 : tensor<1x16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<1x16xf32>
    %collapsed_115 = tensor.collapse_shape %156 [[0, 1]] : tensor<1x16xf32> into tensor<16xf32>
    %expanded_116 = tensor.expand_shape %154 [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
    %157 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%153, %expanded_116 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %158 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%157, %19 : tensor<2x8x16xf32>, tensor<2x8x16xf32>) outs(%17 : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<2x8x16xf32>
    %159 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["reduction", "reduction", "parallel"]} ins(%158 : tensor<2x8x16xf32>) outs(%130 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %160 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["reduction", "reduction", "parallel"]} ins(%157 : tensor<2x8x16xf32>) outs(%130 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %226 = arith.addf %in, %out : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %161 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %162 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%159, %161 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %163 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %162 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %164 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated, %163 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %165 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated_1 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %166 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%160, %165 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %167 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %166 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %168 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_1, %167 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %169 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_33, %sharding_annotated_3 : tensor<f32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %170 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%155, %169 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %171 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_31, %170 : tensor<f32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %172 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_3, %171 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %173 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated_5 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %174 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%collapsed_115, %173 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %175 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %174 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %176 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_5, %175 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %177 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_33, %sharding_annotated_7 : tensor<f32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %178 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%151, %177 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %179 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_31, %178 : tensor<f32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %180 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_7, %179 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %181 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated_9 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %182 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%collapsed_111, %181 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %183 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %182 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %184 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_9, %183 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %185 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_33, %sharding_annotated_11 : tensor<f32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %186 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%148, %185 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %187 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_31, %186 : tensor<f32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %188 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_11, %187 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %189 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated_13 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %190 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%collapsed_107, %189 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %191 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %190 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %192 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_13, %191 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %193 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_33, %sharding_annotated_15 : tensor<f32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %194 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%135, %193 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %195 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_31, %194 : tensor<f32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %196 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_15, %195 : tensor<16x16xf32>, tensor<16x16xf32>) outs(%22 : tensor<16x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x16xf32>
    %197 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated_17 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %198 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%collapsed_89, %197 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %199 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %198 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %200 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_17, %199 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %201 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated_19 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %202 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%131, %201 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %203 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %202 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %204 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_19, %203 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %205 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated_21 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %206 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%132, %205 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %207 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %206 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %208 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_21, %207 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %209 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_33, %sharding_annotated_23 : tensor<f32>, tensor<64x16xf32>) outs(%86 : tensor<64x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<64x16xf32>
    %210 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%114, %209 : tensor<64x16xf32>, tensor<64x16xf32>) outs(%86 : tensor<64x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<64x16xf32>
    %211 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_31, %210 : tensor<f32>, tensor<64x16xf32>) outs(%86 : tensor<64x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<64x16xf32>
    %212 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_23, %211 : tensor<64x16xf32>, tensor<64x16xf32>) outs(%86 : tensor<64x16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<64x16xf32>
    %213 = tensor.empty() : tensor<64xf32>
    %214 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated_25 : tensor<f32>, tensor<64xf32>) outs(%213 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<64xf32>
    %215 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%collapsed_85, %214 : tensor<64xf32>, tensor<64xf32>) outs(%213 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<64xf32>
    %216 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %215 : tensor<f32>, tensor<64xf32>) outs(%213 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<64xf32>
    %217 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_25, %216 : tensor<64xf32>, tensor<64xf32>) outs(%213 : tensor<64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<64xf32>
    %218 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_33, %sharding_annotated_27 : tensor<f32>, tensor<16x64xf32>) outs(%76 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x64xf32>
    %219 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%100, %218 : tensor<16x64xf32>, tensor<16x64xf32>) outs(%76 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x64xf32>
    %220 = linalg.generic {indexing_maps = [#map16, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_31, %219 : tensor<f32>, tensor<16x64xf32>) outs(%76 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x64xf32>
    %221 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%sharding_annotated_27, %220 : tensor<16x64xf32>, tensor<16x64xf32>) outs(%76 : tensor<16x64xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16x64xf32>
    %222 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_33, %sharding_annotated_29 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %223 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%collapsed_81, %222 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.addf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %224 = linalg.generic {indexing_maps = [#map15, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_31, %223 : tensor<f32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.mulf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %225 = linalg.generic {indexing_maps = [#map6, #map6, #map6], iterator_types = ["parallel"]} ins(%sharding_annotated_29, %224 : tensor<16xf32>, tensor<16xf32>) outs(%129 : tensor<16xf32>) {
    ^bb0(%in: f32, %in_151: f32, %out: f32):
      %226 = arith.subf %in, %in_151 : f32
      linalg.yield %226 : f32
    } -> tensor<16xf32>
    %sharding_117 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_118 = shard.shard %94 to %sharding_117 : tensor<f32>
    %sharding_119 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_120 = shard.shard %164 to %sharding_119 : tensor<16xf32>
    %sharding_121 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_122 = shard.shard %168 to %sharding_121 : tensor<16xf32>
    %sharding_123 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_124 = shard.shard %172 to %sharding_123 : tensor<16x16xf32>
    %sharding_125 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_126 = shard.shard %176 to %sharding_125 : tensor<16xf32>
    %sharding_127 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_128 = shard.shard %180 to %sharding_127 : tensor<16x16xf32>
    %sharding_129 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_130 = shard.shard %184 to %sharding_129 : tensor<16xf32>
    %sharding_131 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_132 = shard.shard %188 to %sharding_131 : tensor<16x16xf32>
    %sharding_133 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_134 = shard.shard %192 to %sharding_133 : tensor<16xf32>
    %sharding_135 = shard.sharding @nova_mesh split_axes = [[], [0]] : !shard.sharding
    %sharding_annotated_136 = shard.shard %196 to %sharding_135 : tensor<16x16xf32>
    %sharding_137 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_138 = shard.shard %200 to %sharding_137 : tensor<16xf32>
    %sharding_139 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_140 = shard.shard %204 to %sharding_139 : tensor<16xf32>
    %sharding_141 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_142 = shard.shard %208 to %sharding_141 : tensor<16xf32>
    %sharding_143 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_144 = shard.shard %212 to %sharding_143 : tensor<64x16xf32>
    %sharding_145 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_146 = shard.shard %217 to %sharding_145 : tensor<64xf32>
    %sharding_147 = shard.sharding @nova_mesh split_axes = [[], [0]] : !shard.sharding
    %sharding_annotated_148 = shard.shard %221 to %sharding_147 : tensor<16x64xf32>
    %sharding_149 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_150 = shard.shard %225 to %sharding_149 : tensor<16xf32>
    return %sharding_annotated_118, %sharding_annotated_120, %sharding_annotated_122, %sharding_annotated_124, %sharding_annotated_126, %sharding_annotated_128, %sharding_annotated_130, %sharding_annotated_132, %sharding_annotated_134, %sharding_annotated_136, %sharding_annotated_138, %sharding_annotated_140, %sharding_annotated_142, %sharding_annotated_144, %sharding_annotated_146, %sharding_annotated_148, %sharding_annotated_150 : tensor<f32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<64x16xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<16xf32>
  }
}

