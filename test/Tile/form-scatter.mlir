// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(nova-form-scatter))' | FileCheck %s

// index_put(base, [ids], v, accumulate=True) as the frontend writes it and
// the normal form keeps it: a bounds-checked gather of the ids out of an
// iota, the one-hot [Q, M], a matmul from zero, the base added after. The
// one-hot goes with the matmul.
// CHECK-LABEL: func.func @index_put_rows_f32
// CHECK-SAME: (%[[BASE:.*]]: tensor<10x16xf32>, %[[RAW:.*]]: tensor<6xi64>, %[[V:.*]]: tensor<6x16xf32>)
// CHECK: %[[IDS:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [1, 6]
// CHECK-NOT: uitofp
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: %[[POS:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<1x6xi64>) outs(%{{.*}} : tensor<6x16xi64>)
// CHECK:   %[[C16:.*]] = arith.constant 16 : i64
// CHECK:   %[[ROW:.*]] = arith.muli %{{.*}}, %[[C16]] : i64
// CHECK:   %[[J:.*]] = linalg.index 1 : index
// CHECK:   %[[COL:.*]] = arith.index_cast %[[J]] : index to i64
// CHECK:   %[[P:.*]] = arith.addi %[[ROW]], %[[COL]] : i64
// CHECK:   linalg.yield %[[P]] : i64
// CHECK: %[[S:.*]] = nova.scatter_add ins(%[[V]], %[[POS]] : tensor<6x16xf32>, tensor<6x16xi64>) outs(%[[ZERO]] : tensor<10x16xf32>) -> tensor<10x16xf32>
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%[[BASE]], %[[S]] : tensor<10x16xf32>, tensor<10x16xf32>)
#map = affine_map<(d0) -> (d0)>
#ids = affine_map<(d0, d1) -> (0, d1)>
#rows = affine_map<(d0, d1) -> (d0, 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @index_put_rows_f32(%base: tensor<10x16xf32>, %raw: tensor<6xi64>, %v: tensor<6x16xf32>) -> tensor<10x16xf32> {
  %c10 = arith.constant 10 : i64
  %c0 = arith.constant 0 : i64
  %zero = arith.constant 0.000000e+00 : f32
  %e6 = tensor.empty() : tensor<6xi64>
  %e10 = tensor.empty() : tensor<10xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e10 : tensor<10xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<10xi64>
  %ids = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%raw : tensor<6xi64>) outs(%e6 : tensor<6xi64>) {
  ^bb0(%in: i64, %out: i64):
    %w = arith.addi %in, %c10 : i64
    %n = arith.cmpi slt, %in, %c0 : i64
    %s = arith.select %n, %w, %in : i64
    %x = arith.index_cast %s : i64 to index
    %r = tensor.extract %iota[%x] : tensor<10xi64>
    linalg.yield %r : i64
  } -> tensor<6xi64>
  %ids2 = tensor.expand_shape %ids [[0, 1]] output_shape [1, 6] : tensor<6xi64> into tensor<1x6xi64>
  %iota2 = tensor.expand_shape %iota [[0, 1]] output_shape [10, 1] : tensor<10xi64> into tensor<10x1xi64>
  %e106 = tensor.empty() : tensor<10x6xf32>
  %a = linalg.generic {indexing_maps = [#ids, #rows, #id2], iterator_types = ["parallel", "parallel"]} ins(%ids2, %iota2 : tensor<1x6xi64>, tensor<10x1xi64>) outs(%e106 : tensor<10x6xf32>) {
  ^bb0(%in: i64, %q: i64, %out: f32):
    %eq = arith.cmpi eq, %in, %q : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<10x6xf32>
  %e = tensor.empty() : tensor<10x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<10x16xf32>) -> tensor<10x16xf32>
  %c = linalg.matmul ins(%a, %v : tensor<10x6xf32>, tensor<6x16xf32>) outs(%z : tensor<10x16xf32>) -> tensor<10x16xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%base, %c : tensor<10x16xf32>, tensor<10x16xf32>) outs(%e : tensor<10x16xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<10x16xf32>
  return %sum : tensor<10x16xf32>
}

// -----

// The one-hot's row index as `linalg.index 0` in its body, the ids 1-D
// (map (d1)), the matmul accumulating onto a base of its own: the scatter
// adds into that base. A zero fill shared with another user is cloned, so
// the scatter owns its destination.
// CHECK-LABEL: func.func @index_put_rows_into_base
// CHECK-SAME: (%[[B:.*]]: tensor<4x8xf32>, %[[RAW:.*]]: tensor<3xi64>, %[[V:.*]]: tensor<3x8xf32>)
// CHECK: %[[POS:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<3xi64>) outs(%{{.*}} : tensor<3x8xi64>)
// CHECK: %[[S:.*]] = nova.scatter_add ins(%[[V]], %[[POS]] : tensor<3x8xf32>, tensor<3x8xi64>) outs(%[[B]] : tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: linalg.matmul
// CHECK: return %[[S]]
#map = affine_map<(d0) -> (d0)>
#ids1 = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @index_put_rows_into_base(%base: tensor<4x8xf32>, %raw: tensor<3xi64>, %v: tensor<3x8xf32>) -> tensor<4x8xf32> {
  %e3 = tensor.empty() : tensor<3xi64>
  %e4 = tensor.empty() : tensor<4xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e4 : tensor<4xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<4xi64>
  %ids = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%raw : tensor<3xi64>) outs(%e3 : tensor<3xi64>) {
  ^bb0(%in: i64, %out: i64):
    %x = arith.index_cast %in : i64 to index
    %r = tensor.extract %iota[%x] : tensor<4xi64>
    linalg.yield %r : i64
  } -> tensor<3xi64>
  %e43 = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#ids1, #id2], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<3xi64>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%in: i64, %out: f32):
    %q = linalg.index 0 : index
    %qi = arith.index_cast %q : index to i64
    %eq = arith.cmpi eq, %qi, %in : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<4x3xf32>
  %c = linalg.matmul ins(%a, %v : tensor<4x3xf32>, tensor<3x8xf32>) outs(%base : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @shared_zero_fill
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[OWN:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: nova.scatter_add ins(%{{.*}}, %{{.*}} : tensor<3x8xf32>, tensor<3x8xi64>) outs(%[[OWN]] : tensor<4x8xf32>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x8xf32>) outs(%[[Z]] : tensor<4x8xf32>)
#map = affine_map<(d0) -> (d0)>
#ids1 = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @shared_zero_fill(%raw: tensor<3xi64>, %v: tensor<3x8xf32>, %x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %e3 = tensor.empty() : tensor<3xi64>
  %e4 = tensor.empty() : tensor<4xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e4 : tensor<4xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<4xi64>
  %ids = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%raw : tensor<3xi64>) outs(%e3 : tensor<3xi64>) {
  ^bb0(%in: i64, %out: i64):
    %xi = arith.index_cast %in : i64 to index
    %r = tensor.extract %iota[%xi] : tensor<4xi64>
    linalg.yield %r : i64
  } -> tensor<3xi64>
  %e43 = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#ids1, #id2], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<3xi64>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%in: i64, %out: f32):
    %q = linalg.index 0 : index
    %qi = arith.index_cast %q : index to i64
    %eq = arith.cmpi eq, %in, %qi : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<4x3xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = linalg.matmul ins(%a, %v : tensor<4x3xf32>, tensor<3x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c, %d : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Ids not read out of the iota may lie outside [0, Q) (a write left out on
// purpose aims at Q): the one-hot drops them, a DMA would fault. Kept.
// CHECK-LABEL: func.func @negative_unchecked_ids
// CHECK-NOT: nova.scatter_add
// CHECK: linalg.matmul
#ids1 = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @negative_unchecked_ids(%ids: tensor<3xi64>, %v: tensor<3x8xf32>, %base: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e43 = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#ids1, #id2], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<3xi64>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%in: i64, %out: f32):
    %q = linalg.index 0 : index
    %qi = arith.index_cast %q : index to i64
    %eq = arith.cmpi eq, %in, %qi : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<4x3xf32>
  %c = linalg.matmul ins(%a, %v : tensor<4x3xf32>, tensor<3x8xf32>) outs(%base : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// Not a one-hot: a comparison other than equality selects many rows.
// CHECK-LABEL: func.func @negative_not_one_hot
// CHECK-NOT: nova.scatter_add
// CHECK: linalg.matmul
#map = affine_map<(d0) -> (d0)>
#ids1 = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @negative_not_one_hot(%raw: tensor<3xi64>, %v: tensor<3x8xf32>, %base: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e3 = tensor.empty() : tensor<3xi64>
  %e4 = tensor.empty() : tensor<4xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e4 : tensor<4xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<4xi64>
  %ids = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%raw : tensor<3xi64>) outs(%e3 : tensor<3xi64>) {
  ^bb0(%in: i64, %out: i64):
    %xi = arith.index_cast %in : i64 to index
    %r = tensor.extract %iota[%xi] : tensor<4xi64>
    linalg.yield %r : i64
  } -> tensor<3xi64>
  %e43 = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#ids1, #id2], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<3xi64>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%in: i64, %out: f32):
    %q = linalg.index 0 : index
    %qi = arith.index_cast %q : index to i64
    %le = arith.cmpi sle, %in, %qi : i64
    %f = arith.uitofp %le : i1 to f32
    linalg.yield %f : f32
  } -> tensor<4x3xf32>
  %c = linalg.matmul ins(%a, %v : tensor<4x3xf32>, tensor<3x8xf32>) outs(%base : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// The one-hot on the right (a transposed scatter) is a different product.
// CHECK-LABEL: func.func @negative_one_hot_on_the_right
// CHECK-NOT: nova.scatter_add
// CHECK: linalg.matmul
#ids1 = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @negative_one_hot_on_the_right(%ids: tensor<3xi64>, %v: tensor<8x4xf32>, %base: tensor<8x3xf32>) -> tensor<8x3xf32> {
  %e43 = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#ids1, #id2], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<3xi64>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%in: i64, %out: f32):
    %q = linalg.index 0 : index
    %qi = arith.index_cast %q : index to i64
    %eq = arith.cmpi eq, %in, %qi : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<4x3xf32>
  %c = linalg.matmul ins(%v, %a : tensor<8x4xf32>, tensor<4x3xf32>) outs(%base : tensor<8x3xf32>) -> tensor<8x3xf32>
  return %c : tensor<8x3xf32>
}

// -----

// index_add along dim 1: the values reach the matmul transposed ([D, M],
// read as B[n, k]); they are transposed back into rows for the DMA.
// CHECK-LABEL: func.func @values_read_transposed
// CHECK-SAME: (%[[RAW:.*]]: tensor<3xi64>, %[[VT:.*]]: tensor<8x3xf32>, %[[B:.*]]: tensor<4x8xf32>)
// CHECK: %[[V:.*]] = linalg.transpose ins(%[[VT]] : tensor<8x3xf32>) outs(%{{.*}} : tensor<3x8xf32>) permutation = [1, 0]
// CHECK: %[[POS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<3x8xi64>)
// CHECK: nova.scatter_add ins(%[[V]], %[[POS]] : tensor<3x8xf32>, tensor<3x8xi64>) outs(%[[B]] : tensor<4x8xf32>)
// CHECK-NOT: linalg.matmul
#map = affine_map<(d0) -> (d0)>
#ids1 = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#ma = affine_map<(d0, d1, d2) -> (d0, d2)>
#mbt = affine_map<(d0, d1, d2) -> (d1, d2)>
#mc = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @values_read_transposed(%raw: tensor<3xi64>, %vt: tensor<8x3xf32>, %base: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e3 = tensor.empty() : tensor<3xi64>
  %e4 = tensor.empty() : tensor<4xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e4 : tensor<4xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<4xi64>
  %ids = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%raw : tensor<3xi64>) outs(%e3 : tensor<3xi64>) {
  ^bb0(%in: i64, %out: i64):
    %xi = arith.index_cast %in : i64 to index
    %r = tensor.extract %iota[%xi] : tensor<4xi64>
    linalg.yield %r : i64
  } -> tensor<3xi64>
  %e43 = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#ids1, #id2], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<3xi64>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%in: i64, %out: f32):
    %q = linalg.index 0 : index
    %qi = arith.index_cast %q : index to i64
    %eq = arith.cmpi eq, %in, %qi : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<4x3xf32>
  %c = linalg.matmul indexing_maps = [#ma, #mbt, #mc] ins(%a, %vt : tensor<4x3xf32>, tensor<8x3xf32>) outs(%base : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// After partitioning, elementwise fusion puts the bounds-checked read of
// the ids out of the iota inside the one-hot's body. The read is the same
// proof that the ids are in range: the positions recompute it from the raw
// ids.
// CHECK-LABEL: func.func @fused_checked_read
// CHECK-SAME: (%[[RAW:.*]]: tensor<1x6xi64>, %[[V:.*]]: tensor<6x16xf32>)
// CHECK: %[[IOTA:.*]] = linalg.generic
// CHECK-NOT: uitofp
// CHECK: %[[POS:.*]] = linalg.generic {{.*}} ins(%[[RAW]] : tensor<1x6xi64>) outs(%{{.*}} : tensor<6x16xi64>)
// CHECK:   arith.select
// CHECK:   %[[ID:.*]] = tensor.extract %[[IOTA]][%{{.*}}] : tensor<10xi64>
// CHECK:   arith.muli %[[ID]], %{{.*}} : i64
// CHECK: nova.scatter_add ins(%[[V]], %[[POS]] : tensor<6x16xf32>, tensor<6x16xi64>)
// CHECK-NOT: linalg.matmul
#map = affine_map<(d0) -> (d0)>
#ids = affine_map<(d0, d1) -> (0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @fused_checked_read(%raw: tensor<1x6xi64>, %v: tensor<6x16xf32>) -> tensor<10x16xf32> {
  %c10 = arith.constant 10 : i64
  %c0 = arith.constant 0 : i64
  %zero = arith.constant 0.000000e+00 : f32
  %e10 = tensor.empty() : tensor<10xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e10 : tensor<10xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<10xi64>
  %ea = tensor.empty() : tensor<10x6xf32>
  %a = linalg.generic {indexing_maps = [#ids, #id2], iterator_types = ["parallel", "parallel"]} ins(%raw : tensor<1x6xi64>) outs(%ea : tensor<10x6xf32>) {
  ^bb0(%in: i64, %out: f32):
    %w = arith.addi %in, %c10 : i64
    %n = arith.cmpi slt, %in, %c0 : i64
    %s = arith.select %n, %w, %in : i64
    %x = arith.index_cast %s : i64 to index
    %r = tensor.extract %iota[%x] : tensor<10xi64>
    %q = linalg.index 0 : index
    %qi = arith.index_cast %q : index to i64
    %eq = arith.cmpi eq, %r, %qi : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<10x6xf32>
  %ez = tensor.empty() : tensor<10x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%ez : tensor<10x16xf32>) -> tensor<10x16xf32>
  %c = linalg.matmul ins(%a, %v : tensor<10x6xf32>, tensor<6x16xf32>) outs(%z : tensor<10x16xf32>) -> tensor<10x16xf32>
  return %c : tensor<10x16xf32>
}

// -----

// The fused read's index must come from the ids alone: one that also reads
// the row index (linalg.index) is not a bounds check of the ids.
// CHECK-LABEL: func.func @negative_fused_read_of_row
// CHECK: uitofp
// CHECK: linalg.matmul
#map = affine_map<(d0) -> (d0)>
#ids = affine_map<(d0, d1) -> (0, d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @negative_fused_read_of_row(%raw: tensor<1x6xi64>, %v: tensor<6x16xf32>) -> tensor<10x16xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e10 = tensor.empty() : tensor<10xi64>
  %iota = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e10 : tensor<10xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<10xi64>
  %ea = tensor.empty() : tensor<10x6xf32>
  %a = linalg.generic {indexing_maps = [#ids, #id2], iterator_types = ["parallel", "parallel"]} ins(%raw : tensor<1x6xi64>) outs(%ea : tensor<10x6xf32>) {
  ^bb0(%in: i64, %out: f32):
    %q = linalg.index 0 : index
    %r = tensor.extract %iota[%q] : tensor<10xi64>
    %qi = arith.index_cast %q : index to i64
    %eq = arith.cmpi eq, %r, %in : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<10x6xf32>
  %ez = tensor.empty() : tensor<10x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%ez : tensor<10x16xf32>) -> tensor<10x16xf32>
  %c = linalg.matmul ins(%a, %v : tensor<10x6xf32>, tensor<6x16xf32>) outs(%z : tensor<10x16xf32>) -> tensor<10x16xf32>
  return %c : tensor<10x16xf32>
}
