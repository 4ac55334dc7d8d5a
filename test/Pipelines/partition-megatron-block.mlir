// The Megatron plan of nova.parallel (megatron_block_plan(axis="tp") on a
// 2-chip mesh) as python/nova/parallel/annotate.py writes it on torch-mlir's
// GPT block (pre-LN, causal 2-head attention with q/k/v projections, GELU
// MLP; d_model 32, batch 2 x seq 8). nova-partition gives each chip one head
// and half of the MLP, and exactly two collectives in the forward pass: one
// all-reduce after attention's output projection and one after the MLP's
// second matmul, each before its replicated bias and the residual add.
// RUN: nova-opt %s --nova-partition | FileCheck %s
// RUN: nova-opt %s --nova-partition | FileCheck %s --check-prefix=COUNT

// CHECK-NOT: shard.
// CHECK-LABEL: func.func @forward
// Per-chip q/k/v weights and biases (16 of 32 rows), proj and fc2 split by
// columns, fc1 by rows.
// CHECK-SAME: %arg{{[0-9]+}}: tensor<16x32xf32>, %arg{{[0-9]+}}: tensor<16xf32>, %arg{{[0-9]+}}: tensor<16x32xf32>, %arg{{[0-9]+}}: tensor<16xf32>, %arg{{[0-9]+}}: tensor<16x32xf32>, %arg{{[0-9]+}}: tensor<16xf32>, %arg{{[0-9]+}}: tensor<32x16xf32>, %arg{{[0-9]+}}: tensor<32xf32>
// CHECK-SAME: %arg{{[0-9]+}}: tensor<32xf32>, %arg{{[0-9]+}}: tensor<32xf32>, %arg{{[0-9]+}}: tensor<64x32xf32>, %arg{{[0-9]+}}: tensor<64xf32>, %arg{{[0-9]+}}: tensor<32x64xf32>, %arg{{[0-9]+}}: tensor<32xf32>, %arg{{[0-9]+}}: tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
// LayerNorm 1 on the replicated input, then the local q, k, v projections.
// CHECK-NOT: nova.all_
// CHECK-COUNT-3: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<32x16xf32>)
// One head per chip: scores, causal softmax and att @ v on [2, 1, 8, *].
// CHECK-NOT: nova.all_
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x1x8x16xf32>, tensor<2x1x16x8xf32>) outs(%{{.*}} : tensor<2x1x8x8xf32>)
// CHECK-NOT: nova.all_
// CHECK: math.exp
// CHECK-NOT: nova.all_
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x1x8x8xf32>, tensor<2x1x8x16xf32>) outs(%{{.*}} : tensor<2x1x8x16xf32>)
// The row-parallel output projection gives partial sums: all-reduce.
// CHECK-NOT: nova.all_
// CHECK: %[[PROJ:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<16x32xf32>)
// CHECK-NOT: nova.all_
// CHECK: %[[IN:.*]] = bufferization.to_buffer %[[PROJ]] read_only
// CHECK: nova.all_reduce <sum> ins(%[[IN]] : memref<16x32xf32, #nova.memory_space<hbm>>) {{.*}} groups {{\[}}[0, 1]]
// LayerNorm 2 and the column-parallel fc1 + GELU, no collective.
// CHECK-NOT: nova.all_
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<32x64xf32>)
// CHECK-NOT: nova.all_
// CHECK: math.erf
// The row-parallel fc2: the second and last all-reduce.
// CHECK-NOT: nova.all_
// CHECK: %[[FC2:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x64xf32>, tensor<64x32xf32>)
// CHECK-NOT: nova.all_
// CHECK: %[[IN2:.*]] = bufferization.to_buffer %[[FC2]] read_only
// CHECK: nova.all_reduce <sum> ins(%[[IN2]] : memref<16x32xf32, #nova.memory_space<hbm>>) {{.*}} groups {{\[}}[0, 1]]
// CHECK-NOT: nova.all_
// CHECK: return %{{.*}} : tensor<2x8x32xf32>

// Exactly two collectives in all.
// COUNT-COUNT-2: nova.all_reduce
// COUNT-NOT: nova.all_
// COUNT-NOT: nova.send
// COUNT-NOT: nova.recv

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
module {
  shard.grid @nova_mesh(shape = 2)
  func.func @forward(%arg0: tensor<32xf32>, %arg1: tensor<32xf32>, %arg2: tensor<32x32xf32>, %arg3: tensor<32xf32>, %arg4: tensor<32x32xf32>, %arg5: tensor<32xf32>, %arg6: tensor<32x32xf32>, %arg7: tensor<32xf32>, %arg8: tensor<32x32xf32>, %arg9: tensor<32xf32>, %arg10: tensor<32xf32>, %arg11: tensor<32xf32>, %arg12: tensor<128x32xf32>, %arg13: tensor<128xf32>, %arg14: tensor<32x128xf32>, %arg15: tensor<32xf32>, %arg16: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
    %sharding = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated = shard.shard %arg0 to %sharding annotate_for_users : tensor<32xf32>
    %sharding_0 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_1 = shard.shard %arg1 to %sharding_0 annotate_for_users : tensor<32xf32>
    %sharding_2 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_3 = shard.shard %arg2 to %sharding_2 annotate_for_users : tensor<32x32xf32>
    %sharding_4 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_5 = shard.shard %arg3 to %sharding_4 annotate_for_users : tensor<32xf32>
    %sharding_6 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_7 = shard.shard %arg4 to %sharding_6 annotate_for_users : tensor<32x32xf32>
    %sharding_8 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_9 = shard.shard %arg5 to %sharding_8 annotate_for_users : tensor<32xf32>
    %sharding_10 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_11 = shard.shard %arg6 to %sharding_10 annotate_for_users : tensor<32x32xf32>
    %sharding_12 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_13 = shard.shard %arg7 to %sharding_12 annotate_for_users : tensor<32xf32>
    %sharding_14 = shard.sharding @nova_mesh split_axes = [[], [0]] : !shard.sharding
    %sharding_annotated_15 = shard.shard %arg8 to %sharding_14 annotate_for_users : tensor<32x32xf32>
    %sharding_16 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_17 = shard.shard %arg9 to %sharding_16 annotate_for_users : tensor<32xf32>
    %sharding_18 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_19 = shard.shard %arg10 to %sharding_18 annotate_for_users : tensor<32xf32>
    %sharding_20 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_21 = shard.shard %arg11 to %sharding_20 annotate_for_users : tensor<32xf32>
    %sharding_22 = shard.sharding @nova_mesh split_axes = [[0], []] : !shard.sharding
    %sharding_annotated_23 = shard.shard %arg12 to %sharding_22 annotate_for_users : tensor<128x32xf32>
    %sharding_24 = shard.sharding @nova_mesh split_axes = [[0]] : !shard.sharding
    %sharding_annotated_25 = shard.shard %arg13 to %sharding_24 annotate_for_users : tensor<128xf32>
    %sharding_26 = shard.sharding @nova_mesh split_axes = [[], [0]] : !shard.sharding
    %sharding_annotated_27 = shard.shard %arg14 to %sharding_26 annotate_for_users : tensor<32x128xf32>
    %sharding_28 = shard.sharding @nova_mesh split_axes = [[]] : !shard.sharding
    %sharding_annotated_29 = shard.shard %arg15 to %sharding_28 annotate_for_users : tensor<32xf32>
    %sharding_30 = shard.sharding @nova_mesh split_axes = [[], [], []] : !shard.sharding
    %sharding_annotated_31 = shard.shard %arg16 to %sharding_30 annotate_for_users : tensor<2x8x32xf32>
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f64
    %cst_32 = arith.constant 0.000000e+00 : f32
    %true = arith.constant true
    %cst_33 = arith.constant 0xFF800000 : f32
    %cst_34 = arith.constant dense<0xFF800000> : tensor<f32>
    %cst_35 = arith.constant dense<true> : tensor<8x8xi1>
    %cst_36 = arith.constant 0.70710678118654757 : f64
    %cst_37 = arith.constant 1.000000e-05 : f64
    %cst_38 = arith.constant 3.200000e+01 : f64
    %cst_39 = arith.constant 3.200000e+01 : f32
    %cst_40 = arith.constant 2.500000e-01 : f32
    %cst_41 = arith.constant 5.000000e-01 : f32
    %cst_42 = arith.constant 1.000000e+00 : f32
    %0 = tensor.empty() : tensor<2x8x32xf64>
    %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated_31 : tensor<2x8x32xf32>) outs(%0 : tensor<2x8x32xf64>) {
    ^bb0(%in: f32, %out: f64):
      %96 = arith.extf %in : f32 to f64
      linalg.yield %96 : f64
    } -> tensor<2x8x32xf64>
    %2 = tensor.empty() : tensor<2x8x1xf64>
    %3 = linalg.fill ins(%cst : f64) outs(%2 : tensor<2x8x1xf64>) -> tensor<2x8x1xf64>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%1 : tensor<2x8x32xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %96 = arith.addf %in, %out : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x1xf64>
    %5 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %96 = arith.divf %in, %cst_38 : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x1xf64>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1, %5 : tensor<2x8x32xf64>, tensor<2x8x1xf64>) outs(%0 : tensor<2x8x32xf64>) {
    ^bb0(%in: f64, %in_71: f64, %out: f64):
      %96 = arith.subf %in, %in_71 : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x32xf64>
    %7 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%6, %6 : tensor<2x8x32xf64>, tensor<2x8x32xf64>) outs(%0 : tensor<2x8x32xf64>) {
    ^bb0(%in: f64, %in_71: f64, %out: f64):
      %96 = arith.mulf %in, %in_71 : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x32xf64>
    %8 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%7 : tensor<2x8x32xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %96 = arith.addf %in, %out : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x1xf64>
    %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%8 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %96 = arith.divf %in, %cst_38 : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x1xf64>
    %10 = tensor.empty() : tensor<2x8x1xf32>
    %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%9 : tensor<2x8x1xf64>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %96 = arith.truncf %in : f64 to f32
      linalg.yield %96 : f32
    } -> tensor<2x8x1xf32>
    %12 = linalg.fill ins(%cst_32 : f32) outs(%10 : tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
    %13 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%sharding_annotated_31 : tensor<2x8x32xf32>) outs(%12 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.addf %in, %out : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x1xf32>
    %14 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%13 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.divf %in, %cst_39 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x1xf32>
    %15 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%11 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.truncf %cst_37 : f64 to f32
      %97 = arith.addf %in, %96 : f32
      linalg.yield %97 : f32
    } -> tensor<2x8x1xf32>
    %16 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%15 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = math.rsqrt %in : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x1xf32>
    %17 = tensor.empty() : tensor<2x8x32xf32>
    %18 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated_31, %14 : tensor<2x8x32xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.subf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %19 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%18, %16 : tensor<2x8x32xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.mulf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %20 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%19, %sharding_annotated : tensor<2x8x32xf32>, tensor<32xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.mulf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %21 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%20, %sharding_annotated_1 : tensor<2x8x32xf32>, tensor<32xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %collapsed = tensor.collapse_shape %21 [[0, 1], [2]] : tensor<2x8x32xf32> into tensor<16x32xf32>
    %22 = tensor.empty() : tensor<32x32xf32>
    %transposed = linalg.transpose ins(%sharding_annotated_3 : tensor<32x32xf32>) outs(%22 : tensor<32x32xf32>) permutation = [1, 0] 
    %23 = tensor.empty() : tensor<16x32xf32>
    %24 = linalg.fill ins(%cst_32 : f32) outs(%23 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %25 = linalg.matmul ins(%collapsed, %transposed : tensor<16x32xf32>, tensor<32x32xf32>) outs(%24 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %26 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%25, %sharding_annotated_5 : tensor<16x32xf32>, tensor<32xf32>) outs(%23 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<16x32xf32>
    %expanded = tensor.expand_shape %26 [[0, 1], [2, 3]] output_shape [2, 8, 2, 16] : tensor<16x32xf32> into tensor<2x8x2x16xf32>
    %27 = tensor.empty() : tensor<2x2x8x16xf32>
    %transposed_43 = linalg.transpose ins(%expanded : tensor<2x8x2x16xf32>) outs(%27 : tensor<2x2x8x16xf32>) permutation = [0, 2, 1, 3] 
    %transposed_44 = linalg.transpose ins(%sharding_annotated_7 : tensor<32x32xf32>) outs(%22 : tensor<32x32xf32>) permutation = [1, 0] 
    %28 = linalg.matmul ins(%collapsed, %transposed_44 : tensor<16x32xf32>, tensor<32x32xf32>) outs(%24 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %29 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%28, %sharding_annotated_9 : tensor<16x32xf32>, tensor<32xf32>) outs(%23 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<16x32xf32>
    %expanded_45 = tensor.expand_shape %29 [[0, 1], [2, 3]] output_shape [2, 8, 2, 16] : tensor<16x32xf32> into tensor<2x8x2x16xf32>
    %transposed_46 = linalg.transpose ins(%sharding_annotated_11 : tensor<32x32xf32>) outs(%22 : tensor<32x32xf32>) permutation = [1, 0] 
    %30 = linalg.matmul ins(%collapsed, %transposed_46 : tensor<16x32xf32>, tensor<32x32xf32>) outs(%24 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %31 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%30, %sharding_annotated_13 : tensor<16x32xf32>, tensor<32xf32>) outs(%23 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<16x32xf32>
    %expanded_47 = tensor.expand_shape %31 [[0, 1], [2, 3]] output_shape [2, 8, 2, 16] : tensor<16x32xf32> into tensor<2x8x2x16xf32>
    %transposed_48 = linalg.transpose ins(%expanded_47 : tensor<2x8x2x16xf32>) outs(%27 : tensor<2x2x8x16xf32>) permutation = [0, 2, 1, 3] 
    %32 = tensor.empty() : tensor<2x2x16x8xf32>
    %transposed_49 = linalg.transpose ins(%expanded_45 : tensor<2x8x2x16xf32>) outs(%32 : tensor<2x2x16x8xf32>) permutation = [0, 2, 3, 1] 
    %collapsed_50 = tensor.collapse_shape %transposed_43 [[0, 1], [2], [3]] : tensor<2x2x8x16xf32> into tensor<4x8x16xf32>
    %collapsed_51 = tensor.collapse_shape %transposed_49 [[0, 1], [2], [3]] : tensor<2x2x16x8xf32> into tensor<4x16x8xf32>
    %33 = tensor.empty() : tensor<4x8x8xf32>
    %34 = linalg.fill ins(%cst_32 : f32) outs(%33 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %35 = linalg.batch_matmul ins(%collapsed_50, %collapsed_51 : tensor<4x8x16xf32>, tensor<4x16x8xf32>) outs(%34 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
    %expanded_52 = tensor.expand_shape %35 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
    %36 = tensor.empty() : tensor<2x2x8x8xf32>
    %37 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%expanded_52 : tensor<2x2x8x8xf32>) outs(%36 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.mulf %in, %cst_40 : f32
      linalg.yield %96 : f32
    } -> tensor<2x2x8x8xf32>
    %38 = tensor.empty() : tensor<8xi64>
    %39 = linalg.generic {indexing_maps = [#map6], iterator_types = ["parallel"]} outs(%38 : tensor<8xi64>) {
    ^bb0(%out: i64):
      %96 = linalg.index 0 : index
      %97 = arith.index_cast %96 : index to i64
      linalg.yield %97 : i64
    } -> tensor<8xi64>
    %expanded_53 = tensor.expand_shape %39 [[0, 1]] output_shape [1, 8] : tensor<8xi64> into tensor<1x8xi64>
    %expanded_54 = tensor.expand_shape %39 [[0, 1]] output_shape [8, 1] : tensor<8xi64> into tensor<8x1xi64>
    %40 = tensor.empty() : tensor<8x8xi64>
    %41 = linalg.generic {indexing_maps = [#map7, #map8, #map3], iterator_types = ["parallel", "parallel"]} ins(%expanded_53, %expanded_54 : tensor<1x8xi64>, tensor<8x1xi64>) outs(%40 : tensor<8x8xi64>) {
    ^bb0(%in: i64, %in_71: i64, %out: i64):
      %96 = arith.subi %in, %in_71 : i64
      linalg.yield %96 : i64
    } -> tensor<8x8xi64>
    %42 = tensor.empty() : tensor<8x8xi1>
    %43 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%41 : tensor<8x8xi64>) outs(%42 : tensor<8x8xi1>) {
    ^bb0(%in: i64, %out: i1):
      %96 = arith.cmpi sle, %in, %c0_i64 : i64
      linalg.yield %96 : i1
    } -> tensor<8x8xi1>
    %44 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%43, %cst_35 : tensor<8x8xi1>, tensor<8x8xi1>) outs(%42 : tensor<8x8xi1>) {
    ^bb0(%in: i1, %in_71: i1, %out: i1):
      %96 = arith.andi %in, %in_71 : i1
      linalg.yield %96 : i1
    } -> tensor<8x8xi1>
    %45 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%44 : tensor<8x8xi1>) outs(%42 : tensor<8x8xi1>) {
    ^bb0(%in: i1, %out: i1):
      %96 = arith.xori %in, %true : i1
      linalg.yield %96 : i1
    } -> tensor<8x8xi1>
    %46 = linalg.generic {indexing_maps = [#map9, #map10, #map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%45, %cst_34, %37 : tensor<8x8xi1>, tensor<f32>, tensor<2x2x8x8xf32>) outs(%36 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: i1, %in_71: f32, %in_72: f32, %out: f32):
      %96 = arith.select %in, %in_71, %in_72 : f32
      linalg.yield %96 : f32
    } -> tensor<2x2x8x8xf32>
    %47 = tensor.empty() : tensor<2x2x8xi64>
    %48 = linalg.fill ins(%c0_i64 : i64) outs(%47 : tensor<2x2x8xi64>) -> tensor<2x2x8xi64>
    %49 = tensor.empty() : tensor<2x2x8xf32>
    %50 = linalg.fill ins(%cst_33 : f32) outs(%49 : tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %51:2 = linalg.generic {indexing_maps = [#map5, #map11, #map11], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%46 : tensor<2x2x8x8xf32>) outs(%50, %48 : tensor<2x2x8xf32>, tensor<2x2x8xi64>) {
    ^bb0(%in: f32, %out: f32, %out_71: i64):
      %96 = linalg.index 3 : index
      %97 = arith.index_cast %96 : index to i64
      %98 = arith.maximumf %in, %out : f32
      %99 = arith.cmpf ogt, %in, %out : f32
      %100 = arith.select %99, %97, %out_71 : i64
      linalg.yield %98, %100 : f32, i64
    } -> (tensor<2x2x8xf32>, tensor<2x2x8xi64>)
    %expanded_55 = tensor.expand_shape %51#0 [[0], [1], [2, 3]] output_shape [2, 2, 8, 1] : tensor<2x2x8xf32> into tensor<2x2x8x1xf32>
    %52 = linalg.generic {indexing_maps = [#map5, #map12, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%46, %expanded_55 : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) outs(%36 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.subf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x2x8x8xf32>
    %53 = linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%52 : tensor<2x2x8x8xf32>) outs(%36 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = math.exp %in : f32
      linalg.yield %96 : f32
    } -> tensor<2x2x8x8xf32>
    %54 = tensor.empty() : tensor<2x2x8x1xf32>
    %55 = linalg.fill ins(%cst_32 : f32) outs(%54 : tensor<2x2x8x1xf32>) -> tensor<2x2x8x1xf32>
    %56 = linalg.generic {indexing_maps = [#map5, #map12], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%53 : tensor<2x2x8x8xf32>) outs(%55 : tensor<2x2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.addf %in, %out : f32
      linalg.yield %96 : f32
    } -> tensor<2x2x8x1xf32>
    %57 = linalg.generic {indexing_maps = [#map5, #map12, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%53, %56 : tensor<2x2x8x8xf32>, tensor<2x2x8x1xf32>) outs(%36 : tensor<2x2x8x8xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.divf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x2x8x8xf32>
    %collapsed_56 = tensor.collapse_shape %57 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
    %collapsed_57 = tensor.collapse_shape %transposed_48 [[0, 1], [2], [3]] : tensor<2x2x8x16xf32> into tensor<4x8x16xf32>
    %58 = tensor.empty() : tensor<4x8x16xf32>
    %59 = linalg.fill ins(%cst_32 : f32) outs(%58 : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %60 = linalg.batch_matmul ins(%collapsed_56, %collapsed_57 : tensor<4x8x8xf32>, tensor<4x8x16xf32>) outs(%59 : tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %expanded_58 = tensor.expand_shape %60 [[0, 1], [2], [3]] output_shape [2, 2, 8, 16] : tensor<4x8x16xf32> into tensor<2x2x8x16xf32>
    %61 = tensor.empty() : tensor<2x8x2x16xf32>
    %transposed_59 = linalg.transpose ins(%expanded_58 : tensor<2x2x8x16xf32>) outs(%61 : tensor<2x8x2x16xf32>) permutation = [0, 2, 1, 3] 
    %collapsed_60 = tensor.collapse_shape %transposed_59 [[0, 1], [2, 3]] : tensor<2x8x2x16xf32> into tensor<16x32xf32>
    %transposed_61 = linalg.transpose ins(%sharding_annotated_15 : tensor<32x32xf32>) outs(%22 : tensor<32x32xf32>) permutation = [1, 0] 
    %62 = linalg.matmul ins(%collapsed_60, %transposed_61 : tensor<16x32xf32>, tensor<32x32xf32>) outs(%24 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %63 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%62, %sharding_annotated_17 : tensor<16x32xf32>, tensor<32xf32>) outs(%23 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<16x32xf32>
    %expanded_62 = tensor.expand_shape %63 [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
    %64 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sharding_annotated_31, %expanded_62 : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %65 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%64 : tensor<2x8x32xf32>) outs(%0 : tensor<2x8x32xf64>) {
    ^bb0(%in: f32, %out: f64):
      %96 = arith.extf %in : f32 to f64
      linalg.yield %96 : f64
    } -> tensor<2x8x32xf64>
    %66 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%65 : tensor<2x8x32xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %96 = arith.addf %in, %out : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x1xf64>
    %67 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%66 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %96 = arith.divf %in, %cst_38 : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x1xf64>
    %68 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%65, %67 : tensor<2x8x32xf64>, tensor<2x8x1xf64>) outs(%0 : tensor<2x8x32xf64>) {
    ^bb0(%in: f64, %in_71: f64, %out: f64):
      %96 = arith.subf %in, %in_71 : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x32xf64>
    %69 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%68, %68 : tensor<2x8x32xf64>, tensor<2x8x32xf64>) outs(%0 : tensor<2x8x32xf64>) {
    ^bb0(%in: f64, %in_71: f64, %out: f64):
      %96 = arith.mulf %in, %in_71 : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x32xf64>
    %70 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%69 : tensor<2x8x32xf64>) outs(%3 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %96 = arith.addf %in, %out : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x1xf64>
    %71 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%70 : tensor<2x8x1xf64>) outs(%2 : tensor<2x8x1xf64>) {
    ^bb0(%in: f64, %out: f64):
      %96 = arith.divf %in, %cst_38 : f64
      linalg.yield %96 : f64
    } -> tensor<2x8x1xf64>
    %72 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%71 : tensor<2x8x1xf64>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f64, %out: f32):
      %96 = arith.truncf %in : f64 to f32
      linalg.yield %96 : f32
    } -> tensor<2x8x1xf32>
    %73 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel", "reduction"]} ins(%64 : tensor<2x8x32xf32>) outs(%12 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.addf %in, %out : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x1xf32>
    %74 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%73 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.divf %in, %cst_39 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x1xf32>
    %75 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%72 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.truncf %cst_37 : f64 to f32
      %97 = arith.addf %in, %96 : f32
      linalg.yield %97 : f32
    } -> tensor<2x8x1xf32>
    %76 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%75 : tensor<2x8x1xf32>) outs(%10 : tensor<2x8x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = math.rsqrt %in : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x1xf32>
    %77 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%64, %74 : tensor<2x8x32xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.subf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %78 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%77, %76 : tensor<2x8x32xf32>, tensor<2x8x1xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.mulf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %79 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%78, %sharding_annotated_19 : tensor<2x8x32xf32>, tensor<32xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.mulf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %80 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%79, %sharding_annotated_21 : tensor<2x8x32xf32>, tensor<32xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %collapsed_63 = tensor.collapse_shape %80 [[0, 1], [2]] : tensor<2x8x32xf32> into tensor<16x32xf32>
    %81 = tensor.empty() : tensor<32x128xf32>
    %transposed_64 = linalg.transpose ins(%sharding_annotated_23 : tensor<128x32xf32>) outs(%81 : tensor<32x128xf32>) permutation = [1, 0] 
    %82 = tensor.empty() : tensor<16x128xf32>
    %83 = linalg.fill ins(%cst_32 : f32) outs(%82 : tensor<16x128xf32>) -> tensor<16x128xf32>
    %84 = linalg.matmul ins(%collapsed_63, %transposed_64 : tensor<16x32xf32>, tensor<32x128xf32>) outs(%83 : tensor<16x128xf32>) -> tensor<16x128xf32>
    %85 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%84, %sharding_annotated_25 : tensor<16x128xf32>, tensor<128xf32>) outs(%82 : tensor<16x128xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<16x128xf32>
    %expanded_65 = tensor.expand_shape %85 [[0, 1], [2]] output_shape [2, 8, 128] : tensor<16x128xf32> into tensor<2x8x128xf32>
    %86 = tensor.empty() : tensor<2x8x128xf32>
    %87 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_65 : tensor<2x8x128xf32>) outs(%86 : tensor<2x8x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.mulf %in, %cst_41 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x128xf32>
    %88 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%expanded_65 : tensor<2x8x128xf32>) outs(%86 : tensor<2x8x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.truncf %cst_36 : f64 to f32
      %97 = arith.mulf %in, %96 : f32
      linalg.yield %97 : f32
    } -> tensor<2x8x128xf32>
    %89 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%88 : tensor<2x8x128xf32>) outs(%86 : tensor<2x8x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = math.erf %in : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x128xf32>
    %90 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%89 : tensor<2x8x128xf32>) outs(%86 : tensor<2x8x128xf32>) {
    ^bb0(%in: f32, %out: f32):
      %96 = arith.addf %in, %cst_42 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x128xf32>
    %91 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%87, %90 : tensor<2x8x128xf32>, tensor<2x8x128xf32>) outs(%86 : tensor<2x8x128xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.mulf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x128xf32>
    %collapsed_66 = tensor.collapse_shape %91 [[0, 1], [2]] : tensor<2x8x128xf32> into tensor<16x128xf32>
    %92 = tensor.empty() : tensor<128x32xf32>
    %transposed_67 = linalg.transpose ins(%sharding_annotated_27 : tensor<32x128xf32>) outs(%92 : tensor<128x32xf32>) permutation = [1, 0] 
    %93 = linalg.matmul ins(%collapsed_66, %transposed_67 : tensor<16x128xf32>, tensor<128x32xf32>) outs(%24 : tensor<16x32xf32>) -> tensor<16x32xf32>
    %94 = linalg.generic {indexing_maps = [#map3, #map4, #map3], iterator_types = ["parallel", "parallel"]} ins(%93, %sharding_annotated_29 : tensor<16x32xf32>, tensor<32xf32>) outs(%23 : tensor<16x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<16x32xf32>
    %expanded_68 = tensor.expand_shape %94 [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
    %95 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel"]} ins(%64, %expanded_68 : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%17 : tensor<2x8x32xf32>) {
    ^bb0(%in: f32, %in_71: f32, %out: f32):
      %96 = arith.addf %in, %in_71 : f32
      linalg.yield %96 : f32
    } -> tensor<2x8x32xf32>
    %sharding_69 = shard.sharding @nova_mesh split_axes = [[], [], []] : !shard.sharding
    %sharding_annotated_70 = shard.shard %95 to %sharding_69 : tensor<2x8x32xf32>
    return %sharding_annotated_70 : tensor<2x8x32xf32>
  }
}

