// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-bucket-all-reduces))' -split-input-file | FileCheck %s
// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-bucket-all-reduces{bucket-bytes=128}))' -split-input-file | FileCheck %s --check-prefix=SMALL

// Two gradients: one bucket, issued before the first use of either result.
// CHECK-LABEL: func.func @two_gradients
// CHECK-SAME: (%[[GA:.*]]: tensor<8x4xf32>, %[[GB:.*]]: tensor<4xf32>)
// CHECK: %[[FA:.*]] = tensor.collapse_shape %[[GA]] {{\[}}[0, 1]] : tensor<8x4xf32> into tensor<32xf32>
// CHECK: %[[C:.*]] = tensor.concat dim(0) %[[FA]], %[[GB]] : (tensor<32xf32>, tensor<4xf32>) -> tensor<36xf32>
// CHECK: %[[R:.*]] = shard.all_reduce %[[C]] on @g grid_axes = [0] : tensor<36xf32> -> tensor<36xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[SA:.*]] = tensor.extract_slice %[[R]][0] [32] [1]
// CHECK: %[[A:.*]] = tensor.expand_shape %[[SA]] {{\[}}[0, 1]] output_shape [8, 4]
// CHECK: %[[B:.*]] = tensor.extract_slice %[[R]][32] [4] [1]
// CHECK: return %[[A]], %[[B]]
// With 128-byte buckets the first gradient (128 bytes) fills one alone: it
// is issued as it is, and the second joins no one.
// SMALL-LABEL: func.func @two_gradients
// SMALL-NOT: tensor.concat
// SMALL-COUNT-2: shard.all_reduce
shard.grid @g(shape = 4)
func.func @two_gradients(%ga: tensor<8x4xf32>, %gb: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>) {
  %a = shard.all_reduce %ga on @g grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
  %b = shard.all_reduce %gb on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %a, %b : tensor<8x4xf32>, tensor<4xf32>
}

// -----

// A tensor-parallel activation is used before the next all-reduce: it stays
// alone, issued where it was.
// CHECK-LABEL: func.func @used_before_the_next
// CHECK-NOT: tensor.concat
// CHECK: %[[A:.*]] = shard.all_reduce %arg0
// CHECK: %[[S:.*]] = arith.addf
// CHECK: shard.all_reduce
shard.grid @g(shape = 4)
func.func @used_before_the_next(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = shard.all_reduce %x on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %d = arith.addf %i, %i : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %b = shard.all_reduce %s on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// Each kind has its own bucket: the f32 gradients share one across the i64
// label count, and the f32 scalar (the loss) joins them as [1].
// CHECK-LABEL: func.func @kinds_apart
// CHECK: shard.all_reduce %arg2 {{.*}} tensor<4xi64>
// CHECK: %[[L:.*]] = tensor.expand_shape %arg3 [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK: %[[C:.*]] = tensor.concat dim(0) %arg0, %arg1, %[[L]] : (tensor<4xf32>, tensor<4xf32>, tensor<1xf32>) -> tensor<9xf32>
// CHECK: %[[R:.*]] = shard.all_reduce %[[C]] {{.*}} tensor<9xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[S:.*]] = tensor.extract_slice %[[R]][8] [1] [1] : tensor<9xf32> to tensor<1xf32>
// CHECK: tensor.collapse_shape %[[S]] [] : tensor<1xf32> into tensor<f32>
shard.grid @g(shape = 4)
func.func @kinds_apart(%x: tensor<4xf32>, %y: tensor<4xf32>, %n: tensor<4xi64>, %l: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xi64>, tensor<4xf32>, tensor<f32>) {
  %a = shard.all_reduce %x on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %c = shard.all_reduce %n on @g grid_axes = [0] : tensor<4xi64> -> tensor<4xi64>
  %b = shard.all_reduce %y on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %s = shard.all_reduce %l on @g grid_axes = [0] : tensor<f32> -> tensor<f32>
  return %a, %c, %b, %s : tensor<4xf32>, tensor<4xi64>, tensor<4xf32>, tensor<f32>
}

// -----

// Autocast's weight gradients: each f32 all-reduce is rounded to bf16 and
// extended back to f32 at once. The casts move down to their first user
// (the return), so both gradients still share one bucket.
// CHECK-LABEL: func.func @autocast_casts_sunk
// CHECK: %[[C:.*]] = tensor.concat dim(0)
// CHECK: shard.all_reduce %[[C]] {{.*}} tensor<8xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: arith.truncf
// CHECK: arith.extf
// CHECK: return
// SMALL-LABEL: func.func @autocast_casts_sunk
#id = affine_map<(d0) -> (d0)>
shard.grid @g(shape = 4)
func.func @autocast_casts_sunk(%ga: tensor<4xf32>, %gb: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = shard.all_reduce %ga on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %eb16 = tensor.empty() : tensor<4xbf16>
  %e32 = tensor.empty() : tensor<4xf32>
  %a16 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%eb16 : tensor<4xbf16>) {
  ^bb0(%i: f32, %o: bf16):
    %t = arith.truncf %i : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4xbf16>
  %a32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a16 : tensor<4xbf16>) outs(%e32 : tensor<4xf32>) {
  ^bb0(%i: bf16, %o: f32):
    %t = arith.extf %i : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %b = shard.all_reduce %gb on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %a32, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// An elementwise op of two values is not a cast: it stays where it is and
// issues the bucket of its all-reduced operand.
// CHECK-LABEL: func.func @negative_binary_not_sunk
// CHECK-NOT: tensor.concat
// CHECK: shard.all_reduce %arg0
// CHECK: arith.addf
// CHECK: shard.all_reduce %arg1
// SMALL-LABEL: func.func @negative_binary_not_sunk
#id = affine_map<(d0) -> (d0)>
shard.grid @g(shape = 4)
func.func @negative_binary_not_sunk(%ga: tensor<4xf32>, %gb: tensor<4xf32>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = shard.all_reduce %ga on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %x : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %t = arith.addf %i, %j : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  %b = shard.all_reduce %gb on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  return %s, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// ZeRO's gradients reduce-scattered over dp (2 chips): one bucket,
// chip-major. Each [N] member is viewed as [2, N/2] and the views are
// concatenated side by side, so chip c's half of the bucket holds its half
// of every member.
// CHECK-LABEL: func.func @two_reduce_scatters
// CHECK-SAME: (%[[GA:.*]]: tensor<8x4xf32>, %[[GB:.*]]: tensor<6xf32>)
// CHECK: %[[FA:.*]] = tensor.collapse_shape %[[GA]] {{\[}}[0, 1]] : tensor<8x4xf32> into tensor<32xf32>
// CHECK: %[[VA:.*]] = tensor.expand_shape %[[FA]] {{\[}}[0, 1]] output_shape [2, 16] : tensor<32xf32> into tensor<2x16xf32>
// CHECK: %[[VB:.*]] = tensor.expand_shape %[[GB]] {{\[}}[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
// CHECK: %[[C:.*]] = tensor.concat dim(1) %[[VA]], %[[VB]] : (tensor<2x16xf32>, tensor<2x3xf32>) -> tensor<2x19xf32>
// CHECK: %[[F:.*]] = tensor.collapse_shape %[[C]] {{\[}}[0, 1]] : tensor<2x19xf32> into tensor<38xf32>
// CHECK: %[[R:.*]] = shard.reduce_scatter %[[F]] on @g grid_axes = [0] scatter_axis = 0 : tensor<38xf32> -> tensor<19xf32>
// CHECK-NOT: shard.reduce_scatter
// CHECK: %[[SA:.*]] = tensor.extract_slice %[[R]][0] [16] [1]
// CHECK: %[[A:.*]] = tensor.expand_shape %[[SA]] {{\[}}[0, 1]] output_shape [4, 4]
// CHECK: %[[B:.*]] = tensor.extract_slice %[[R]][16] [3] [1]
// CHECK: return %[[A]], %[[B]]
shard.grid @g(shape = 2)
func.func @two_reduce_scatters(%ga: tensor<8x4xf32>, %gb: tensor<6xf32>) -> (tensor<4x4xf32>, tensor<3xf32>) {
  %a = shard.reduce_scatter %ga on @g grid_axes = [0] scatter_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
  %b = shard.reduce_scatter %gb on @g grid_axes = [0] scatter_axis = 0 : tensor<6xf32> -> tensor<3xf32>
  return %a, %b : tensor<4x4xf32>, tensor<3xf32>
}

// -----

// A reduce-scatter along another dimension (its chunks are not contiguous)
// and an all-reduce (another kind) are not bucketed with it.
// CHECK-LABEL: func.func @scatter_kinds_apart
// CHECK-NOT: tensor.concat
// CHECK: shard.reduce_scatter %arg0 on @g grid_axes = [0] scatter_axis = 1
// CHECK: shard.reduce_scatter %arg1 on @g grid_axes = [0] scatter_axis = 0
// CHECK: shard.all_reduce %arg2
shard.grid @g(shape = 2)
func.func @scatter_kinds_apart(%x: tensor<4x8xf32>, %y: tensor<8xf32>, %z: tensor<8xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<8xf32>) {
  %a = shard.reduce_scatter %x on @g grid_axes = [0] scatter_axis = 1 : tensor<4x8xf32> -> tensor<4x4xf32>
  %b = shard.reduce_scatter %y on @g grid_axes = [0] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
  %c = shard.all_reduce %z on @g grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  return %a, %b, %c : tensor<4x4xf32>, tensor<4xf32>, tensor<8xf32>
}

// -----

// ZeRO's clipping: each gradient shard's sum of squares is a 0-d partial,
// all-reduced, then square-rooted. The square roots move down to their
// first user, so the partials share one bucket.
// CHECK-LABEL: func.func @norm_partials_bucketed
// CHECK: %[[A:.*]] = tensor.expand_shape %arg0 [] output_shape [1]
// CHECK: %[[B:.*]] = tensor.expand_shape %arg1 [] output_shape [1]
// CHECK: %[[C:.*]] = tensor.concat dim(0) %[[A]], %[[B]] : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
// CHECK: shard.all_reduce %[[C]] {{.*}} tensor<2xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: math.sqrt
// CHECK: math.sqrt
shard.grid @g(shape = 4)
func.func @norm_partials_bucketed(%x: tensor<f32>, %y: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %e = tensor.empty() : tensor<f32>
  %a = shard.all_reduce %x on @g grid_axes = [0] : tensor<f32> -> tensor<f32>
  %sa = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
      ins(%a : tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%i: f32, %o: f32):
    %r = math.sqrt %i : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %b = shard.all_reduce %y on @g grid_axes = [0] : tensor<f32> -> tensor<f32>
  %sb = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
      ins(%b : tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%i: f32, %o: f32):
    %r = math.sqrt %i : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %sa, %sb : tensor<f32>, tensor<f32>
}
