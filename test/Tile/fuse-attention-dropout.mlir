// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-fuse-attention,canonicalize))' | FileCheck %s

// A training step's causal attention with attention dropout as Nova's
// dropout gives it (nova/frontend/dropout.py): D = keep / (1 - p), the keep
// bit an i1 value of a counter hash (here a stand-in: counter * seed < t),
// computed on [B * T, T] rows and reshaped to P's shape. The forward reads
// Pd = P * D, the backward dV = Pd^T dO and dP = (dO V^T) * D. Both fused
// ops form and take the keep bits as one i1 tensor (the hash generic now
// yields the bit); no [2, 4, 4] float tensor is left.
// CHECK-LABEL: func.func @dropout_causal_train
// CHECK: %[[BITS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x4xi1>)
// CHECK: arith.cmpi slt
// CHECK-NEXT: linalg.yield %{{.*}} : i1
// CHECK: %[[KEEP:.*]] = tensor.expand_shape %[[BITS]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xi1> into tensor<2x4x4xi1>
// CHECK: %[[O:.*]]:2 = nova.attention_lse {{.*}} scale 1.000000e+00 causal dropout(%[[KEEP]] : tensor<2x4x4xi1>) keep_scale 1.1111111{{[0-9]*}}
// CHECK: nova.attention_backward ins({{.*}}, %[[O]]#0, %{{.*}}, %[[O]]#1 : {{.*}}) outs({{.*}}) scale 1.000000e+00 causal dropout(%[[KEEP]] : tensor<2x4x4xi1>) keep_scale 1.1111111{{[0-9]*}}
// CHECK-NOT: xf32> into tensor<2x4x4xf32>
// CHECK-NOT: tensor<8x4xf32>
// CHECK-NOT: linalg.batch_matmul
// CHECK: return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#sc2 = affine_map<(d0, d1) -> ()>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#rowr = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @dropout_causal_train(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %do: tensor<2x4x8xf32>,
                                %counter: tensor<8x4xi64>, %seed: tensor<i64>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %keepp = arith.constant 0.899999976 : f32
  %thr = arith.constant 15099495 : i64
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
  // D = keep / 0.9 on [B * T, T] rows.
  %e2 = tensor.empty() : tensor<8x4xf32>
  %d2 = linalg.generic {indexing_maps = [#id2, #sc2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%counter, %seed : tensor<8x4xi64>, tensor<i64>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%c: i64, %sd: i64, %o: f32):
    %h = arith.muli %c, %sd : i64
    %k = arith.cmpi slt, %h, %thr : i64
    %f = arith.uitofp %k : i1 to f32
    %r = arith.divf %f, %keepp : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %d3 = tensor.expand_shape %d2 [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xf32> into tensor<2x4x4xf32>
  %pd = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p, %d3 : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = linalg.batch_matmul ins(%pd, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // Backward.
  %pt = linalg.transpose ins(%pd : tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) permutation = [0, 2, 1]
  %dv = linalg.batch_matmul ins(%pt, %do : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %ev = tensor.empty() : tensor<2x8x4xf32>
  %vt = linalg.transpose ins(%v : tensor<2x4x8xf32>) outs(%ev : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %dpd = linalg.batch_matmul ins(%do, %vt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %dpd2 = tensor.collapse_shape %dpd [[0, 1], [2]] : tensor<2x4x4xf32> into tensor<8x4xf32>
  %dp2 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%dpd2, %d2 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %dp = tensor.expand_shape %dp2 [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xf32> into tensor<2x4x4xf32>
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

// The factor of P is not keep * scale (it reads the counter itself): not a
// dropout, and the chain stays as it is (nothing fused).
// CHECK-LABEL: func.func @factor_not_a_keep_mask
// CHECK-NOT: nova.attention
// CHECK: linalg.batch_matmul
// CHECK-NOT: nova.attention
// CHECK: return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#sc2 = affine_map<(d0, d1) -> ()>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#rowr = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @factor_not_a_keep_mask(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %do: tensor<2x4x8xf32>,
                                %counter: tensor<8x4xi64>, %seed: tensor<i64>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %keepp = arith.constant 0.899999976 : f32
  %thr = arith.constant 15099495 : i64
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
  // D = keep / 0.9 on [B * T, T] rows.
  %e2 = tensor.empty() : tensor<8x4xf32>
  %d2 = linalg.generic {indexing_maps = [#id2, #sc2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%counter, %seed : tensor<8x4xi64>, tensor<i64>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%c: i64, %sd: i64, %o: f32):
    %h = arith.muli %c, %sd : i64
    %k = arith.cmpi slt, %h, %thr : i64
    %f = arith.uitofp %k : i1 to f32
    %w = arith.sitofp %c : i64 to f32
    %r = arith.mulf %f, %w : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %d3 = tensor.expand_shape %d2 [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xf32> into tensor<2x4x4xf32>
  %pd = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p, %d3 : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = linalg.batch_matmul ins(%pd, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // Backward.
  %pt = linalg.transpose ins(%pd : tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) permutation = [0, 2, 1]
  %dv = linalg.batch_matmul ins(%pt, %do : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %ev = tensor.empty() : tensor<2x8x4xf32>
  %vt = linalg.transpose ins(%v : tensor<2x4x8xf32>) outs(%ev : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %dpd = linalg.batch_matmul ins(%do, %vt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %dpd2 = tensor.collapse_shape %dpd [[0, 1], [2]] : tensor<2x4x4xf32> into tensor<8x4xf32>
  %dp2 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%dpd2, %d2 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %dp = tensor.expand_shape %dp2 [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xf32> into tensor<2x4x4xf32>
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

// The same under bf16 autocast, as Hugging Face GPT-2 traces: P rounded to
// bf16 by the division's generic, D = keep / bf16(0.9) in bf16 (the scale
// folds through an inexact truncf, which arith does not fold), and the
// backward's A = ext(dPd * D) * ext(P) in one generic. Both ops form with
// bf16's scale.
// CHECK-LABEL: func.func @dropout_causal_train_bf16
// CHECK: %[[BITS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<8x4xi1>)
// CHECK: %[[KEEP:.*]] = tensor.expand_shape %[[BITS]]
// CHECK: nova.attention_lse {{.*}} dropout(%[[KEEP]] : tensor<2x4x4xi1>) keep_scale 1.109375
// CHECK: nova.attention_backward {{.*}} dropout(%[[KEEP]] : tensor<2x4x4xi1>) keep_scale 1.109375
// CHECK-NOT: linalg.batch_matmul
// CHECK-NOT: tensor<2x4x4xbf16>
// CHECK: return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#sc2 = affine_map<(d0, d1) -> ()>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#rowr = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @dropout_causal_train_bf16(%q: tensor<2x4x8xbf16>, %kt: tensor<2x8x4xbf16>, %v: tensor<2x4x8xbf16>, %do: tensor<2x4x8xbf16>,
                                     %counter: tensor<8x4xi64>, %seed: tensor<i64>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %keepp = arith.constant 0.899999976 : f32
  %thr = arith.constant 15099495 : i64
  %keep = arith.constant dense<[[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]> : tensor<4x4xf32>
  %e = tensor.empty() : tensor<2x4x4xf32>
  %eb = tensor.empty() : tensor<2x4x4xbf16>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x4x8xbf16>, tensor<2x8x4xbf16>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
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
  // P = E / l rounded to bf16 by the division's generic.
  %p = linalg.generic {indexing_maps = [#id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %l : tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%eb : tensor<2x4x4xbf16>) {
  ^bb0(%a: f32, %b: f32, %o: bf16):
    %r = arith.divf %a, %b : f32
    %t = arith.truncf %r : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x4x4xbf16>
  // D = keep / bf16(0.9) in bf16 (autocast's dropout): the scale folds
  // through an inexact truncf.
  %e2 = tensor.empty() : tensor<8x4xbf16>
  %d2 = linalg.generic {indexing_maps = [#id2, #sc2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%counter, %seed : tensor<8x4xi64>, tensor<i64>) outs(%e2 : tensor<8x4xbf16>) {
  ^bb0(%c: i64, %sd: i64, %o: bf16):
    %h = arith.muli %c, %sd : i64
    %k = arith.cmpi slt, %h, %thr : i64
    %f = arith.uitofp %k : i1 to bf16
    %pb = arith.truncf %keepp : f32 to bf16
    %r = arith.divf %f, %pb : bf16
    linalg.yield %r : bf16
  } -> tensor<8x4xbf16>
  %d3 = tensor.expand_shape %d2 [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xbf16> into tensor<2x4x4xbf16>
  %pd = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p, %d3 : tensor<2x4x4xbf16>, tensor<2x4x4xbf16>) outs(%eb : tensor<2x4x4xbf16>) {
  ^bb0(%i: bf16, %j: bf16, %o: bf16):
    %r = arith.mulf %i, %j : bf16
    linalg.yield %r : bf16
  } -> tensor<2x4x4xbf16>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = linalg.batch_matmul ins(%pd, %v : tensor<2x4x4xbf16>, tensor<2x4x8xbf16>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // Backward.
  %pt = linalg.transpose ins(%pd : tensor<2x4x4xbf16>) outs(%eb : tensor<2x4x4xbf16>) permutation = [0, 2, 1]
  %dv = linalg.batch_matmul ins(%pt, %do : tensor<2x4x4xbf16>, tensor<2x4x8xbf16>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %ev = tensor.empty() : tensor<2x8x4xbf16>
  %vt = linalg.transpose ins(%v : tensor<2x4x8xbf16>) outs(%ev : tensor<2x8x4xbf16>) permutation = [0, 2, 1]
  %dpd = linalg.batch_matmul ins(%do, %vt : tensor<2x4x8xbf16>, tensor<2x8x4xbf16>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %dpdb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dpd : tensor<2x4x4xf32>) outs(%eb : tensor<2x4x4xbf16>) {
  ^bb0(%i: f32, %o: bf16):
    %r = arith.truncf %i : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x4x4xbf16>
  %pw = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p : tensor<2x4x4xbf16>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: bf16, %o: f32):
    %r = arith.extf %i : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  // A = ext(dPd * D) * P, the dropout's factor of dP in the same generic.
  %a = linalg.generic {indexing_maps = [#id3, #id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dpdb, %d3, %pw : tensor<2x4x4xbf16>, tensor<2x4x4xbf16>, tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: bf16, %j: bf16, %k: f32, %o: f32):
    %t = arith.mulf %i, %j : bf16
    %w = arith.extf %t : bf16 to f32
    %r = arith.mulf %w, %k : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %rs = linalg.generic {indexing_maps = [#id3, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : tensor<2x4x4xf32>) outs(%li : tensor<2x4x1xf32>) {
  ^bb0(%i: f32, %acc: f32):
    %r = arith.addf %i, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x4x1xf32>
  %dx = linalg.generic {indexing_maps = [#id3, #id3, #row, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %pw, %rs : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x1xf32>) outs(%eb : tensor<2x4x4xbf16>) {
  ^bb0(%i: f32, %j: f32, %k: f32, %o: bf16):
    %t = arith.mulf %j, %k : f32
    %r = arith.subf %i, %t : f32
    %b = arith.truncf %r : f32 to bf16
    linalg.yield %b : bf16
  } -> tensor<2x4x4xbf16>
  %eq = tensor.empty() : tensor<2x8x4xbf16>
  %eqf = tensor.empty() : tensor<2x8x4xf32>
  %qt = linalg.transpose ins(%q : tensor<2x4x8xbf16>) outs(%eq : tensor<2x8x4xbf16>) permutation = [0, 2, 1]
  %zk = linalg.fill ins(%zero : f32) outs(%eqf : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %dkt = linalg.batch_matmul ins(%qt, %dx : tensor<2x8x4xbf16>, tensor<2x4x4xbf16>) outs(%zk : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %ebo = tensor.empty() : tensor<2x4x8xbf16>
  %ktt = linalg.transpose ins(%kt : tensor<2x8x4xbf16>) outs(%ebo : tensor<2x4x8xbf16>) permutation = [0, 2, 1]
  %dq = linalg.batch_matmul ins(%dx, %ktt : tensor<2x4x4xbf16>, tensor<2x4x8xbf16>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %out, %dq, %dkt, %dv : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>
}

// -----

// The keep bits an i1 input of D's generic (a mask built elsewhere, e.g. two
// halves concatenated, each decided from one hash): that input is the mask
// the fused ops read; D's generic goes.
// CHECK-LABEL: func.func @dropout_causal_train_input_bits
// CHECK-SAME: %[[BITS:[a-z0-9]+]]: tensor<8x4xi1>
// CHECK: %[[KEEP:.*]] = tensor.expand_shape %[[BITS]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xi1> into tensor<2x4x4xi1>
// CHECK: %[[O:.*]]:2 = nova.attention_lse {{.*}} scale 1.000000e+00 causal dropout(%[[KEEP]] : tensor<2x4x4xi1>) keep_scale 1.1111111{{[0-9]*}}
// CHECK: nova.attention_backward ins({{.*}}, %[[O]]#0, %{{.*}}, %[[O]]#1 : {{.*}}) outs({{.*}}) scale 1.000000e+00 causal dropout(%[[KEEP]] : tensor<2x4x4xi1>) keep_scale 1.1111111{{[0-9]*}}
// CHECK-NOT: tensor<8x4xf32>
// CHECK-NOT: linalg.batch_matmul
// CHECK: return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#sc2 = affine_map<(d0, d1) -> ()>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mask = affine_map<(d0, d1, d2) -> (d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#rowr = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @dropout_causal_train_input_bits(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x4xf32>, %v: tensor<2x4x8xf32>, %do: tensor<2x4x8xf32>,
                                %bits: tensor<8x4xi1>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %keepp = arith.constant 0.899999976 : f32
  %scale = arith.constant 1.11111116 : f32
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
  // D = keep * (1 / 0.9) on [B * T, T] rows, keep an input.
  %e2 = tensor.empty() : tensor<8x4xf32>
  %d2 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%bits : tensor<8x4xi1>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%k: i1, %o: f32):
    %f = arith.uitofp %k : i1 to f32
    %r = arith.mulf %f, %scale : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %d3 = tensor.expand_shape %d2 [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xf32> into tensor<2x4x4xf32>
  %pd = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p, %d3 : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<2x4x4xf32>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %zo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = linalg.batch_matmul ins(%pd, %v : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // Backward.
  %pt = linalg.transpose ins(%pd : tensor<2x4x4xf32>) outs(%e : tensor<2x4x4xf32>) permutation = [0, 2, 1]
  %dv = linalg.batch_matmul ins(%pt, %do : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%zo : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %ev = tensor.empty() : tensor<2x8x4xf32>
  %vt = linalg.transpose ins(%v : tensor<2x4x8xf32>) outs(%ev : tensor<2x8x4xf32>) permutation = [0, 2, 1]
  %dpd = linalg.batch_matmul ins(%do, %vt : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%z : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %dpd2 = tensor.collapse_shape %dpd [[0, 1], [2]] : tensor<2x4x4xf32> into tensor<8x4xf32>
  %dp2 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%dpd2, %d2 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %r = arith.mulf %i, %j : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  %dp = tensor.expand_shape %dp2 [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xf32> into tensor<2x4x4xf32>
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

