// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(nova-pad-matmul))' -split-input-file | FileCheck %s

// An LM head over a 257-token vocabulary (a prime: nova-tile would cut it in
// 1-column tiles): B and the destination are zero-padded to 384 columns and
// the result sliced back.
// CHECK-LABEL: func.func @lm_head_prime_width
// CHECK: %[[BZ:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<384x64xf32>)
// CHECK: %[[B:.*]] = tensor.insert_slice %{{.*}} into %[[BZ]][0, 0] [257, 64] [1, 1] : tensor<257x64xf32> into tensor<384x64xf32>
// CHECK: %[[C:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [16, 257] [1, 1] : tensor<16x257xf32> into tensor<16x384xf32>
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
