// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-fuse-attention,canonicalize))' | FileCheck %s

// A training step's causal attention as SDPA's math path and autograd give
// it: the forward keeps P for the backward, which computes
//   dV = P^T dO, dP = dO V^T, A = dP * P, dX = A - P * rowsum(A),
//   dQ = dX Kt^T, dKt = Q^T dX.
// Both become fused ops: nova.attention_lse also writes the log-sum-exp, and
// nova.attention_backward takes it with out and dO (keys as rows: dKt is
// its dK transposed). No [4, 4] tensor is left.
// CHECK-LABEL: func.func @sdpa_causal_train
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8xf32>, %[[KT:.*]]: tensor<2x8x4xf32>, %[[V:.*]]: tensor<2x4x8xf32>, %[[DO:.*]]: tensor<2x4x8xf32>)
// CHECK: %[[O:.*]]:2 = nova.attention_lse ins(%[[Q]], %[[KT]], %[[V]] : tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x4xf32>) scale 1.000000e+00 causal -> tensor<2x4x8xf32>, tensor<2x4xf32>
// CHECK: %[[K:.*]] = linalg.transpose ins(%[[KT]] : tensor<2x8x4xf32>) outs(%{{.*}} : tensor<2x4x8xf32>) permutation = [0, 2, 1]
// CHECK: %[[G:.*]]:3 = nova.attention_backward ins(%[[Q]], %[[K]], %[[V]], %[[O]]#0, %[[DO]], %[[O]]#1 : {{.*}}) outs({{.*}}) scale 1.000000e+00 causal -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
// CHECK: %[[DKT:.*]] = linalg.transpose ins(%[[G]]#1 : tensor<2x4x8xf32>) outs(%{{.*}} : tensor<2x8x4xf32>) permutation = [0, 2, 1]
// CHECK-NOT: tensor<2x4x4xf32>
// CHECK: return %[[O]]#0, %[[G]]#0, %[[DKT]], %[[G]]#2
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#rowr = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @sdpa_causal_train(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %do: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %keep = arith.constant dense<[[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]> : tensor<4x4xf32>
  %e = tensor.empty() : tensor<2x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %keep : tensor<2x4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %hidden = arith.cmpf oeq, %c, %zero : f32
    %bias = arith.select %hidden, %ninf, %zero : f32
    %r = arith.addf %a, %bias : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %er = tensor.empty() : tensor<2x4xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.generic {indexing_maps = [#id3, #rowr], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x4x4xf32>) outs(%mi : tensor<2x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #rowr, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %m : tensor<2x4x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %er1 = tensor.empty() : tensor<2x4x1xf32>
  %li = linalg.fill ins(%zero : f32) outs(%er1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = linalg.batch_matmul ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // Backward.
  %pt = linalg.transpose ins(%p : tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) permutation = [0, 2, 1]
  %dv = linalg.batch_matmul ins(%pt, %do : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %ev = tensor.empty() : tensor<2x8x4xf32>
  %vt = linalg.transpose ins(%v : tensor<2x4x8xf32>) outs(%ev : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %dp = linalg.batch_matmul ins(%do, %vt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %a = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dp, %p : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %rs = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %dx = linalg.generic {indexing_maps = [#id3, #id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %p, %rs : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %k: f32, %o: f32):
    %t = arith.mulf %j, %k : f32
    %r = arith.subf %i, %t : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eq = tensor.empty() : tensor<2x8x4xf32>
  %qt = linalg.transpose ins(%q : tensor<2x4x8xf32>) outs(%eq : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %zk = linalg.fill ins(%zero : f32) outs(%eq : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dkt = linalg.batch_matmul ins(%qt, %dx : tensor<2x8x4xf32>, tensor<2x4x4xf32>) outs(%zk : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %ktt = linalg.transpose ins(%kt : tensor<2x8x4xf32>) outs(%eo : tensor<2x4x8xf32>) permutation = [0, 2, 1]
  %dq = linalg.batch_matmul ins(%dx, %ktt : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %out, %dq, %dkt, %dv : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>
}

// -----

// As partitioning leaves it (nova-expand-batch-dims, then
// nova-collapse-batch-dims): q, Kt and V come from 4-D [B, T, H, d] sources
// through head transposes, and the backward's P^T, V^T, Q^T and Kt^T are
// 4-D transposes (the head transpose and the matrix transpose composed into
// one) collapsed over the batch. They are the forward's operands transposed
// all the same, and both ops form.
// CHECK-LABEL: func.func @partitioned_transposes_train
// CHECK: nova.attention_lse
// CHECK: nova.attention_backward
// CHECK-NOT: tensor<2x4x4xf32>
// CHECK-NOT: tensor<1x2x4x4xf32>
// CHECK: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#rowr = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @partitioned_transposes_train(%q4: tensor<1x4x2x8xf32>, %k4: tensor<1x4x2x8xf32>, %v4: tensor<1x4x2x8xf32>, %do: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) {
  %eh = tensor.empty() : tensor<1x2x4x8xf32>
  %et = tensor.empty() : tensor<1x2x8x4xf32>
  %q4t = linalg.transpose ins(%q4 : tensor<1x4x2x8xf32>) outs(%eh : tensor<1x2x4x8xf32>) permutation = [0, 2, 1, 3]
  %q = tensor.collapse_shape %q4t [[0, 1], [2], [3]] : tensor<1x2x4x8xf32> into tensor<2x4x8xf32>
  %k4t = linalg.transpose ins(%k4 : tensor<1x4x2x8xf32>) outs(%et : tensor<1x2x8x4xf32>) permutation = [0, 2, 3, 1]
  %kt = tensor.collapse_shape %k4t [[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %v4t = linalg.transpose ins(%v4 : tensor<1x4x2x8xf32>) outs(%eh : tensor<1x2x4x8xf32>) permutation = [0, 2, 1, 3]
  %v = tensor.collapse_shape %v4t [[0, 1], [2], [3]] : tensor<1x2x4x8xf32> into tensor<2x4x8xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %keep = arith.constant dense<[[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]> : tensor<4x4xf32>
  %e = tensor.empty() : tensor<2x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %keep : tensor<2x4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %hidden = arith.cmpf oeq, %c, %zero : f32
    %bias = arith.select %hidden, %ninf, %zero : f32
    %r = arith.addf %a, %bias : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %er = tensor.empty() : tensor<2x4xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.generic {indexing_maps = [#id3, #rowr], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x4x4xf32>) outs(%mi : tensor<2x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #rowr, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %m : tensor<2x4x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %er1 = tensor.empty() : tensor<2x4x1xf32>
  %li = linalg.fill ins(%zero : f32) outs(%er1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = linalg.batch_matmul ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // Backward.
  %p4 = tensor.expand_shape %p [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %ep = tensor.empty() : tensor<1x2x4x4xf32>
  %pt4 = linalg.transpose ins(%p4 : tensor<1x2x4x4xf32>) outs(%ep : tensor<1x2x4x4xf32>) permutation = [0, 1, 3, 2]
  %pt = tensor.collapse_shape %pt4 [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %dv = linalg.batch_matmul ins(%pt, %do : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %v4tt = linalg.transpose ins(%v4 : tensor<1x4x2x8xf32>) outs(%et : tensor<1x2x8x4xf32>) permutation = [0, 2, 3, 1]
  %vt = tensor.collapse_shape %v4tt [[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %dp = linalg.batch_matmul ins(%do, %vt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %a = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dp, %p : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %rs = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %dx = linalg.generic {indexing_maps = [#id3, #id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %p, %rs : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %k: f32, %o: f32):
    %t = arith.mulf %j, %k : f32
    %r = arith.subf %i, %t : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eq = tensor.empty() : tensor<2x8x4xf32>
  %q4tt = linalg.transpose ins(%q4 : tensor<1x4x2x8xf32>) outs(%et : tensor<1x2x8x4xf32>) permutation = [0, 2, 3, 1]
  %qt = tensor.collapse_shape %q4tt [[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %zk = linalg.fill ins(%zero : f32) outs(%eq : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dkt = linalg.batch_matmul ins(%qt, %dx : tensor<2x8x4xf32>, tensor<2x4x4xf32>) outs(%zk : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %k4tt = linalg.transpose ins(%k4 : tensor<1x4x2x8xf32>) outs(%eh : tensor<1x2x4x8xf32>) permutation = [0, 2, 1, 3]
  %ktt = tensor.collapse_shape %k4tt [[0, 1], [2], [3]] : tensor<1x2x4x8xf32> into tensor<2x4x8xf32>
  %dq = linalg.batch_matmul ins(%dx, %ktt : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %out, %dq, %dkt, %dv : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>
}

// -----

// The probabilities' other use is not attention's backward (P itself is a
// result): nothing is fused.
// CHECK-LABEL: func.func @probabilities_returned
// CHECK-NOT: nova.attention
// CHECK: linalg.batch_matmul
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#rowr = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @probabilities_returned(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %er = tensor.empty() : tensor<2x4xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.generic {indexing_maps = [#id3, #rowr], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x4x4xf32>) outs(%mi : tensor<2x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #rowr, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<2x4x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %er1 = tensor.empty() : tensor<2x4x1xf32>
  %li = linalg.fill ins(%zero : f32) outs(%er1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = linalg.batch_matmul ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %out, %p : tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// -----

// The explicit softmax form, causal: scores scaled by 0.25 and masked_fill'ed
// with -inf where key > query (an i1 constant); the backward of the scale and
// of the masked_fill folded into the softmax's gradient
// (select(hidden, 0, (A - P r) * 0.25)). Fused with scale 0.25.
// CHECK-LABEL: func.func @explicit_causal_train
// CHECK: nova.attention_lse {{.*}} scale 2.500000e-01 causal
// CHECK: nova.attention_backward {{.*}} scale 2.500000e-01 causal
// CHECK-NOT: tensor<2x4x4xf32>
// CHECK: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @explicit_causal_train(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %do: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %quarter = arith.constant 2.500000e-01 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %hide = arith.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %e = tensor.empty() : tensor<2x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %hide : tensor<2x4x4xf32>, tensor<4x4xi1>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %h: i1, %o: f32):
    %sc = arith.mulf %a, %quarter : f32
    %r = arith.select %h, %ninf, %sc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %er1 = tensor.empty() : tensor<2x4x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x4x4xf32>) outs(%mi : tensor<2x4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %m : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %li = linalg.fill ins(%zero : f32) outs(%er1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = linalg.batch_matmul ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %pt = linalg.transpose ins(%p : tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) permutation = [0, 2, 1]
  %dv = linalg.batch_matmul ins(%pt, %do : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %ev = tensor.empty() : tensor<2x8x4xf32>
  %vt = linalg.transpose ins(%v : tensor<2x4x8xf32>) outs(%ev : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %dp = linalg.batch_matmul ins(%do, %vt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %a = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dp, %p : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %rs = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %dx = linalg.generic {indexing_maps = [#id3, #id3, #row, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %p, %rs, %hide : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x1xf32>, tensor<4x4xi1>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %k: f32, %h: i1, %o: f32):
    %t = arith.mulf %j, %k : f32
    %d = arith.subf %i, %t : f32
    %sc = arith.mulf %d, %quarter : f32
    %r = arith.select %h, %zero, %sc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eq = tensor.empty() : tensor<2x8x4xf32>
  %qt = linalg.transpose ins(%q : tensor<2x4x8xf32>) outs(%eq : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %zk = linalg.fill ins(%zero : f32) outs(%eq : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dkt = linalg.batch_matmul ins(%qt, %dx : tensor<2x8x4xf32>, tensor<2x4x4xf32>) outs(%zk : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %ktt = linalg.transpose ins(%kt : tensor<2x8x4xf32>) outs(%eo : tensor<2x4x8xf32>) permutation = [0, 2, 1]
  %dq = linalg.batch_matmul ins(%dx, %ktt : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %out, %dq, %dkt, %dv : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>
}

// -----

// As above, but the gradient is zeroed on the diagonal too (not the
// gradient of this attention): nothing is fused.
// CHECK-LABEL: func.func @gradient_masked_elsewhere
// CHECK-NOT: nova.attention
// CHECK: linalg.batch_matmul
// CHECK: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @gradient_masked_elsewhere(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %do: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %quarter = arith.constant 2.500000e-01 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %hide = arith.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %hide2 = arith.constant dense<[[true, true, true, true], [false, true, true, true], [false, false, true, true], [false, false, false, true]]> : tensor<4x4xi1>
  %e = tensor.empty() : tensor<2x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %hide : tensor<2x4x4xf32>, tensor<4x4xi1>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %h: i1, %o: f32):
    %sc = arith.mulf %a, %quarter : f32
    %r = arith.select %h, %ninf, %sc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %er1 = tensor.empty() : tensor<2x4x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x4x4xf32>) outs(%mi : tensor<2x4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %m : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %li = linalg.fill ins(%zero : f32) outs(%er1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%ex : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = linalg.batch_matmul ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %pt = linalg.transpose ins(%p : tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) permutation = [0, 2, 1]
  %dv = linalg.batch_matmul ins(%pt, %do : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %ev = tensor.empty() : tensor<2x8x4xf32>
  %vt = linalg.transpose ins(%v : tensor<2x4x8xf32>) outs(%ev : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %dp = linalg.batch_matmul ins(%do, %vt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %a = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dp, %p : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %rs = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %dx = linalg.generic {indexing_maps = [#id3, #id3, #row, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %p, %rs, %hide2 : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x1xf32>, tensor<4x4xi1>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %k: f32, %h: i1, %o: f32):
    %t = arith.mulf %j, %k : f32
    %d = arith.subf %i, %t : f32
    %sc = arith.mulf %d, %quarter : f32
    %r = arith.select %h, %zero, %sc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eq = tensor.empty() : tensor<2x8x4xf32>
  %qt = linalg.transpose ins(%q : tensor<2x4x8xf32>) outs(%eq : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %zk = linalg.fill ins(%zero : f32) outs(%eq : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dkt = linalg.batch_matmul ins(%qt, %dx : tensor<2x8x4xf32>, tensor<2x4x4xf32>) outs(%zk : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %ktt = linalg.transpose ins(%kt : tensor<2x8x4xf32>) outs(%eo : tensor<2x4x8xf32>) permutation = [0, 2, 1]
  %dq = linalg.batch_matmul ins(%dx, %ktt : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %out, %dq, %dkt, %dv : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>
}
