// RUN: nova-opt %s --split-input-file --nova-widen-all-reduces | FileCheck %s

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A bias gradient under bf16 autocast after shard-partition: each chip's
// bf16 sum over its tokens, all-reduced, then extended to f32. The sum is
// extended first and all-reduced in f32.
// CHECK-LABEL: func.func @bias_gradient
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<32xbf16>) outs(%{{.*}} : tensor<32xf32>)
// CHECK: arith.extf
// CHECK: %[[R:.*]] = shard.all_reduce %[[W]] on @grid grid_axes = [0] : tensor<32xf32> -> tensor<32xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: return %[[R]]
shard.grid @grid(shape = 2)
func.func @bias_gradient(%dy: tensor<16x32xbf16>) -> tensor<32xf32> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<32xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<32xbf16>) -> tensor<32xbf16>
  %s = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%dy : tensor<16x32xbf16>) outs(%z : tensor<32xbf16>) {
  ^bb0(%x: bf16, %acc: bf16):
    %a = arith.addf %x, %acc : bf16
    linalg.yield %a : bf16
  } -> tensor<32xbf16>
  %r = shard.all_reduce %s on @grid grid_axes = [0] : tensor<32xbf16> -> tensor<32xbf16>
  %ew = tensor.empty() : tensor<32xf32>
  %w = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%r : tensor<32xbf16>) outs(%ew : tensor<32xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %f = arith.extf %x : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<32xf32>
  return %w : tensor<32xf32>
}

// -----

#id1 = affine_map<(d0) -> (d0)>

// A matmul's partial product (tensor parallelism's activations) stays in
// its own type, as PyTorch all-reduces it.
// CHECK-LABEL: func.func @negative_matmul_partial
// CHECK: shard.all_reduce %{{.*}} : tensor<8x32xbf16> -> tensor<8x32xbf16>
shard.grid @grid(shape = 2)
func.func @negative_matmul_partial(%a: tensor<8x16xbf16>, %b: tensor<16x32xbf16>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8x32xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %m = linalg.matmul ins(%a, %b : tensor<8x16xbf16>, tensor<16x32xbf16>) outs(%z : tensor<8x32xbf16>) -> tensor<8x32xbf16>
  %r = shard.all_reduce %m on @grid grid_axes = [0] : tensor<8x32xbf16> -> tensor<8x32xbf16>
  %ew = tensor.empty() : tensor<8x32xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<8x32xbf16>) outs(%ew : tensor<8x32xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %f = arith.extf %x : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<8x32xf32>
  return %w : tensor<8x32xf32>
}

// -----

#id1 = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// The reduced bf16 sum has another user besides the widening: left alone.
// CHECK-LABEL: func.func @negative_two_users
// CHECK: shard.all_reduce %{{.*}} : tensor<32xbf16> -> tensor<32xbf16>
shard.grid @grid(shape = 2)
func.func @negative_two_users(%dy: tensor<16x32xbf16>) -> (tensor<32xf32>, tensor<32xbf16>) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<32xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<32xbf16>) -> tensor<32xbf16>
  %s = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%dy : tensor<16x32xbf16>) outs(%z : tensor<32xbf16>) {
  ^bb0(%x: bf16, %acc: bf16):
    %a = arith.addf %x, %acc : bf16
    linalg.yield %a : bf16
  } -> tensor<32xbf16>
  %r = shard.all_reduce %s on @grid grid_axes = [0] : tensor<32xbf16> -> tensor<32xbf16>
  %ew = tensor.empty() : tensor<32xf32>
  %w = linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} ins(%r : tensor<32xbf16>) outs(%ew : tensor<32xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %f = arith.extf %x : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<32xf32>
  return %w, %r : tensor<32xf32>, tensor<32xbf16>
}
