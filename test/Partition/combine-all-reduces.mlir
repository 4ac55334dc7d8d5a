// RUN: nova-opt %s --split-input-file --nova-combine-all-reduces | FileCheck %s

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The input gradient of a Megatron attention block after shard-partition:
// three row-parallel partial sums, each all-reduced and expanded to
// [B, S, E], then added. The partials are expanded and added, and one
// all-reduce is left.
// CHECK-LABEL: func.func @qkv_input_gradient
// CHECK-SAME: (%[[A:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<16x32xf32>, %[[C:.*]]: tensor<16x32xf32>)
// CHECK-DAG: %[[EA:.*]] = tensor.expand_shape %[[A]] {{\[\[}}0, 1], [2]] output_shape [2, 8, 32]
// CHECK-DAG: %[[EB:.*]] = tensor.expand_shape %[[B]] {{\[\[}}0, 1], [2]] output_shape [2, 8, 32]
// CHECK: %[[AB:.*]] = linalg.generic {{.*}} ins(%[[EA]], %[[EB]] : tensor<2x8x32xf32>, tensor<2x8x32xf32>)
// CHECK: %[[EC:.*]] = tensor.expand_shape %[[C]]
// CHECK: %[[ABC:.*]] = linalg.generic {{.*}} ins(%[[AB]], %[[EC]] : tensor<2x8x32xf32>, tensor<2x8x32xf32>)
// CHECK: %[[R:.*]] = shard.all_reduce %[[ABC]] on @grid grid_axes = [0] : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: return %[[R]]
shard.grid @grid(shape = 2)
func.func @qkv_input_gradient(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>, %c: tensor<16x32xf32>) -> tensor<2x8x32xf32> {
  %ra = shard.all_reduce %a on @grid grid_axes = [0] : tensor<16x32xf32> -> tensor<16x32xf32>
  %ea = tensor.expand_shape %ra [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %rb = shard.all_reduce %b on @grid grid_axes = [0] : tensor<16x32xf32> -> tensor<16x32xf32>
  %eb = tensor.expand_shape %rb [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %e0 = tensor.empty() : tensor<2x8x32xf32>
  %ab = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ea, %eb : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%e0 : tensor<2x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32xf32>
  %rc = shard.all_reduce %c on @grid grid_axes = [0] : tensor<16x32xf32> -> tensor<16x32xf32>
  %ec = tensor.expand_shape %rc [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %e1 = tensor.empty() : tensor<2x8x32xf32>
  %abc = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ab, %ec : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%e1 : tensor<2x8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x8x32xf32>
  return %abc : tensor<2x8x32xf32>
}

// -----

// An all-reduce whose result has another use stays (combining would reduce
// the same partial twice), and so does a max all-reduce and a product.
// CHECK-LABEL: func.func @not_combined
// CHECK-COUNT-6: shard.all_reduce
// CHECK-NOT: shard.all_reduce
#id2 = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @grid(shape = 2)
func.func @not_combined(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %ra = shard.all_reduce %a on @grid grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
  %rb = shard.all_reduce %b on @grid grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xf32>
  %s = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ra, %rb : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.addf %x, %y : f32
    linalg.yield %t : f32
  } -> tensor<4x4xf32>
  %ma = shard.all_reduce %a on @grid grid_axes = [0] reduction = max : tensor<4x4xf32> -> tensor<4x4xf32>
  %mb = shard.all_reduce %b on @grid grid_axes = [0] reduction = max : tensor<4x4xf32> -> tensor<4x4xf32>
  %m = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ma, %mb : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.addf %x, %y : f32
    linalg.yield %t : f32
  } -> tensor<4x4xf32>
  %pa = shard.all_reduce %a on @grid grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
  %pb = shard.all_reduce %b on @grid grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
  %p = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%pa, %pb : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.mulf %x, %y : f32
    linalg.yield %t : f32
  } -> tensor<4x4xf32>
  return %s, %ra, %m, %p : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Under sequence parallelism each all-reduced partial is expanded and sliced
// to the chip's block of the sequence before the sum: the whole partials
// are summed, all-reduced once and sliced once (one reduce-scatter for
// nova-form-reduce-scatter), the chain of two adds folding into one.
// CHECK-LABEL: func.func @qkv_input_gradient_sequence_split
// CHECK-SAME: (%[[A:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<16x32xf32>, %[[C:.*]]: tensor<16x32xf32>)
// CHECK-DAG: %[[EA:.*]] = tensor.expand_shape %[[A]] {{\[\[}}0, 1], [2]] output_shape [2, 8, 32]
// CHECK-DAG: %[[EB:.*]] = tensor.expand_shape %[[B]] {{\[\[}}0, 1], [2]] output_shape [2, 8, 32]
// CHECK: %[[AB:.*]] = linalg.generic {{.*}} ins(%[[EA]], %[[EB]] : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%{{.*}} : tensor<2x8x32xf32>)
// CHECK: %[[EC:.*]] = tensor.expand_shape %[[C]]
// CHECK: %[[ABC:.*]] = linalg.generic {{.*}} ins(%[[AB]], %[[EC]] : tensor<2x8x32xf32>, tensor<2x8x32xf32>) outs(%{{.*}} : tensor<2x8x32xf32>)
// CHECK: %[[R:.*]] = shard.all_reduce %[[ABC]] on @grid grid_axes = [0] : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
// CHECK: %[[S:.*]] = shard.all_slice %[[R]] on @grid grid_axes = [0] slice_axis = 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
// CHECK-NOT: shard.all_reduce
// CHECK-NOT: shard.all_slice
// CHECK: return %[[S]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
shard.grid @grid(shape = 2)
func.func @qkv_input_gradient_sequence_split(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>, %c: tensor<16x32xf32>) -> tensor<2x4x32xf32> {
  %ra = shard.all_reduce %a on @grid grid_axes = [0] : tensor<16x32xf32> -> tensor<16x32xf32>
  %ea = tensor.expand_shape %ra [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %sa = shard.all_slice %ea on @grid grid_axes = [0] slice_axis = 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
  %rb = shard.all_reduce %b on @grid grid_axes = [0] : tensor<16x32xf32> -> tensor<16x32xf32>
  %eb = tensor.expand_shape %rb [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %sb = shard.all_slice %eb on @grid grid_axes = [0] slice_axis = 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
  %e0 = tensor.empty() : tensor<2x4x32xf32>
  %ab = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sa, %sb : tensor<2x4x32xf32>, tensor<2x4x32xf32>) outs(%e0 : tensor<2x4x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x4x32xf32>
  %rc = shard.all_reduce %c on @grid grid_axes = [0] : tensor<16x32xf32> -> tensor<16x32xf32>
  %ec = tensor.expand_shape %rc [[0, 1], [2]] output_shape [2, 8, 32] : tensor<16x32xf32> into tensor<2x8x32xf32>
  %sc = shard.all_slice %ec on @grid grid_axes = [0] slice_axis = 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
  %e1 = tensor.empty() : tensor<2x4x32xf32>
  %abc = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ab, %sc : tensor<2x4x32xf32>, tensor<2x4x32xf32>) outs(%e1 : tensor<2x4x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x4x32xf32>
  return %abc : tensor<2x4x32xf32>
}

// -----

// One partial sliced and one not: the sum cannot be taken at one shape, so
// nothing is combined.
// CHECK-LABEL: func.func @negative_one_sliced
// CHECK: shard.all_reduce
// CHECK: shard.all_slice
// CHECK: shard.all_reduce
// CHECK: linalg.generic
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
shard.grid @grid(shape = 2)
func.func @negative_one_sliced(%a: tensor<2x8x32xf32>, %b: tensor<2x4x32xf32>) -> tensor<2x4x32xf32> {
  %ra = shard.all_reduce %a on @grid grid_axes = [0] : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
  %sa = shard.all_slice %ra on @grid grid_axes = [0] slice_axis = 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
  %rb = shard.all_reduce %b on @grid grid_axes = [0] : tensor<2x4x32xf32> -> tensor<2x4x32xf32>
  %e0 = tensor.empty() : tensor<2x4x32xf32>
  %ab = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%sa, %rb : tensor<2x4x32xf32>, tensor<2x4x32xf32>) outs(%e0 : tensor<2x4x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x4x32xf32>
  return %ab : tensor<2x4x32xf32>
}

// -----

// Under bf16 autocast each input gradient is rounded to bf16 after its
// all-reduce and widened back before the sum: the partials are summed in
// f32, reduced once, and the sum rounded once (Megatron's fused QKV).
// CHECK-LABEL: func.func @combine_rounded
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x16x64xf32>, tensor<2x16x64xf32>)
// CHECK: %[[R:.*]] = shard.all_reduce %[[S]] on @grid grid_axes = [0] : tensor<2x16x64xf32>
// CHECK: %[[N:.*]] = linalg.generic {{.*}} ins(%[[R]] : tensor<2x16x64xf32>) outs(%{{.*}} : tensor<2x16x64xbf16>)
// CHECK: arith.truncf
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[N]] : tensor<2x16x64xbf16>) outs(%{{.*}} : tensor<2x16x64xf32>)
// CHECK: arith.extf
// CHECK: return %[[W]]
// CHECK-NOT: shard.all_reduce
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
shard.grid @grid(shape = 4)
func.func @combine_rounded(%a: tensor<32x64xf32>, %b: tensor<32x64xf32>) -> tensor<2x16x64xf32> {
  %ra = shard.all_reduce %a on @grid grid_axes = [0] : tensor<32x64xf32> -> tensor<32x64xf32>
  %rb = shard.all_reduce %b on @grid grid_axes = [0] : tensor<32x64xf32> -> tensor<32x64xf32>
  %eh = tensor.empty() : tensor<32x64xbf16>
  %na = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%ra : tensor<32x64xf32>) outs(%eh : tensor<32x64xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %t = arith.truncf %x : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<32x64xbf16>
  %nb = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%rb : tensor<32x64xf32>) outs(%eh : tensor<32x64xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %t = arith.truncf %x : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<32x64xbf16>
  %xa = tensor.expand_shape %na [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xbf16> into tensor<2x16x64xbf16>
  %xb = tensor.expand_shape %nb [[0, 1], [2]] output_shape [2, 16, 64] : tensor<32x64xbf16> into tensor<2x16x64xbf16>
  %ef = tensor.empty() : tensor<2x16x64xf32>
  %wa = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xa : tensor<2x16x64xbf16>) outs(%ef : tensor<2x16x64xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %t = arith.extf %x : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<2x16x64xf32>
  %wb = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%xb : tensor<2x16x64xbf16>) outs(%ef : tensor<2x16x64xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %t = arith.extf %x : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<2x16x64xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%wa, %wb : tensor<2x16x64xf32>, tensor<2x16x64xf32>) outs(%ef : tensor<2x16x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %t = arith.addf %x, %y : f32
    linalg.yield %t : f32
  } -> tensor<2x16x64xf32>
  return %sum : tensor<2x16x64xf32>
}
