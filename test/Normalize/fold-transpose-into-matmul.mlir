// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-fold-transpose-into-matmul))' | FileCheck %s

// torch's x @ W.T: the weight is read through the matmul's indexing map.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[BN:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @linear_weight_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>, %[[W:.*]]: tensor<256x64xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul indexing_maps = [#[[A]], #[[B]], #[[C]]] ins(%[[X]], %[[W]] : tensor<16x64xf32>, tensor<256x64xf32>)
func.func @linear_weight_transpose(%x: tensor<16x64xf32>, %w: tensor<256x64xf32>) -> tensor<16x256xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %t = linalg.transpose ins(%w : tensor<256x64xf32>) outs(%e : tensor<64x256xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<16x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<16x256xf32>) -> tensor<16x256xf32>
  %m = linalg.matmul ins(%x, %t : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %m : tensor<16x256xf32>
}

// A transpose that something else reads too stays.
// CHECK-LABEL: func.func @negative_transpose_with_other_users
// CHECK: linalg.transpose
// CHECK: linalg.matmul ins(
func.func @negative_transpose_with_other_users(%x: tensor<16x64xf32>, %w: tensor<256x64xf32>) -> (tensor<16x256xf32>, tensor<64x256xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %t = linalg.transpose ins(%w : tensor<256x64xf32>) outs(%e : tensor<64x256xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<16x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<16x256xf32>) -> tensor<16x256xf32>
  %m = linalg.matmul ins(%x, %t : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %m, %t : tensor<16x256xf32>, tensor<64x256xf32>
}

// A weight gradient (dY.T @ X): the lhs is read through its indexing map.
// CHECK-LABEL: func.func @lhs_transpose
// CHECK-SAME: (%[[DY:.*]]: tensor<64x16xf32>, %[[X:.*]]: tensor<64x256xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul indexing_maps = [#[[AT]], #[[BN]], #[[C]]] ins(%[[DY]], %[[X]] : tensor<64x16xf32>, tensor<64x256xf32>)
func.func @lhs_transpose(%dy: tensor<64x16xf32>, %x: tensor<64x256xf32>) -> tensor<16x256xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %t = linalg.transpose ins(%dy : tensor<64x16xf32>) outs(%e : tensor<16x64xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<16x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<16x256xf32>) -> tensor<16x256xf32>
  %m = linalg.matmul ins(%t, %x : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %m : tensor<16x256xf32>
}

// Both operands transposed: one matmul reading both through its maps.
// CHECK-LABEL: func.func @both_transposed
// CHECK-SAME: (%[[P:.*]]: tensor<64x16xf32>, %[[Q:.*]]: tensor<256x64xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul indexing_maps = [#[[AT]], #[[B]], #[[C]]] ins(%[[P]], %[[Q]] : tensor<64x16xf32>, tensor<256x64xf32>)
func.func @both_transposed(%p: tensor<64x16xf32>, %q: tensor<256x64xf32>) -> tensor<16x256xf32> {
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<16x64xf32>
  %t1 = linalg.transpose ins(%p : tensor<64x16xf32>) outs(%e1 : tensor<16x64xf32>) permutation = [1, 0]
  %e2 = tensor.empty() : tensor<64x256xf32>
  %t2 = linalg.transpose ins(%q : tensor<256x64xf32>) outs(%e2 : tensor<64x256xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<16x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<16x256xf32>) -> tensor<16x256xf32>
  %m = linalg.matmul ins(%t1, %t2 : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %m : tensor<16x256xf32>
}

// An lhs transpose that is also returned stays (its copy is needed anyway).
// CHECK-LABEL: func.func @negative_lhs_transpose_with_other_users
// CHECK: %[[T:.*]] = linalg.transpose
// CHECK: linalg.matmul ins(%[[T]],
func.func @negative_lhs_transpose_with_other_users(%x: tensor<64x16xf32>, %w: tensor<64x256xf32>) -> (tensor<16x256xf32>, tensor<16x64xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %t = linalg.transpose ins(%x : tensor<64x16xf32>) outs(%e : tensor<16x64xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<16x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<16x256xf32>) -> tensor<16x256xf32>
  %m = linalg.matmul ins(%t, %w : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %m, %t : tensor<16x256xf32>, tensor<16x64xf32>
}

// A matmul whose result is not C[m, n] (written transposed) is left alone.
// CHECK-LABEL: func.func @negative_transposed_result
// CHECK: %[[T:.*]] = linalg.transpose
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[T]],
func.func @negative_transposed_result(%x: tensor<64x16xf32>, %w: tensor<64x256xf32>) -> tensor<256x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x64xf32>
  %t = linalg.transpose ins(%x : tensor<64x16xf32>) outs(%e : tensor<16x64xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<256x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<256x16xf32>) -> tensor<256x16xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                      affine_map<(d0, d1, d2) -> (d2, d1)>,
                                      affine_map<(d0, d1, d2) -> (d1, d0)>]
      ins(%t, %w : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f : tensor<256x16xf32>) -> tensor<256x16xf32>
  return %m : tensor<256x16xf32>
}

// Under bf16 autocast nova-fold-ext-into-matmul leaves the widening of the
// transposed weight unused: a dead user does not keep the transpose.
// CHECK-LABEL: func.func @bf16_weight_with_dead_widening
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xbf16>, %[[W:.*]]: tensor<256x64xbf16>)
// CHECK-NOT: linalg.transpose
// CHECK-NOT: arith.extf
// CHECK: linalg.matmul indexing_maps = [#[[A]], #[[B]], #[[C]]] ins(%[[X]], %[[W]] : tensor<16x64xbf16>, tensor<256x64xbf16>) outs(%{{.*}} : tensor<16x256xf32>)
func.func @bf16_weight_with_dead_widening(%x: tensor<16x64xbf16>, %w: tensor<256x64xbf16>) -> tensor<16x256xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xbf16>
  %t = linalg.transpose ins(%w : tensor<256x64xbf16>) outs(%e : tensor<64x256xbf16>) permutation = [1, 0]
  %ef = tensor.empty() : tensor<64x256xf32>
  %dead = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<64x256xbf16>) outs(%ef : tensor<64x256xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w32 = arith.extf %in : bf16 to f32
    linalg.yield %w32 : f32
  } -> tensor<64x256xf32>
  %o = tensor.empty() : tensor<16x256xf32>
  %f = linalg.fill ins(%z : f32) outs(%o : tensor<16x256xf32>) -> tensor<16x256xf32>
  %m = linalg.matmul ins(%x, %t : tensor<16x64xbf16>, tensor<64x256xbf16>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %m : tensor<16x256xf32>
}
