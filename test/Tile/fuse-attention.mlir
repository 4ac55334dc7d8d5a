// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-fuse-attention,canonicalize))' | FileCheck %s

// Causal attention as SDPA's math path reaches Nova's normal form: the mask
// a constant (1 = keep), added as 0 / -inf; the scale folded into q and k
// beforehand; the "row fully masked" guard on the normalisation.
// CHECK-LABEL: func.func @sdpa_causal
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8xf32>, %[[KT:.*]]: tensor<2x8x4xf32>, %[[V:.*]]: tensor<2x4x8xf32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x4x8xf32>
// CHECK: %[[O:.*]] = nova.attention ins(%[[Q]], %[[KT]], %[[V]] : tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%[[INIT]] : tensor<2x4x8xf32>) scale 1.000000e+00 causal -> tensor<2x4x8xf32>
// CHECK-NOT: linalg.batch_matmul
// CHECK-NOT: linalg.generic
// CHECK: return %[[O]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @sdpa_causal(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %true = arith.constant true
  %keep = arith.constant dense<[[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]> : tensor<4x4xf32>
  %e0 = tensor.empty() : tensor<2x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %keep : tensor<2x4x4xf32>, tensor<4x4xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %k = arith.cmpf une, %c, %zero : f32
    %b = arith.select %k, %zero, %ninf : f32
    %r = arith.addf %in, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x4x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x4x4xf32>) outs(%fm : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %m : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<2x4x4xf32>) outs(%fs : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %e2 = tensor.empty() : tensor<2x4x1xi1>
  %ft = linalg.fill ins(%true : i1) outs(%e2 : tensor<2x4x1xi1>) -> tensor<2x4x1xi1>
  %g = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x4x4xf32>) outs(%ft : tensor<2x4x1xi1>) {
  ^bb0(%in: f32, %out: i1):
    %c = arith.cmpf oeq, %in, %ninf : f32
    %r = arith.andi %c, %out : i1
    linalg.yield %r : i1
  } -> tensor<2x4x1xi1>
  %p = linalg.generic {indexing_maps = [#row, #id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%g, %ex, %l : tensor<2x4x1xi1>, tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%gg: i1, %in: f32, %sum: f32, %out: f32):
    %d = arith.divf %in, %sum : f32
    %r = arith.select %gg, %zero, %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%f3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Scores scaled and masked by hand (masked_fill with an inverted mask, as
// Nova's MultiHeadAttention writes it), a 4-D softmax between 3-D matmuls,
// a causal mask built from two aranges (large sequences are not folded to
// constants).
// CHECK-LABEL: func.func @masked_fill_aranges
// CHECK: nova.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) outs(%{{.*}} : tensor<2x4x8xf32>) scale 1.250000e-01 causal
// CHECK-NOT: linalg.batch_matmul
#id1 = affine_map<(d0) -> (d0)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#red4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#qpos = affine_map<(d0, d1, d2) -> (d1, 0)>
#kpos = affine_map<(d0, d1, d2) -> (0, d2)>
func.func @masked_fill_aranges(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 1.250000e-01 : f32
  %c0 = arith.constant 0 : i64
  %ei = tensor.empty() : tensor<4xi64>
  %pos = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%ei : tensor<4xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<4xi64>
  %kp = tensor.expand_shape %pos [[0, 1]] output_shape [1, 4] : tensor<4xi64> into tensor<1x4xi64>
  %qp = tensor.expand_shape %pos [[0, 1]] output_shape [4, 1] : tensor<4xi64> into tensor<4x1xi64>
  %e0 = tensor.empty() : tensor<2x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x = linalg.generic {indexing_maps = [#id3, #kpos, #qpos, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %kp, %qp : tensor<2x4x4xf32>, tensor<1x4xi64>, tensor<4x1xi64>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %key: i64, %query: i64, %out: f32):
    %d = arith.subi %key, %query : i64
    %hide = arith.cmpi sgt, %d, %c0 : i64
    %sc = arith.mulf %in, %scale : f32
    %r = arith.select %hide, %ninf, %sc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %x4 = tensor.expand_shape %x [[0, 1], [2], [3]] output_shape [1, 2, 4, 4] : tensor<2x4x4xf32> into tensor<1x2x4x4xf32>
  %e1 = tensor.empty() : tensor<1x2x4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  %m = linalg.generic {indexing_maps = [#id4, #red4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x4 : tensor<1x2x4x4xf32>) outs(%fm : tensor<1x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4xf32>
  %m4 = tensor.expand_shape %m [[0], [1], [2, 3]] output_shape [1, 2, 4, 1] : tensor<1x2x4xf32> into tensor<1x2x4x1xf32>
  %e4 = tensor.empty() : tensor<1x2x4x4xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x4, %m4 : tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) outs(%e4 : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x4xf32>
  %e5 = tensor.empty() : tensor<1x2x4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e5 : tensor<1x2x4x1xf32>) -> tensor<1x2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x4x4xf32>) outs(%fs : tensor<1x2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x1xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) outs(%e4 : tensor<1x2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<1x2x4x4xf32>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<1x2x4x4xf32> into tensor<2x4x4xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p3, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%f3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Not fused: the probabilities have another user (a training step keeps
// them for its backward), and a mask that is not causal.
// CHECK-LABEL: func.func @kept_probabilities
// CHECK-NOT: nova.attention
// CHECK: linalg.batch_matmul
// CHECK: linalg.batch_matmul
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @kept_probabilities(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e0 = tensor.empty() : tensor<2x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x4x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<2x4x4xf32>) outs(%fm : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<2x4x4xf32>) outs(%fs : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%f3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o, %p : tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @not_causal_mask
// CHECK-NOT: nova.attention
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @not_causal_mask(%q: tensor<2x2x8xf32>, %kt: tensor<2x8x2xf32>, %v: tensor<2x2x8xf32>) -> tensor<2x2x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %keep = arith.constant dense<[[1.0, 1.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %e0 = tensor.empty() : tensor<2x2x2xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x2x8xf32>, tensor<2x8x2xf32>) outs(%f0 : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %x = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %keep : tensor<2x2x2xf32>, tensor<2x2xf32>) outs(%e0 : tensor<2x2x2xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %k = arith.cmpf une, %c, %zero : f32
    %b = arith.select %k, %zero, %ninf : f32
    %r = arith.addf %in, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2xf32>
  %e1 = tensor.empty() : tensor<2x2x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x2x1xf32>) -> tensor<2x2x1xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x2x2xf32>) outs(%fm : tensor<2x2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x1xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %m : tensor<2x2x2xf32>, tensor<2x2x1xf32>) outs(%e0 : tensor<2x2x2xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x2x1xf32>) -> tensor<2x2x1xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x2xf32>) outs(%fs : tensor<2x2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x1xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x2x2xf32>, tensor<2x2x1xf32>) outs(%e0 : tensor<2x2x2xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2xf32>
  %e3 = tensor.empty() : tensor<2x2x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x2x2xf32>, tensor<2x2x8xf32>) outs(%f3 : tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  return %o : tensor<2x2x8xf32>
}

// -----

// SDPA's math path scales q and k by sqrt(scale) and transposes k before
// the score matmul: the fused op takes q and k as they were, the product of
// the scales, and the keys as rows.
// CHECK-LABEL: func.func @scaled_transposed_keys
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8xf32>, %[[K:.*]]: tensor<2x4x8xf32>, %[[V:.*]]: tensor<2x4x8xf32>)
// CHECK-NOT: linalg.
// CHECK: nova.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) outs(%{{.*}} : tensor<2x4x8xf32>) scale 1.250000e-01 key_rows
// CHECK-NOT: linalg.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @scaled_transposed_keys(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %half = arith.constant 2.500000e-01 : f32
  %half2 = arith.constant 5.000000e-01 : f32
  %eq = tensor.empty() : tensor<2x4x8xf32>
  %qs = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%q : tensor<2x4x8xf32>) outs(%eq : tensor<2x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %half : f32
    linalg.yield %r : f32
  } -> tensor<2x4x8xf32>
  %ek = tensor.empty() : tensor<2x8x4xf32>
  %kt = linalg.transpose ins(%k : tensor<2x4x8xf32>) outs(%ek : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %kts = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%kt : tensor<2x8x4xf32>) outs(%ek : tensor<2x8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %half2 : f32
    linalg.yield %r : f32
  } -> tensor<2x8x4xf32>
  %e0 = tensor.empty() : tensor<2x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%qs, %kts : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x4x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %m = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<2x4x4xf32>) outs(%fm : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<2x4x4xf32>) outs(%fs : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%f3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Heads split off [B, T, H, D] projections (expand, transpose to [B, H, T, D],
// collapse to [B * H, T, D]) are read in place: the op takes the
// sequence-major tensors (keys as rows) and writes its output sequence-major
// where that output was transposed back. No transpose (an HBM copy) is left.
// CHECK-LABEL: func.func @split_heads
// CHECK-SAME: (%[[Q:.*]]: tensor<2x8x3x4xf32>, %[[K:.*]]: tensor<2x8x3x4xf32>, %[[V:.*]]: tensor<2x8x3x4xf32>)
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<2x8x3x4xf32>
// CHECK: %[[O:.*]] = nova.attention ins(%[[Q]], %[[K]], %[[V]] : tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>) outs(%[[INIT]] : tensor<2x8x3x4xf32>) scale 5.000000e-01 key_rows causal -> tensor<2x8x3x4xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return %[[O]]
func.func @split_heads(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x4xf32>) -> tensor<2x8x3x4xf32> {
  %e = tensor.empty() : tensor<2x3x8x4xf32>
  %ek = tensor.empty() : tensor<2x3x4x8xf32>
  %qt = linalg.transpose ins(%q : tensor<2x8x3x4xf32>) outs(%e : tensor<2x3x8x4xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k : tensor<2x8x3x4xf32>) outs(%ek : tensor<2x3x4x8xf32>) permutation = [0, 2, 3, 1]
  %vt = linalg.transpose ins(%v : tensor<2x8x3x4xf32>) outs(%e : tensor<2x3x8x4xf32>) permutation = [0, 2, 1, 3]
  %q3 = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<2x3x8x4xf32> into tensor<6x8x4xf32>
  %k3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<2x3x4x8xf32> into tensor<6x4x8xf32>
  %v3 = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<2x3x8x4xf32> into tensor<6x8x4xf32>
  %init = tensor.empty() : tensor<6x8x4xf32>
  %o = nova.attention ins(%q3, %k3, %v3 : tensor<6x8x4xf32>, tensor<6x4x8xf32>, tensor<6x8x4xf32>) outs(%init : tensor<6x8x4xf32>) scale 0.5 causal -> tensor<6x8x4xf32>
  %o4 = tensor.expand_shape %o [[0, 1], [2], [3]] output_shape [2, 3, 8, 4] : tensor<6x8x4xf32> into tensor<2x3x8x4xf32>
  %eo = tensor.empty() : tensor<2x8x3x4xf32>
  %back = linalg.transpose ins(%o4 : tensor<2x3x8x4xf32>) outs(%eo : tensor<2x8x3x4xf32>) permutation = [0, 2, 1, 3]
  return %back : tensor<2x8x3x4xf32>
}

// -----

// An output used heads-first stays heads-first: the sequence-major result is
// transposed once, where three input transposes were saved.
// CHECK-LABEL: func.func @split_heads_output_heads_first
// CHECK: %[[O:.*]] = nova.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) outs(%{{.*}} : tensor<1x8x2x4xf32>) scale 1.000000e+00 key_rows -> tensor<1x8x2x4xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[O]] : tensor<1x8x2x4xf32>) outs(%{{.*}} : tensor<1x2x8x4xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
// CHECK: return %[[C]]
func.func @split_heads_output_heads_first(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v: tensor<1x8x2x4xf32>) -> tensor<2x8x4xf32> {
  %e = tensor.empty() : tensor<1x2x8x4xf32>
  %qt = linalg.transpose ins(%q : tensor<1x8x2x4xf32>) outs(%e : tensor<1x2x8x4xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k : tensor<1x8x2x4xf32>) outs(%e : tensor<1x2x8x4xf32>) permutation = [0, 2, 1, 3]
  %vt = linalg.transpose ins(%v : tensor<1x8x2x4xf32>) outs(%e : tensor<1x2x8x4xf32>) permutation = [0, 2, 1, 3]
  %q3 = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %k3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %v3 = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %init = tensor.empty() : tensor<2x8x4xf32>
  %o = nova.attention ins(%q3, %k3, %v3 : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%init : tensor<2x8x4xf32>) scale 1.0 key_rows -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// Only some operands split off a projection: left heads-first (reading the
// others in place would need the value transposed the other way).
// CHECK-LABEL: func.func @split_heads_partial
// CHECK: nova.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>)
func.func @split_heads_partial(%q: tensor<1x8x2x4xf32>, %k: tensor<1x8x2x4xf32>, %v3: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %e = tensor.empty() : tensor<1x2x8x4xf32>
  %qt = linalg.transpose ins(%q : tensor<1x8x2x4xf32>) outs(%e : tensor<1x2x8x4xf32>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k : tensor<1x8x2x4xf32>) outs(%e : tensor<1x2x8x4xf32>) permutation = [0, 2, 1, 3]
  %q3 = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %k3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x8x4xf32> into tensor<2x8x4xf32>
  %init = tensor.empty() : tensor<2x8x4xf32>
  %o = nova.attention ins(%q3, %k3, %v3 : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) outs(%init : tensor<2x8x4xf32>) scale 1.0 key_rows -> tensor<2x8x4xf32>
  return %o : tensor<2x8x4xf32>
}

// -----

// bf16: the output is rounded before the heads merge back. The rounding
// commutes with the transpose: it is rebuilt on the sequence-major output,
// as rows [B * T, H * Dv].
// CHECK-LABEL: func.func @split_heads_rounded_output
// CHECK: %[[O:.*]] = nova.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xbf16>) outs(%{{.*}} : tensor<1x8x2x4xf32>) scale 1.000000e+00 key_rows causal -> tensor<1x8x2x4xf32>
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %[[O]] {{\[}}[0, 1], [2, 3]] : tensor<1x8x2x4xf32> into tensor<8x8xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[ROWS]] : tensor<8x8xf32>) outs(%{{.*}} : tensor<8x8xbf16>)
// CHECK: arith.truncf
// CHECK-NOT: linalg.transpose
// CHECK: %[[E:.*]] = tensor.expand_shape %[[R]] {{\[}}[0, 1], [2, 3]] output_shape [1, 8, 2, 4] : tensor<8x8xbf16> into tensor<1x8x2x4xbf16>
// CHECK: return %[[E]]
#id3r = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @split_heads_rounded_output(%q: tensor<1x8x2x4xbf16>, %k: tensor<1x8x2x4xbf16>, %v: tensor<1x8x2x4xbf16>) -> tensor<1x8x2x4xbf16> {
  %e = tensor.empty() : tensor<1x2x8x4xbf16>
  %qt = linalg.transpose ins(%q : tensor<1x8x2x4xbf16>) outs(%e : tensor<1x2x8x4xbf16>) permutation = [0, 2, 1, 3]
  %kt = linalg.transpose ins(%k : tensor<1x8x2x4xbf16>) outs(%e : tensor<1x2x8x4xbf16>) permutation = [0, 2, 1, 3]
  %vt = linalg.transpose ins(%v : tensor<1x8x2x4xbf16>) outs(%e : tensor<1x2x8x4xbf16>) permutation = [0, 2, 1, 3]
  %q3 = tensor.collapse_shape %qt [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %k3 = tensor.collapse_shape %kt [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %v3 = tensor.collapse_shape %vt [[0, 1], [2], [3]] : tensor<1x2x8x4xbf16> into tensor<2x8x4xbf16>
  %init = tensor.empty() : tensor<2x8x4xf32>
  %o = nova.attention ins(%q3, %k3, %v3 : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>) outs(%init : tensor<2x8x4xf32>) scale 1.0 key_rows causal -> tensor<2x8x4xf32>
  %eb = tensor.empty() : tensor<2x8x4xbf16>
  %ob = linalg.generic {indexing_maps = [#id3r, #id3r], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o : tensor<2x8x4xf32>) outs(%eb : tensor<2x8x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x8x4xbf16>
  %o4 = tensor.expand_shape %ob [[0, 1], [2], [3]] output_shape [1, 2, 8, 4] : tensor<2x8x4xbf16> into tensor<1x2x8x4xbf16>
  %eo = tensor.empty() : tensor<1x8x2x4xbf16>
  %back = linalg.transpose ins(%o4 : tensor<1x2x8x4xbf16>) outs(%eo : tensor<1x8x2x4xbf16>) permutation = [0, 2, 1, 3]
  return %back : tensor<1x8x2x4xbf16>
}

// -----

// Two layers' attention reading one mask conversion (bf16 autocast's
// additive mask, which elementwise fusion leaves unfused because both
// layers read it): the mask is a function of a constant, and both fuse.
// CHECK-LABEL: func.func @shared_mask_conversion
// CHECK-COUNT-2: nova.attention ins
// CHECK-NOT: linalg.batch_matmul
// CHECK: return
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @shared_mask_conversion(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %keep = arith.constant dense<[[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]> : tensor<4x4xf32>
  %eb = tensor.empty() : tensor<4x4xf32>
  %bias = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%keep : tensor<4x4xf32>) outs(%eb : tensor<4x4xf32>) {
  ^bb0(%c: f32, %out: f32):
    %k = arith.cmpf une, %c, %zero : f32
    %b = arith.select %k, %zero, %ninf : f32
    linalg.yield %b : f32
  } -> tensor<4x4xf32>
  %e0 = tensor.empty() : tensor<2x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x4x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s1 = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x1 = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s1, %bias : tensor<2x4x4xf32>, tensor<4x4xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %r = arith.addf %in, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %m1 = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1 : tensor<2x4x4xf32>) outs(%fm : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex1 = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x1, %m1 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %l1 = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex1 : tensor<2x4x4xf32>) outs(%fs : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p1 = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex1, %l1 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %o1 = linalg.batch_matmul ins(%p1, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%f3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s2 = linalg.batch_matmul ins(%v, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x2 = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s2, %bias : tensor<2x4x4xf32>, tensor<4x4xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %r = arith.addf %in, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %m2 = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x2 : tensor<2x4x4xf32>) outs(%fm : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex2 = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x2, %m2 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %l2 = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex2 : tensor<2x4x4xf32>) outs(%fs : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p2 = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex2, %l2 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %o2 = linalg.batch_matmul ins(%p2, %q : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%f3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o1, %o2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// The same with a converted mask that is not causal: neither fuses.
// CHECK-LABEL: func.func @shared_mask_conversion_not_causal
// CHECK-NOT: nova.attention
// CHECK-COUNT-4: linalg.batch_matmul
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @shared_mask_conversion_not_causal(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %keep = arith.constant dense<[[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]> : tensor<4x4xf32>
  %eb = tensor.empty() : tensor<4x4xf32>
  %bias = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%keep : tensor<4x4xf32>) outs(%eb : tensor<4x4xf32>) {
  ^bb0(%c: f32, %out: f32):
    %k = arith.cmpf une, %c, %zero : f32
    %b = arith.select %k, %zero, %ninf : f32
    linalg.yield %b : f32
  } -> tensor<4x4xf32>
  %e0 = tensor.empty() : tensor<2x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x4x1xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %e3 = tensor.empty() : tensor<2x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s1 = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x1 = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s1, %bias : tensor<2x4x4xf32>, tensor<4x4xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %r = arith.addf %in, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %m1 = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x1 : tensor<2x4x4xf32>) outs(%fm : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex1 = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x1, %m1 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %l1 = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex1 : tensor<2x4x4xf32>) outs(%fs : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p1 = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex1, %l1 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %o1 = linalg.batch_matmul ins(%p1, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%f3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s2 = linalg.batch_matmul ins(%v, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%f0 : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %x2 = linalg.generic {indexing_maps = [#id3, #mask, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s2, %bias : tensor<2x4x4xf32>, tensor<4x4xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %b: f32, %out: f32):
    %r = arith.addf %in, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %m2 = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x2 : tensor<2x4x4xf32>) outs(%fm : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %ex2 = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x2, %m2 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %l2 = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex2 : tensor<2x4x4xf32>) outs(%fs : tensor<2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %p2 = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex2, %l2 : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%e0 : tensor<2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %o2 = linalg.batch_matmul ins(%p2, %q : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%f3 : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o1, %o2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Hugging Face's SDPA call under tracing: a [B, 1, T, T] causal mask (1 =
// hide) broadcast over the heads, and torch's safe softmax, whose guard
// (row maximum == -inf) zeroes fully hidden rows before and after it. A
// causal mask keeps the diagonal, so the guard is false: its selects go and
// the attention fuses.
// CHECK-LABEL: func.func @hf_mask_safe_softmax
// CHECK-SAME: (%[[Q:.*]]: tensor<4x4x8xf32>, %[[KT:.*]]: tensor<4x8x4xf32>, %[[V:.*]]: tensor<4x4x8xf32>)
// CHECK: %[[O:.*]] = nova.attention ins(%[[Q]], %[[KT]], %[[V]] : tensor<4x4x8xf32>, tensor<4x8x4xf32>, tensor<4x4x8xf32>) outs(%{{.*}} : tensor<4x4x8xf32>) scale 1.000000e+00 causal -> tensor<4x4x8xf32>
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.batch_matmul
// CHECK: return %[[O]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bmask = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#rowb = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
func.func @hf_mask_safe_softmax(%q: tensor<4x4x8xf32>, %kt: tensor<4x8x4xf32>, %v: tensor<4x4x8xf32>) -> tensor<4x4x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %hide = arith.constant dense<[[[[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]], [[[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<2x1x4x4xf32>
  %e0 = tensor.empty() : tensor<4x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = linalg.batch_matmul ins(%q, %kt : tensor<4x4x8xf32>, tensor<4x8x4xf32>) outs(%f0 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
  %e4 = tensor.empty() : tensor<2x2x4x4xf32>
  %x = linalg.generic {indexing_maps = [#id4, #bmask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %hide : tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %h = arith.cmpf une, %c, %zero : f32
    %b = arith.select %h, %ninf, %zero : f32
    %r = arith.addf %in, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x2x4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %m0 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x2x4x4xf32>) outs(%fm : tensor<2x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4xf32>
  %m0e = tensor.expand_shape %m0 [[0], [1], [2, 3]] output_shape [2, 2, 4, 1] : tensor<2x2x4xf32> into tensor<2x2x4x1xf32>
  %eg = tensor.empty() : tensor<2x2x4x1xi1>
  %g = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%m0e : tensor<2x2x4x1xf32>) outs(%eg : tensor<2x2x4x1xi1>) {
  ^bb0(%in: f32, %out: i1):
    %r = arith.cmpf oeq, %in, %ninf : f32
    linalg.yield %r : i1
  } -> tensor<2x2x4x1xi1>
  %xs = linalg.generic {indexing_maps = [#rowb, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %x : tensor<2x2x4x1xi1>, tensor<2x2x4x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%gg: i1, %in: f32, %out: f32):
    %r = arith.select %gg, %zero, %in : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %m = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%xs : tensor<2x2x4x4xf32>) outs(%fm : tensor<2x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4xf32>
  %me = tensor.expand_shape %m [[0], [1], [2, 3]] output_shape [2, 2, 4, 1] : tensor<2x2x4xf32> into tensor<2x2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #rowb, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xs, %me : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %el = tensor.empty() : tensor<2x2x4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%el : tensor<2x2x4x1xf32>) -> tensor<2x2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id4, #rowb], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x4x4xf32>) outs(%fs : tensor<2x2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x1xf32>
  %pn = linalg.generic {indexing_maps = [#id4, #rowb, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %p = linalg.generic {indexing_maps = [#rowb, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %pn : tensor<2x2x4x1xi1>, tensor<2x2x4x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%gg: i1, %in: f32, %out: f32):
    %r = arith.select %gg, %zero, %in : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
  %e3 = tensor.empty() : tensor<4x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %o = linalg.batch_matmul ins(%p3, %v : tensor<4x4x4xf32>, tensor<4x4x8xf32>) outs(%f3 : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  return %o : tensor<4x4x8xf32>
}

// -----

// The same with query row 0 fully hidden: not causal, and the guard is
// live (it zeroes that row). Nothing is fused or dropped.
// CHECK-LABEL: func.func @hf_mask_fully_hidden_row
// CHECK-NOT: nova.attention
// CHECK: arith.cmpf oeq
// CHECK: arith.select
// CHECK: return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bmask = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#rowb = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
func.func @hf_mask_fully_hidden_row(%q: tensor<4x4x8xf32>, %kt: tensor<4x8x4xf32>, %v: tensor<4x4x8xf32>) -> tensor<4x4x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %hide = arith.constant dense<[[[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]], [[[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<2x1x4x4xf32>
  %e0 = tensor.empty() : tensor<4x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = linalg.batch_matmul ins(%q, %kt : tensor<4x4x8xf32>, tensor<4x8x4xf32>) outs(%f0 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xf32> into tensor<2x2x4x4xf32>
  %e4 = tensor.empty() : tensor<2x2x4x4xf32>
  %x = linalg.generic {indexing_maps = [#id4, #bmask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %hide : tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%in: f32, %c: f32, %out: f32):
    %h = arith.cmpf une, %c, %zero : f32
    %b = arith.select %h, %ninf, %zero : f32
    %r = arith.addf %in, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x2x4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %m0 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x2x4x4xf32>) outs(%fm : tensor<2x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4xf32>
  %m0e = tensor.expand_shape %m0 [[0], [1], [2, 3]] output_shape [2, 2, 4, 1] : tensor<2x2x4xf32> into tensor<2x2x4x1xf32>
  %eg = tensor.empty() : tensor<2x2x4x1xi1>
  %g = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%m0e : tensor<2x2x4x1xf32>) outs(%eg : tensor<2x2x4x1xi1>) {
  ^bb0(%in: f32, %out: i1):
    %r = arith.cmpf oeq, %in, %ninf : f32
    linalg.yield %r : i1
  } -> tensor<2x2x4x1xi1>
  %xs = linalg.generic {indexing_maps = [#rowb, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %x : tensor<2x2x4x1xi1>, tensor<2x2x4x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%gg: i1, %in: f32, %out: f32):
    %r = arith.select %gg, %zero, %in : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %m = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%xs : tensor<2x2x4x4xf32>) outs(%fm : tensor<2x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4xf32>
  %me = tensor.expand_shape %m [[0], [1], [2, 3]] output_shape [2, 2, 4, 1] : tensor<2x2x4xf32> into tensor<2x2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #rowb, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xs, %me : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %el = tensor.empty() : tensor<2x2x4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%el : tensor<2x2x4x1xf32>) -> tensor<2x2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id4, #rowb], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x4x4xf32>) outs(%fs : tensor<2x2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x1xf32>
  %pn = linalg.generic {indexing_maps = [#id4, #rowb, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %p = linalg.generic {indexing_maps = [#rowb, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %pn : tensor<2x2x4x1xi1>, tensor<2x2x4x4xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%gg: i1, %in: f32, %out: f32):
    %r = arith.select %gg, %zero, %in : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x2x4x4xf32> into tensor<4x4x4xf32>
  %e3 = tensor.empty() : tensor<4x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %o = linalg.batch_matmul ins(%p3, %v : tensor<4x4x4xf32>, tensor<4x4x8xf32>) outs(%f3 : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  return %o : tensor<4x4x8xf32>
}

// -----

// The same under bf16 autocast: the score matmul's f32 result rounded to
// bf16 by a generic of its own, the mask added in bf16, the guarded scores
// widened for an f32 softmax and P rounded to bf16 for the P V matmul. The
// kernel keeps the scores in f32 (it skips the rounding, as where it is
// fused with the mask).
// CHECK-LABEL: func.func @hf_mask_safe_softmax_bf16
// CHECK-SAME: (%[[Q:.*]]: tensor<4x4x8xbf16>, %[[KT:.*]]: tensor<4x8x4xbf16>, %[[V:.*]]: tensor<4x4x8xbf16>)
// CHECK: %[[O:.*]] = nova.attention ins(%[[Q]], %[[KT]], %[[V]] : tensor<4x4x8xbf16>, tensor<4x8x4xbf16>, tensor<4x4x8xbf16>) outs(%{{.*}} : tensor<4x4x8xf32>) scale 1.000000e+00 causal -> tensor<4x4x8xf32>
// CHECK-NOT: linalg.batch_matmul
// CHECK: return %[[O]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bmask = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#rowb = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
func.func @hf_mask_safe_softmax_bf16(%q: tensor<4x4x8xbf16>, %kt: tensor<4x8x4xbf16>, %v: tensor<4x4x8xbf16>) -> tensor<4x4x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %bzero = arith.constant 0.000000e+00 : bf16
  %bninf = arith.constant 0xFF80 : bf16
  %hide = arith.constant dense<[[[[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]], [[[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<2x1x4x4xf32>
  %em = tensor.empty() : tensor<2x1x4x4xbf16>
  %bias = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%hide : tensor<2x1x4x4xf32>) outs(%em : tensor<2x1x4x4xbf16>) {
  ^bb0(%c: f32, %out: bf16):
    %h = arith.cmpf une, %c, %zero : f32
    %b = arith.select %h, %bninf, %bzero : bf16
    linalg.yield %b : bf16
  } -> tensor<2x1x4x4xbf16>
  %e0 = tensor.empty() : tensor<4x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s32 = linalg.batch_matmul ins(%q, %kt : tensor<4x4x8xbf16>, tensor<4x8x4xbf16>) outs(%f0 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %eb = tensor.empty() : tensor<4x4x4xbf16>
  %s3 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s32 : tensor<4x4x4xf32>) outs(%eb : tensor<4x4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x4x4xbf16>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xbf16> into tensor<2x2x4x4xbf16>
  %e4b = tensor.empty() : tensor<2x2x4x4xbf16>
  %x = linalg.generic {indexing_maps = [#id4, #bmask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<2x2x4x4xbf16>, tensor<2x1x4x4xbf16>) outs(%e4b : tensor<2x2x4x4xbf16>) {
  ^bb0(%in: bf16, %b: bf16, %out: bf16):
    %r = arith.addf %in, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<2x2x4x4xbf16>
  %e1b = tensor.empty() : tensor<2x2x4xbf16>
  %fmb = linalg.fill ins(%bninf : bf16) outs(%e1b : tensor<2x2x4xbf16>) -> tensor<2x2x4xbf16>
  %m0 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x2x4x4xbf16>) outs(%fmb : tensor<2x2x4xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %r = arith.maximumf %in, %out : bf16
    linalg.yield %r : bf16
  } -> tensor<2x2x4xbf16>
  %m0e = tensor.expand_shape %m0 [[0], [1], [2, 3]] output_shape [2, 2, 4, 1] : tensor<2x2x4xbf16> into tensor<2x2x4x1xbf16>
  %eg = tensor.empty() : tensor<2x2x4x1xi1>
  %g = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%m0e : tensor<2x2x4x1xbf16>) outs(%eg : tensor<2x2x4x1xi1>) {
  ^bb0(%in: bf16, %out: i1):
    %w = arith.extf %in : bf16 to f32
    %r = arith.cmpf oeq, %w, %ninf : f32
    linalg.yield %r : i1
  } -> tensor<2x2x4x1xi1>
  %e4 = tensor.empty() : tensor<2x2x4x4xf32>
  %xs = linalg.generic {indexing_maps = [#rowb, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %x : tensor<2x2x4x1xi1>, tensor<2x2x4x4xbf16>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%gg: i1, %in: bf16, %out: f32):
    %r = arith.select %gg, %bzero, %in : bf16
    %w = arith.extf %r : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<2x2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x2x4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %m = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%xs : tensor<2x2x4x4xf32>) outs(%fm : tensor<2x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4xf32>
  %me = tensor.expand_shape %m [[0], [1], [2, 3]] output_shape [2, 2, 4, 1] : tensor<2x2x4xf32> into tensor<2x2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #rowb, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xs, %me : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %el = tensor.empty() : tensor<2x2x4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%el : tensor<2x2x4x1xf32>) -> tensor<2x2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id4, #rowb], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x4x4xf32>) outs(%fs : tensor<2x2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x1xf32>
  %pn = linalg.generic {indexing_maps = [#id4, #rowb, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%e4b : tensor<2x2x4x4xbf16>) {
  ^bb0(%in: f32, %sum: f32, %out: bf16):
    %r = arith.divf %in, %sum : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x2x4x4xbf16>
  %p = linalg.generic {indexing_maps = [#rowb, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %pn : tensor<2x2x4x1xi1>, tensor<2x2x4x4xbf16>) outs(%e4b : tensor<2x2x4x4xbf16>) {
  ^bb0(%gg: i1, %in: bf16, %out: bf16):
    %r = arith.select %gg, %bzero, %in : bf16
    linalg.yield %r : bf16
  } -> tensor<2x2x4x4xbf16>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x2x4x4xbf16> into tensor<4x4x4xbf16>
  %e3 = tensor.empty() : tensor<4x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %o = linalg.batch_matmul ins(%p3, %v : tensor<4x4x4xbf16>, tensor<4x4x8xbf16>) outs(%f3 : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  return %o : tensor<4x4x8xf32>
}

// -----

// As Llama's attention reaches it under autocast: the softmax's f32 output
// rounded to bf16 for the P V matmul by a generic of its own (the guard's
// select with it), the rest as above.
// CHECK-LABEL: func.func @hf_mask_safe_softmax_bf16_rounded_p
// CHECK-SAME: (%[[Q:.*]]: tensor<4x4x8xbf16>, %[[KT:.*]]: tensor<4x8x4xbf16>, %[[V:.*]]: tensor<4x4x8xbf16>)
// CHECK: %[[O:.*]] = nova.attention ins(%[[Q]], %[[KT]], %[[V]] : tensor<4x4x8xbf16>, tensor<4x8x4xbf16>, tensor<4x4x8xbf16>) outs(%{{.*}} : tensor<4x4x8xf32>) scale 1.000000e+00 causal -> tensor<4x4x8xf32>
// CHECK-NOT: linalg.batch_matmul
// CHECK: return %[[O]]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bmask = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#rowb = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
func.func @hf_mask_safe_softmax_bf16_rounded_p(%q: tensor<4x4x8xbf16>, %kt: tensor<4x8x4xbf16>, %v: tensor<4x4x8xbf16>) -> tensor<4x4x8xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %bzero = arith.constant 0.000000e+00 : bf16
  %bninf = arith.constant 0xFF80 : bf16
  %hide = arith.constant dense<[[[[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]], [[[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<2x1x4x4xf32>
  %em = tensor.empty() : tensor<2x1x4x4xbf16>
  %bias = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%hide : tensor<2x1x4x4xf32>) outs(%em : tensor<2x1x4x4xbf16>) {
  ^bb0(%c: f32, %out: bf16):
    %h = arith.cmpf une, %c, %zero : f32
    %b = arith.select %h, %bninf, %bzero : bf16
    linalg.yield %b : bf16
  } -> tensor<2x1x4x4xbf16>
  %e0 = tensor.empty() : tensor<4x4x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s32 = linalg.batch_matmul ins(%q, %kt : tensor<4x4x8xbf16>, tensor<4x8x4xbf16>) outs(%f0 : tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %eb = tensor.empty() : tensor<4x4x4xbf16>
  %s3 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s32 : tensor<4x4x4xf32>) outs(%eb : tensor<4x4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x4x4xbf16>
  %s = tensor.expand_shape %s3 [[0, 1], [2], [3]] output_shape [2, 2, 4, 4] : tensor<4x4x4xbf16> into tensor<2x2x4x4xbf16>
  %e4b = tensor.empty() : tensor<2x2x4x4xbf16>
  %x = linalg.generic {indexing_maps = [#id4, #bmask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<2x2x4x4xbf16>, tensor<2x1x4x4xbf16>) outs(%e4b : tensor<2x2x4x4xbf16>) {
  ^bb0(%in: bf16, %b: bf16, %out: bf16):
    %r = arith.addf %in, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<2x2x4x4xbf16>
  %e1b = tensor.empty() : tensor<2x2x4xbf16>
  %fmb = linalg.fill ins(%bninf : bf16) outs(%e1b : tensor<2x2x4xbf16>) -> tensor<2x2x4xbf16>
  %m0 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x2x4x4xbf16>) outs(%fmb : tensor<2x2x4xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %r = arith.maximumf %in, %out : bf16
    linalg.yield %r : bf16
  } -> tensor<2x2x4xbf16>
  %m0e = tensor.expand_shape %m0 [[0], [1], [2, 3]] output_shape [2, 2, 4, 1] : tensor<2x2x4xbf16> into tensor<2x2x4x1xbf16>
  %eg = tensor.empty() : tensor<2x2x4x1xi1>
  %g = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%m0e : tensor<2x2x4x1xbf16>) outs(%eg : tensor<2x2x4x1xi1>) {
  ^bb0(%in: bf16, %out: i1):
    %w = arith.extf %in : bf16 to f32
    %r = arith.cmpf oeq, %w, %ninf : f32
    linalg.yield %r : i1
  } -> tensor<2x2x4x1xi1>
  %e4 = tensor.empty() : tensor<2x2x4x4xf32>
  %xs = linalg.generic {indexing_maps = [#rowb, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %x : tensor<2x2x4x1xi1>, tensor<2x2x4x4xbf16>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%gg: i1, %in: bf16, %out: f32):
    %r = arith.select %gg, %bzero, %in : bf16
    %w = arith.extf %r : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<2x2x4x4xf32>
  %e1 = tensor.empty() : tensor<2x2x4xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %m = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%xs : tensor<2x2x4x4xf32>) outs(%fm : tensor<2x2x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4xf32>
  %me = tensor.expand_shape %m [[0], [1], [2, 3]] output_shape [2, 2, 4, 1] : tensor<2x2x4xf32> into tensor<2x2x4x1xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #rowb, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%xs, %me : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%in: f32, %mx: f32, %out: f32):
    %d = arith.subf %in, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %el = tensor.empty() : tensor<2x2x4x1xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%el : tensor<2x2x4x1xf32>) -> tensor<2x2x4x1xf32>
  %l = linalg.generic {indexing_maps = [#id4, #rowb], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<2x2x4x4xf32>) outs(%fs : tensor<2x2x4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x1xf32>
  %pn = linalg.generic {indexing_maps = [#id4, #rowb, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %l : tensor<2x2x4x4xf32>, tensor<2x2x4x1xf32>) outs(%e4 : tensor<2x2x4x4xf32>) {
  ^bb0(%in: f32, %sum: f32, %out: f32):
    %r = arith.divf %in, %sum : f32
    linalg.yield %r : f32
  } -> tensor<2x2x4x4xf32>
  %p = linalg.generic {indexing_maps = [#rowb, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g, %pn : tensor<2x2x4x1xi1>, tensor<2x2x4x4xf32>) outs(%e4b : tensor<2x2x4x4xbf16>) {
  ^bb0(%gg: i1, %in: f32, %out: bf16):
    %r = arith.select %gg, %zero, %in : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x2x4x4xbf16>
  %p3 = tensor.collapse_shape %p [[0, 1], [2], [3]] : tensor<2x2x4x4xbf16> into tensor<4x4x4xbf16>
  %e3 = tensor.empty() : tensor<4x4x8xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %o = linalg.batch_matmul ins(%p3, %v : tensor<4x4x4xbf16>, tensor<4x4x8xbf16>) outs(%f3 : tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  return %o : tensor<4x4x8xf32>
}
