// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(nova-pad-matmul))' -split-input-file | FileCheck %s

// An LM head over a 257-token vocabulary (a prime: nova-tile would cut it in
// 1-column tiles): B is zero-padded to 384 columns (only its 127 padding rows
// filled: the rest is B's own), the destination, a zero fill, is filled at
// the padded width (no narrow fill copied into a wide one), and the result
// sliced back.
// CHECK-LABEL: func.func @lm_head_prime_width
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<127x64xf32>)
// CHECK: %[[BZ:.*]] = tensor.insert_slice %[[Z]] into %{{.*}}[257, 0] [127, 64] [1, 1] : tensor<127x64xf32> into tensor<384x64xf32>
// CHECK: %[[B:.*]] = tensor.insert_slice %{{.*}} into %[[BZ]][0, 0] [257, 64] [1, 1] : tensor<257x64xf32> into tensor<384x64xf32>
// CHECK: %[[C:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<16x384xf32>)
// CHECK: %[[W:.*]] = linalg.matmul indexing_maps = {{.*}} ins(%{{.*}}, %[[B]] : tensor<16x64xf32>, tensor<384x64xf32>) outs(%[[C]] : tensor<16x384xf32>)
// CHECK: tensor.extract_slice %[[W]][0, 0] [16, 257] [1, 1] : tensor<16x384xf32> to tensor<16x257xf32>
func.func @lm_head_prime_width(%x: tensor<16x64xf32>, %w: tensor<257x64xf32>) -> tensor<16x257xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x257xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x257xf32>) -> tensor<16x257xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %w : tensor<16x64xf32>, tensor<257x64xf32>) outs(%f : tensor<16x257xf32>) -> tensor<16x257xf32>
  return %r : tensor<16x257xf32>
}

// -----

// A width the tiler cuts well (256 = 2 x 128) is left alone.
// CHECK-LABEL: func.func @negative_good_width
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x64xf32>, tensor<64x256xf32>)
func.func @negative_good_width(%x: tensor<16x64xf32>, %w: tensor<64x256xf32>, %c: tensor<16x256xf32>) -> tensor<16x256xf32> {
  %r = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x256xf32>) outs(%c : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %r : tensor<16x256xf32>
}

// -----

// The LM head's backward dX = dY W over the same vocabulary: K = 257 would be
// fed to the array in 1-row chunks. K alone is awkward: two matmuls over
// K = 256 + 1 read slices of dY and W (no padded copy of dY), the second
// accumulating into the first; the result keeps its shape.
// CHECK-LABEL: func.func @backward_prime_contraction
// CHECK: %[[A0:.*]] = tensor.extract_slice %arg0[0, 0] [16, 256] [1, 1]
// CHECK: %[[B0:.*]] = tensor.extract_slice %arg1[0, 0] [256, 64] [1, 1]
// CHECK: %[[P:.*]] = linalg.matmul ins(%[[A0]], %[[B0]] : tensor<16x256xf32>, tensor<256x64xf32>) outs(%arg2 : tensor<16x64xf32>)
// CHECK: %[[A1:.*]] = tensor.extract_slice %arg0[0, 256] [16, 1] [1, 1]
// CHECK: %[[B1:.*]] = tensor.extract_slice %arg1[256, 0] [1, 64] [1, 1]
// CHECK: %[[R:.*]] = linalg.matmul ins(%[[A1]], %[[B1]] : tensor<16x1xf32>, tensor<1x64xf32>) outs(%[[P]] : tensor<16x64xf32>)
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[R]]
func.func @backward_prime_contraction(%dy: tensor<16x257xf32>, %w: tensor<257x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = linalg.matmul ins(%dy, %w : tensor<16x257xf32>, tensor<257x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}

// -----

// Rows with no divisor between the array's height and the longest row tile
// (4099 is prime): A's rows and the destination padded to 4224, the result
// sliced back. A transposed A (dW = dY^T X) is padded along its map.
// CHECK-LABEL: func.func @prime_rows_transposed_a
// CHECK: %[[A:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [16, 4099] [1, 1] : tensor<16x4099xf32> into tensor<16x4224xf32>
// CHECK: %[[C:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [4099, 64] [1, 1] : tensor<4099x64xf32> into tensor<4224x64xf32>
// CHECK: %[[W:.*]] = linalg.matmul indexing_maps = {{.*}} ins(%[[A]], %{{.*}} : tensor<16x4224xf32>, tensor<16x64xf32>) outs(%[[C]] : tensor<4224x64xf32>)
// CHECK: tensor.extract_slice %[[W]][0, 0] [4099, 64] [1, 1] : tensor<4224x64xf32> to tensor<4099x64xf32>
func.func @prime_rows_transposed_a(%dyt: tensor<16x4099xf32>, %x: tensor<16x64xf32>, %c: tensor<4099x64xf32>) -> tensor<4099x64xf32> {
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%dyt, %x : tensor<16x4099xf32>, tensor<16x64xf32>) outs(%c : tensor<4099x64xf32>) -> tensor<4099x64xf32>
  return %r : tensor<4099x64xf32>
}

// -----

// Rows the tiler cuts into long tiles (50257 = 29 x 1733: 1733-row tiles)
// and a contraction of good chunks (2048) are left alone.
// CHECK-LABEL: func.func @negative_good_rows_and_contraction
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<50257x2048xbf16>, tensor<2048x64xbf16>)
func.func @negative_good_rows_and_contraction(%a: tensor<50257x2048xbf16>, %b: tensor<2048x64xbf16>, %c: tensor<50257x64xf32>) -> tensor<50257x64xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<50257x2048xbf16>, tensor<2048x64xbf16>) outs(%c : tensor<50257x64xf32>) -> tensor<50257x64xf32>
  return %r : tensor<50257x64xf32>
}

// -----

// A tensor-parallel LM head's dX = dY W over its chip's 12576 words
// (50304 / 4 = 131 x 96): the array would take K in 96-row chunks, 75 % of
// its rows. K = 12544 + 32 instead: 98 whole chunks and a remainder.
// CHECK-LABEL: func.func @backward_wide_awkward_contraction
// CHECK: %[[P:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x12544xf32>, tensor<12544x64xf32>) outs(%arg2 : tensor<16x64xf32>)
// CHECK: %[[R:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<32x64xf32>) outs(%[[P]] : tensor<16x64xf32>)
// CHECK: return %[[R]]
func.func @backward_wide_awkward_contraction(%dy: tensor<16x12576xf32>, %w: tensor<12576x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = linalg.matmul ins(%dy, %w : tensor<16x12576xf32>, tensor<12576x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}

// -----

// Left alone: K = 192 = 2 x 96 takes two chunks either way.
// CHECK-LABEL: func.func @negative_two_chunk_contraction
// CHECK: linalg.matmul ins(%arg0, %arg1 : tensor<16x192xf32>, tensor<192x64xf32>)
// CHECK-NOT: linalg.matmul
func.func @negative_two_chunk_contraction(%a: tensor<16x192xf32>, %b: tensor<192x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<16x192xf32>, tensor<192x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}

// -----

// B computed just before (autocast's bf16 copy of the weight): the padded
// tensor and its zero strip are built before B's producer, so that
// nova-bufferize can have the producer write its slice of the padded tensor
// (no copy of B); B itself is inserted after it.
// CHECK-LABEL: func.func @lm_head_padded_before_cast
// CHECK: %[[BZ:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[257, 0] [127, 64] [1, 1] : tensor<127x64xbf16> into tensor<384x64xbf16>
// CHECK: %[[CAST:.*]] = linalg.generic
// CHECK: arith.truncf
// CHECK: tensor.insert_slice %[[CAST]] into %[[BZ]][0, 0] [257, 64] [1, 1] : tensor<257x64xbf16> into tensor<384x64xbf16>
// CHECK: linalg.matmul
func.func @lm_head_padded_before_cast(%x: tensor<16x64xbf16>, %w: tensor<257x64xf32>) -> tensor<16x257xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<257x64xbf16>
  %wb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<257x64xf32>) outs(%e0 : tensor<257x64xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<257x64xbf16>
  %e = tensor.empty() : tensor<16x257xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x257xf32>) -> tensor<16x257xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%x, %wb : tensor<16x64xbf16>, tensor<257x64xbf16>) outs(%f : tensor<16x257xf32>) -> tensor<16x257xf32>
  return %r : tensor<16x257xf32>
}
