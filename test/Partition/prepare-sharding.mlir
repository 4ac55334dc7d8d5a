// RUN: nova-opt %s --split-input-file --nova-prepare-sharding | FileCheck %s

// One zero-filled init shared by a column- and a row-parallel matmul: each
// matmul gets its own fill of its own tensor.empty.
// CHECK-LABEL: func.func @shared_fill_cloned_per_use
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<32x64xf32>
// CHECK: %[[F0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E0]] : tensor<32x64xf32>)
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<32x64xf32>
// CHECK: %[[F1:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E1]] : tensor<32x64xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<16x64xf32>) outs(%[[F1]] : tensor<32x64xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<16x64xf32>) outs(%[[F0]] : tensor<32x64xf32>)
// CHECK-NOT: tensor.empty
// CHECK-NOT: linalg.fill
// CHECK: return
func.func @shared_fill_cloned_per_use(%x: tensor<32x16xf32>, %wq: tensor<16x64xf32>, %wp: tensor<16x64xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
  %p = linalg.matmul ins(%x, %wp : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
  return %q, %p : tensor<32x64xf32>, tensor<32x64xf32>
}

// -----

// A bare tensor.empty shared by two destinations is cloned too.
// CHECK-LABEL: func.func @shared_empty_cloned_per_use
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<32x64xf32>
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<32x64xf32>
// CHECK: linalg.exp ins(%{{.*}} : tensor<32x64xf32>) outs(%[[E1]] : tensor<32x64xf32>)
// CHECK: linalg.exp ins(%{{.*}} : tensor<32x64xf32>) outs(%[[E0]] : tensor<32x64xf32>)
func.func @shared_empty_cloned_per_use(%x: tensor<32x64xf32>, %y: tensor<32x64xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
  %e = tensor.empty() : tensor<32x64xf32>
  %a = linalg.exp ins(%x : tensor<32x64xf32>) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %b = linalg.exp ins(%y : tensor<32x64xf32>) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  return %a, %b : tensor<32x64xf32>, tensor<32x64xf32>
}

// -----

// The clone of a dynamically sized empty keeps its size operand.
// CHECK-LABEL: func.func @shared_dynamic_empty_cloned_per_use
// CHECK-SAME: (%[[N:[^:]*]]: index
// CHECK: %[[E0:.*]] = tensor.empty(%[[N]]) : tensor<?x64xf32>
// CHECK: %[[E1:.*]] = tensor.empty(%[[N]]) : tensor<?x64xf32>
// CHECK: linalg.exp ins(%{{.*}} : tensor<?x64xf32>) outs(%[[E1]] : tensor<?x64xf32>)
// CHECK: linalg.exp ins(%{{.*}} : tensor<?x64xf32>) outs(%[[E0]] : tensor<?x64xf32>)
func.func @shared_dynamic_empty_cloned_per_use(%n: index, %x: tensor<?x64xf32>, %y: tensor<?x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %e = tensor.empty(%n) : tensor<?x64xf32>
  %a = linalg.exp ins(%x : tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %b = linalg.exp ins(%y : tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %a, %b : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// A fill of something other than tensor.empty (here a function argument) is
// not a destination-only producer: it is not cloned.
// CHECK-LABEL: func.func @negative_fill_of_argument
// CHECK-SAME: %[[INIT:[^:]*]]: tensor<32x64xf32>)
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[INIT]] : tensor<32x64xf32>)
// CHECK-NOT: linalg.fill
// CHECK: linalg.exp ins(%{{.*}} : tensor<32x64xf32>) outs(%[[F]] : tensor<32x64xf32>)
// CHECK: linalg.exp ins(%{{.*}} : tensor<32x64xf32>) outs(%[[F]] : tensor<32x64xf32>)
func.func @negative_fill_of_argument(%x: tensor<32x64xf32>, %init: tensor<32x64xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%init : tensor<32x64xf32>) -> tensor<32x64xf32>
  %a = linalg.exp ins(%x : tensor<32x64xf32>) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
  %b = linalg.exp ins(%a : tensor<32x64xf32>) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
  return %a, %b : tensor<32x64xf32>, tensor<32x64xf32>
}

// -----

// torch's causal mask: a splat i1 constant becomes a fill of an empty.
// CHECK-LABEL: func.func @splat_mask_to_fill
// CHECK-NOT: dense<true>
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[E:.*]] = tensor.empty() : tensor<16x16xi1>
// CHECK: %[[F:.*]] = linalg.fill ins(%[[TRUE]] : i1) outs(%[[E]] : tensor<16x16xi1>) -> tensor<16x16xi1>
// CHECK: return %[[F]] : tensor<16x16xi1>
func.func @splat_mask_to_fill() -> tensor<16x16xi1> {
  %m = arith.constant dense<true> : tensor<16x16xi1>
  return %m : tensor<16x16xi1>
}

// -----

// CHECK-LABEL: func.func @splat_f32_to_fill
// CHECK: %[[C:.*]] = arith.constant 1.500000e+00 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%[[C]] : f32) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: return %[[F]]
func.func @splat_f32_to_fill() -> tensor<4x8xf32> {
  %c = arith.constant dense<1.5> : tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// A splat used twice becomes one fill per use, each with its own empty.
// CHECK-LABEL: func.func @splat_two_uses
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<16x16xf32>
// CHECK: %[[F0:.*]] = linalg.fill ins(%[[ONE]] : f32) outs(%[[E0]] : tensor<16x16xf32>)
// CHECK: linalg.add ins(%{{.*}}, %[[F0]] : tensor<16x16xf32>, tensor<16x16xf32>)
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<16x16xf32>
// CHECK: %[[F1:.*]] = linalg.fill ins(%[[ONE]] : f32) outs(%[[E1]] : tensor<16x16xf32>)
// CHECK: linalg.mul ins(%{{.*}}, %[[F1]] : tensor<16x16xf32>, tensor<16x16xf32>)
func.func @splat_two_uses(%x: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %one = arith.constant dense<1.0> : tensor<16x16xf32>
  %a = linalg.add ins(%x, %one : tensor<16x16xf32>, tensor<16x16xf32>) outs(%x : tensor<16x16xf32>) -> tensor<16x16xf32>
  %b = linalg.mul ins(%x, %one : tensor<16x16xf32>, tensor<16x16xf32>) outs(%x : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %a, %b : tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

// A rank-0 tensor constant stays a constant.
// CHECK-LABEL: func.func @negative_rank0_constant
// CHECK: %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NOT: linalg.fill
// CHECK: return %[[C]] : tensor<f32>
func.func @negative_rank0_constant() -> tensor<f32> {
  %c = arith.constant dense<2.0> : tensor<f32>
  return %c : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @negative_non_splat_constant
// CHECK: %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NOT: linalg.fill
// CHECK: return %[[C]] : tensor<2xf32>
func.func @negative_non_splat_constant() -> tensor<2xf32> {
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

// Reshapes of an empty are empties of the reshaped type.
// CHECK-LABEL: func.func @expand_of_empty_folds
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x16x64xf32>
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[E]] : tensor<2x16x64xf32>
func.func @expand_of_empty_folds() -> tensor<2x16x64xf32> {
  %e = tensor.empty() : tensor<32x64xf32>
  %r = tensor.expand_shape %e [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xf32> into tensor<2x16x64xf32>
  return %r : tensor<2x16x64xf32>
}

// -----

// CHECK-LABEL: func.func @collapse_of_empty_folds
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[E:.*]] = tensor.empty() : tensor<32x64xf32>
// CHECK-NOT: tensor.collapse_shape
// CHECK: return %[[E]] : tensor<32x64xf32>
func.func @collapse_of_empty_folds() -> tensor<32x64xf32> {
  %e = tensor.empty() : tensor<2x16x64xf32>
  %r = tensor.collapse_shape %e [[0, 1], [2]] : tensor<2x16x64xf32> into tensor<32x64xf32>
  return %r : tensor<32x64xf32>
}

// -----

// A complex splat is not a scalar a fill can take: left alone.
// CHECK-LABEL: func.func @complex_splat_left_alone
// CHECK: arith.constant dense<(1.000000e+00,2.000000e+00)> : tensor<4xcomplex<f32>>
// CHECK-NOT: linalg.fill
func.func @complex_splat_left_alone() -> tensor<4xcomplex<f32>> {
  %c = arith.constant dense<(1.0, 2.0)> : tensor<4xcomplex<f32>>
  return %c : tensor<4xcomplex<f32>>
}

// -----

// An argument nothing reads gets a replicated annotation, so that
// shard-partition finds one use on every argument.
// CHECK-LABEL: func.func @unused_argument_annotated
// CHECK: %[[S:.*]] = shard.sharding @grid split_axes = [] : !shard.sharding
// CHECK: shard.shard %arg1 to %[[S]] annotate_for_users : tensor<4x4xi1>
shard.grid @grid(shape = 2)
func.func @unused_argument_annotated(%x: tensor<8xf32>, %unused: tensor<4x4xi1>) -> tensor<8xf32> {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<8xf32>
  return %a : tensor<8xf32>
}

// -----

// A result annotation moves next to its value's definition and the value's
// other users read it (a kept gradient that the optimizer also reads):
// propagation then finds the value annotated once.
// CHECK-LABEL: func.func @result_annotation_moves_up
// CHECK: %[[H:.*]] = linalg.generic
// CHECK: } -> tensor<8xf32>
// CHECK-NEXT: %[[S:.*]] = shard.sharding @grid split_axes = {{\[\[}}0]] : !shard.sharding
// CHECK-NEXT: %[[A:.*]] = shard.shard %[[H]] to %[[S]] : tensor<8xf32>
// CHECK-NOT: %[[H]]
// CHECK: linalg.generic {{.*}} ins(%[[A]] : tensor<8xf32>)
// CHECK-NOT: %[[H]]
// CHECK: return {{.*}}, %[[A]] :
shard.grid @grid(shape = 2)
func.func @result_annotation_moves_up(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %a = shard.shard %x to %s annotate_for_users : tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %h = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%h : tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %s1 = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %ry = shard.shard %y to %s1 : tensor<8xf32>
  %s2 = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %rh = shard.shard %h to %s2 : tensor<8xf32>
  return %ry, %rh : tensor<8xf32>, tensor<8xf32>
}

// -----

// One arange (a generic that reads only its loop index) shared by two
// one-hot comparisons: each gets its own copy, with its own destination, so
// that propagation can split one and not the other.
// CHECK-LABEL: func.func @shared_arange_cloned_per_use
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<16xi64>
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<16xi64>
// CHECK: %[[I0:.*]] = linalg.generic {{.*}} outs(%[[E1]] : tensor<16xi64>)
// CHECK: linalg.index 0
// CHECK: %[[I1:.*]] = linalg.generic {{.*}} outs(%[[E0]] : tensor<16xi64>)
// CHECK: linalg.index 0
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[I1]] : tensor<8xi64>, tensor<16xi64>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[I0]] : tensor<8xi64>, tensor<16xi64>)
// CHECK-NOT: linalg.index
// CHECK: return
func.func @shared_arange_cloned_per_use(%ids: tensor<8xi64>, %jds: tensor<8xi64>) -> (tensor<8x16xi1>, tensor<8x16xi1>) {
  %e = tensor.empty() : tensor<16xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<16xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<16xi64>
  %e1 = tensor.empty() : tensor<8x16xi1>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids, %iota : tensor<8xi64>, tensor<16xi64>) outs(%e1 : tensor<8x16xi1>) {
  ^bb0(%t: i64, %k: i64, %out: i1):
    %eq = arith.cmpi eq, %t, %k : i64
    linalg.yield %eq : i1
  } -> tensor<8x16xi1>
  %e2 = tensor.empty() : tensor<8x16xi1>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%jds, %iota : tensor<8xi64>, tensor<16xi64>) outs(%e2 : tensor<8x16xi1>) {
  ^bb0(%t: i64, %k: i64, %out: i1):
    %eq = arith.cmpi eq, %t, %k : i64
    linalg.yield %eq : i1
  } -> tensor<8x16xi1>
  return %a, %b : tensor<8x16xi1>, tensor<8x16xi1>
}

// -----

// A generic that reads a tensor is no generator: one copy, both users.
// CHECK-LABEL: func.func @negative_generic_with_input
// CHECK: %[[N:.*]] = linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return %[[N]], %[[N]]
func.func @negative_generic_with_input(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.negf %in : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  return %n, %n : tensor<16xf32>, tensor<16xf32>
}

// -----

// Nor is one that writes into (and reads) a tensor it is given.
// CHECK-LABEL: func.func @negative_generic_into_argument
// CHECK: %[[N:.*]] = linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return %[[N]], %[[N]]
func.func @negative_generic_into_argument(%x: tensor<16xi64>) -> (tensor<16xi64>, tensor<16xi64>) {
  %n = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%x : tensor<16xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    %s = arith.addi %c, %out : i64
    linalg.yield %s : i64
  } -> tensor<16xi64>
  return %n, %n : tensor<16xi64>, tensor<16xi64>
}

// -----

// A join that a reshape makes a stack (timm's qkv gradients: dq, dk and dv
// joined along the batch, then split into [3, B]) becomes a stack along a
// new unit dimension: the batch dimension is no longer joined.
// CHECK-LABEL: func.func @join_reshaped_to_stack
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x8xf32>)
// CHECK: %[[EA:.*]] = tensor.expand_shape %[[A]] {{\[\[}}0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
// CHECK: %[[EB:.*]] = tensor.expand_shape %[[B]] {{\[\[}}0, 1], [2]] output_shape [1, 4, 8] : tensor<4x8xf32> into tensor<1x4x8xf32>
// CHECK: %[[S:.*]] = tensor.concat dim(0) %[[EA]], %[[EB]] : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: return %[[S]]
func.func @join_reshaped_to_stack(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %j = tensor.concat dim(0) %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %s = tensor.expand_shape %j [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// -----

// Inputs of different sizes along the join: not a stack, left alone.
// CHECK-LABEL: func.func @uneven_join_kept
// CHECK: %[[J:.*]] = tensor.concat dim(0)
// CHECK: tensor.expand_shape %[[J]]
func.func @uneven_join_kept(%a: tensor<2x8xf32>, %b: tensor<6x8xf32>) -> tensor<2x4x8xf32> {
  %j = tensor.concat dim(0) %a, %b : (tensor<2x8xf32>, tensor<6x8xf32>) -> tensor<8x8xf32>
  %s = tensor.expand_shape %j [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  return %s : tensor<2x4x8xf32>
}

// -----

// The join split into [S, N] (the stacked dimension inner): not a stack.
// CHECK-LABEL: func.func @join_split_inner_kept
// CHECK: %[[J:.*]] = tensor.concat dim(0)
// CHECK: tensor.expand_shape %[[J]]
func.func @join_split_inner_kept(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x2x8xf32> {
  %j = tensor.concat dim(0) %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %s = tensor.expand_shape %j [[0, 1], [2]] output_shape [4, 2, 8] : tensor<8x8xf32> into tensor<4x2x8xf32>
  return %s : tensor<4x2x8xf32>
}
