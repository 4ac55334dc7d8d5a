// RUN: nova-opt %s --split-input-file --nova-localize-one-hot-lookups | FileCheck %s

// The forward of a vocabulary-parallel embedding after shard-partition: the
// one-hot of all 64 classes, this chip's 16 columns of it, times its 16
// rows. It becomes a gather of the chip's rows at ids - 16 * (its
// coordinate on axis 1), zero outside [0, 16), and the one-hot is gone.
// CHECK-LABEL: func.func @lookup_split_vocab_f32
// CHECK-SAME: (%[[IDS:.*]]: tensor<32xi64>, %[[W:.*]]: tensor<16x8xf32>)
// CHECK: %[[ID:.*]] = nova.chip_id
// CHECK: %[[C:.*]] = arith.remui %{{.*}}, %c4
// CHECK: %[[OFF:.*]] = arith.muli %[[C]], %c16
// CHECK: linalg.generic {{.*}} ins(%[[IDS]] : tensor<32xi64>) outs(%{{.*}} : tensor<32x8xf32>)
// CHECK: %[[I:.*]] = arith.index_cast
// CHECK: %[[L:.*]] = arith.subi %[[I]], %[[OFF]]
// CHECK: %[[OK:.*]] = arith.andi
// CHECK: %[[ROW:.*]] = arith.select %[[OK]], %[[L]]
// CHECK: %[[X:.*]] = tensor.extract %[[W]][%[[ROW]], %{{.*}}]
// CHECK: arith.select %[[OK]], %[[X]]
// CHECK-NOT: shard.all_slice
// CHECK-NOT: linalg.matmul
// CHECK-NOT: arith.cmpi eq
shard.grid @g(shape = 2x4)
func.func @lookup_split_vocab_f32(%ids: tensor<32xi64>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  %e64 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e64 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<64xi64>
  %e = tensor.empty() : tensor<32x64xf32>
  %oh = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids, %iota : tensor<32xi64>, tensor<64xi64>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %eq = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x64xf32>
  %s = shard.all_slice %oh on @g grid_axes = [1] slice_axis = 1 : tensor<32x64xf32> -> tensor<32x16xf32>
  %cst = arith.constant 0.0 : f32
  %eo = tensor.empty() : tensor<32x8xf32>
  %zero = linalg.fill ins(%cst : f32) outs(%eo : tensor<32x8xf32>) -> tensor<32x8xf32>
  %y = linalg.matmul ins(%s, %w : tensor<32x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<32x8xf32>) -> tensor<32x8xf32>
  return %y : tensor<32x8xf32>
}

// -----

// The backward under bf16 autocast: the one-hot of [2, 16] ids (compare,
// extui, sitofp, truncf, collapsed), transposed, times the bf16 gradient
// into f32, all-reduced over dp (axis 0), rounded to bf16, and the chip's
// 16 rows sliced over tp (axis 1). Each chip now multiplies a one-hot of
// its own 16 rows, of the ids read out of an iota of 16 at their clamped
// local rows, by the gradient with the rows of other chips' tokens zeroed
// (nova-form-scatter's form), and all-reduces and rounds [16, 8].
// CHECK-LABEL: func.func @gradient_split_vocab_bf16
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x16xi64>, %[[DY:.*]]: tensor<32x8xbf16>)
// CHECK: %[[OFF:.*]] = arith.muli %{{.*}}, %c16
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[IDS]] {{\[\[}}0, 1]] : tensor<2x16xi64> into tensor<32xi64>
// CHECK: %[[IOTA:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<16xi64>)
// CHECK: %[[CHECKED:.*]] = linalg.generic {{.*}} ins(%[[FLAT]] : tensor<32xi64>)
// CHECK: tensor.extract %[[IOTA]]
// CHECK: %[[MASKED:.*]] = linalg.generic {{.*}} ins(%[[FLAT]], %[[DY]] : tensor<32xi64>, tensor<32x8xbf16>) outs(%{{.*}} : tensor<32x8xf32>)
// CHECK: arith.extf
// CHECK: arith.select
// CHECK: %[[OH:.*]] = linalg.generic {{.*}} ins(%[[CHECKED]], %[[IOTA]] : tensor<32xi64>, tensor<16xi64>) outs(%{{.*}} : tensor<16x32xf32>)
// CHECK: arith.uitofp
// CHECK: %[[G:.*]] = linalg.matmul ins(%[[OH]], %[[MASKED]] : tensor<16x32xf32>, tensor<32x8xf32>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK: %[[R:.*]] = shard.all_reduce %[[G]] on @g grid_axes = [0] : tensor<16x8xf32> -> tensor<16x8xf32>
// CHECK: %[[B:.*]] = linalg.generic {{.*}} ins(%[[R]] : tensor<16x8xf32>) outs(%{{.*}} : tensor<16x8xbf16>)
// CHECK: return %[[B]]
// CHECK-NOT: tensor<64x8xf32>
// CHECK-NOT: shard.all_slice
shard.grid @g(shape = 2x4)
func.func @gradient_split_vocab_bf16(%ids: tensor<2x16xi64>, %dy: tensor<32x8xbf16>) -> tensor<16x8xbf16> {
  %e64 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e64 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<64xi64>
  %e1 = tensor.empty() : tensor<2x16x64xi1>
  %eq = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids, %iota : tensor<2x16xi64>, tensor<64xi64>) outs(%e1 : tensor<2x16x64xi1>) {
  ^bb0(%a: i64, %b: i64, %out: i1):
    %r = arith.cmpi eq, %a, %b : i64
    linalg.yield %r : i1
  } -> tensor<2x16x64xi1>
  %e2 = tensor.empty() : tensor<2x16x64xi64>
  %wide = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%eq : tensor<2x16x64xi1>) outs(%e2 : tensor<2x16x64xi64>) {
  ^bb0(%a: i1, %out: i64):
    %r = arith.extui %a : i1 to i64
    linalg.yield %r : i64
  } -> tensor<2x16x64xi64>
  %e3 = tensor.empty() : tensor<2x16x64xf32>
  %fl = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%wide : tensor<2x16x64xi64>) outs(%e3 : tensor<2x16x64xf32>) {
  ^bb0(%a: i64, %out: f32):
    %r = arith.sitofp %a : i64 to f32
    linalg.yield %r : f32
  } -> tensor<2x16x64xf32>
  %e4 = tensor.empty() : tensor<2x16x64xbf16>
  %bf = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%fl : tensor<2x16x64xf32>) outs(%e4 : tensor<2x16x64xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x16x64xbf16>
  %oh = tensor.collapse_shape %bf [[0, 1], [2]] : tensor<2x16x64xbf16> into tensor<32x64xbf16>
  %et = tensor.empty() : tensor<64x32xbf16>
  %t = linalg.transpose ins(%oh : tensor<32x64xbf16>) outs(%et : tensor<64x32xbf16>) permutation = [1, 0]
  %cst = arith.constant 0.0 : f32
  %eg = tensor.empty() : tensor<64x8xf32>
  %zero = linalg.fill ins(%cst : f32) outs(%eg : tensor<64x8xf32>) -> tensor<64x8xf32>
  %g = linalg.matmul ins(%t, %dy : tensor<64x32xbf16>, tensor<32x8xbf16>) outs(%zero : tensor<64x8xf32>) -> tensor<64x8xf32>
  %r = shard.all_reduce %g on @g grid_axes = [0] : tensor<64x8xf32> -> tensor<64x8xf32>
  %eb = tensor.empty() : tensor<64x8xbf16>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<64x8xf32>) outs(%eb : tensor<64x8xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %x = arith.truncf %a : f32 to bf16
    linalg.yield %x : bf16
  } -> tensor<64x8xbf16>
  %s = shard.all_slice %b on @g grid_axes = [1] slice_axis = 0 : tensor<64x8xbf16> -> tensor<16x8xbf16>
  return %s : tensor<16x8xbf16>
}

// -----

// A slice of a tensor that is not a one-hot: the product stays.
// CHECK-LABEL: func.func @negative_not_a_one_hot
// CHECK: %[[S:.*]] = shard.all_slice
// CHECK: linalg.matmul ins(%[[S]], %{{.*}} : tensor<32x16xf32>, tensor<16x8xf32>)
// CHECK-NOT: nova.chip_id
shard.grid @g(shape = 4)
func.func @negative_not_a_one_hot(%a: tensor<32x64xf32>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  %s = shard.all_slice %a on @g grid_axes = [0] slice_axis = 1 : tensor<32x64xf32> -> tensor<32x16xf32>
  %cst = arith.constant 0.0 : f32
  %eo = tensor.empty() : tensor<32x8xf32>
  %zero = linalg.fill ins(%cst : f32) outs(%eo : tensor<32x8xf32>) -> tensor<32x8xf32>
  %y = linalg.matmul ins(%s, %w : tensor<32x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<32x8xf32>) -> tensor<32x8xf32>
  return %y : tensor<32x8xf32>
}

// -----

// A compare with classes that are not an iota (a table of class ids): not a
// one-hot of the vocabulary, left as it is.
// CHECK-LABEL: func.func @negative_classes_not_an_iota
// CHECK: arith.cmpi eq
// CHECK: shard.all_slice
// CHECK: linalg.matmul
shard.grid @g(shape = 4)
func.func @negative_classes_not_an_iota(%ids: tensor<32xi64>, %classes: tensor<64xi64>, %w: tensor<16x8xf32>) -> tensor<32x8xf32> {
  %e = tensor.empty() : tensor<32x64xf32>
  %oh = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids, %classes : tensor<32xi64>, tensor<64xi64>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %eq = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x64xf32>
  %s = shard.all_slice %oh on @g grid_axes = [0] slice_axis = 1 : tensor<32x64xf32> -> tensor<32x16xf32>
  %cst = arith.constant 0.0 : f32
  %eo = tensor.empty() : tensor<32x8xf32>
  %zero = linalg.fill ins(%cst : f32) outs(%eo : tensor<32x8xf32>) -> tensor<32x8xf32>
  %y = linalg.matmul ins(%s, %w : tensor<32x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<32x8xf32>) -> tensor<32x8xf32>
  return %y : tensor<32x8xf32>
}

// -----

// The gradient all-reduced over the axis it is sliced over: the chip's rows
// of a sum over its own slice's peers cannot be computed from its rows
// alone. Nothing changes.
// CHECK-LABEL: func.func @negative_reduce_over_the_slice_axis
// CHECK: linalg.matmul {{.*}} outs(%{{.*}} : tensor<64x8xf32>)
// CHECK: shard.all_reduce %{{.*}} grid_axes = [0] : tensor<64x8xf32>
// CHECK: shard.all_slice
shard.grid @g(shape = 4)
func.func @negative_reduce_over_the_slice_axis(%ids: tensor<32xi64>, %dy: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %e64 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e64 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<64xi64>
  %e = tensor.empty() : tensor<32x64xf32>
  %oh = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids, %iota : tensor<32xi64>, tensor<64xi64>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %eq = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x64xf32>
  %et = tensor.empty() : tensor<64x32xf32>
  %t = linalg.transpose ins(%oh : tensor<32x64xf32>) outs(%et : tensor<64x32xf32>) permutation = [1, 0]
  %cst = arith.constant 0.0 : f32
  %eg = tensor.empty() : tensor<64x8xf32>
  %zero = linalg.fill ins(%cst : f32) outs(%eg : tensor<64x8xf32>) -> tensor<64x8xf32>
  %g = linalg.matmul ins(%t, %dy : tensor<64x32xf32>, tensor<32x8xf32>) outs(%zero : tensor<64x8xf32>) -> tensor<64x8xf32>
  %r = shard.all_reduce %g on @g grid_axes = [0] : tensor<64x8xf32> -> tensor<64x8xf32>
  %s = shard.all_slice %r on @g grid_axes = [0] slice_axis = 0 : tensor<64x8xf32> -> tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}

// -----

// Tensor parallelism alone: no all-reduce between the product and the
// slice. The chip's rows come straight from its masked product.
// CHECK-LABEL: func.func @gradient_split_vocab_tp_only
// CHECK: %[[G:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<32x8xf32>) outs(%{{.*}} : tensor<16x8xf32>)
// CHECK-NOT: shard.
// CHECK: return %[[G]]
shard.grid @g(shape = 4)
func.func @gradient_split_vocab_tp_only(%ids: tensor<32xi64>, %dy: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %e64 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e64 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<64xi64>
  %e = tensor.empty() : tensor<32x64xf32>
  %oh = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids, %iota : tensor<32xi64>, tensor<64xi64>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %eq = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x64xf32>
  %et = tensor.empty() : tensor<64x32xf32>
  %t = linalg.transpose ins(%oh : tensor<32x64xf32>) outs(%et : tensor<64x32xf32>) permutation = [1, 0]
  %cst = arith.constant 0.0 : f32
  %eg = tensor.empty() : tensor<64x8xf32>
  %zero = linalg.fill ins(%cst : f32) outs(%eg : tensor<64x8xf32>) -> tensor<64x8xf32>
  %g = linalg.matmul ins(%t, %dy : tensor<64x32xf32>, tensor<32x8xf32>) outs(%zero : tensor<64x8xf32>) -> tensor<64x8xf32>
  %s = shard.all_slice %g on @g grid_axes = [0] slice_axis = 0 : tensor<64x8xf32> -> tensor<16x8xf32>
  return %s : tensor<16x8xf32>
}

// -----

// The parallel cross-entropy's one-hot of the labels over the vocabulary,
// and its product with a row factor, sliced to the chip's 16 classes: both
// are built on those 16 columns only, the iota counting from the chip's
// first class. Every chip built all 64 columns before.
// CHECK-LABEL: func.func @labels_one_hot_built_on_the_slice
// CHECK-SAME: (%[[LABELS:.*]]: tensor<32xi64>, %[[ROW:.*]]: tensor<32xf32>)
// CHECK: %[[OFF:.*]] = arith.muli %{{.*}}, %c16
// CHECK: %[[IOTA:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<16xi64>)
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: arith.addi %[[I]], %[[OFF]]
// CHECK: %[[OH:.*]] = linalg.generic {{.*}} ins(%[[LABELS]], %[[IOTA]] : tensor<32xi64>, tensor<16xi64>) outs(%{{.*}} : tensor<32x16xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[OH]], %[[ROW]] : tensor<32x16xf32>, tensor<32xf32>) outs(%{{.*}} : tensor<32x16xf32>)
// CHECK: return %[[P]]
// CHECK-NOT: tensor<32x64xf32>
shard.grid @g(shape = 4)
func.func @labels_one_hot_built_on_the_slice(%labels: tensor<32xi64>, %row: tensor<32xf32>) -> tensor<32x16xf32> {
  %e64 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e64 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<64xi64>
  %e = tensor.empty() : tensor<32x64xf32>
  %oh = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%labels, %iota : tensor<32xi64>, tensor<64xi64>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %eq = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x64xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%oh, %row : tensor<32x64xf32>, tensor<32xf32>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<32x64xf32>
  %s = shard.all_slice %p on @g grid_axes = [0] slice_axis = 1 : tensor<32x64xf32> -> tensor<32x16xf32>
  return %s : tensor<32x16xf32>
}

// -----

// A product with a tensor that indexes the sliced dimension and is not
// built from iotas (logits): the slice stays where it is.
// CHECK-LABEL: func.func @negative_product_with_data_along_the_slice
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<32x64xf32>)
// CHECK: shard.all_slice
shard.grid @g(shape = 4)
func.func @negative_product_with_data_along_the_slice(%labels: tensor<32xi64>, %x: tensor<32x64xf32>) -> tensor<32x16xf32> {
  %e64 = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e64 : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<64xi64>
  %e = tensor.empty() : tensor<32x64xf32>
  %oh = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%labels, %iota : tensor<32xi64>, tensor<64xi64>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %eq = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x64xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%oh, %x : tensor<32x64xf32>, tensor<32x64xf32>) outs(%e : tensor<32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<32x64xf32>
  %s = shard.all_slice %p on @g grid_axes = [0] slice_axis = 1 : tensor<32x64xf32> -> tensor<32x16xf32>
  return %s : tensor<32x16xf32>
}
