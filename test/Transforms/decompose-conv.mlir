// RUN: nova-opt %s --nova-decompose-conv -split-input-file -verify-diagnostics | FileCheck %s

// Stride 2, 2x2 kernel, one image: four taps, four accumulating matmuls.
// CHECK-LABEL: func.func @conv_stride2
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x6x6xf32>, %[[W:.*]]: tensor<4x3x2x2xf32>, %[[B:.*]]: tensor<1x4x3x3xf32>)
// CHECK-NOT: linalg.conv_2d_nchw_fchw
// CHECK-DAG: %[[W00:.*]] = tensor.extract_slice %[[W]][0, 0, 0, 0] [4, 3, 1, 1] [1, 1, 1, 1] : tensor<4x3x2x2xf32> to tensor<4x3xf32>
// CHECK-DAG: %[[W11:.*]] = tensor.extract_slice %[[W]][0, 0, 1, 1] [4, 3, 1, 1] [1, 1, 1, 1] : tensor<4x3x2x2xf32> to tensor<4x3xf32>
// CHECK: %[[ACC:.*]] = tensor.extract_slice %[[B]][0, 0, 0, 0] [1, 4, 3, 3] [1, 1, 1, 1] : tensor<1x4x3x3xf32> to tensor<4x3x3xf32>
// CHECK: %[[ACC2:.*]] = tensor.collapse_shape %[[ACC]] {{\[\[}}0], [1, 2]] : tensor<4x3x3xf32> into tensor<4x9xf32>
// CHECK: %[[X00:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 3, 3, 3] [1, 1, 2, 2] : tensor<1x3x6x6xf32> to tensor<3x3x3xf32>
// CHECK: %[[XM:.*]] = tensor.collapse_shape %[[X00]] {{\[\[}}0], [1, 2]] : tensor<3x3x3xf32> into tensor<3x9xf32>
// CHECK: %[[M0:.*]] = linalg.matmul ins(%[[W00]], %[[XM]] : tensor<4x3xf32>, tensor<3x9xf32>) outs(%[[ACC2]] : tensor<4x9xf32>)
// CHECK: tensor.extract_slice %[[X]][0, 0, 0, 1] [1, 3, 3, 3] [1, 1, 2, 2]
// CHECK: linalg.matmul {{.*}} outs(%[[M0]] : tensor<4x9xf32>)
// CHECK: tensor.extract_slice %[[X]][0, 0, 1, 1] [1, 3, 3, 3] [1, 1, 2, 2]
// CHECK: %[[M3:.*]] = linalg.matmul ins(%[[W11]], %{{.*}} : tensor<4x3xf32>, tensor<3x9xf32>)
// CHECK: %[[E:.*]] = tensor.expand_shape %[[M3]] {{\[\[}}0], [1, 2]] output_shape [4, 3, 3] : tensor<4x9xf32> into tensor<4x3x3xf32>
// CHECK: %[[R:.*]] = tensor.insert_slice %[[E]] into %[[B]][0, 0, 0, 0] [1, 4, 3, 3] [1, 1, 1, 1] : tensor<4x3x3xf32> into tensor<1x4x3x3xf32>
// CHECK: return %[[R]]
func.func @conv_stride2(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x2x2xf32>, %b: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<4x3x2x2xf32>) outs(%b : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %y : tensor<1x4x3x3xf32>
}

// -----

// Two images, dilation 2, 1x2 kernel: 2 * 2 matmuls, one insert_slice per image.
// CHECK-LABEL: func.func @conv_batch2_dilated
// CHECK-SAME: (%[[X:.*]]: tensor<2x1x4x5xf32>
// CHECK: tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 1, 4, 3] [1, 1, 1, 1]
// CHECK: linalg.matmul
// CHECK: tensor.extract_slice %[[X]][0, 0, 0, 2] [1, 1, 4, 3] [1, 1, 1, 1]
// CHECK: linalg.matmul
// CHECK: %[[R0:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 0] [1, 2, 4, 3]
// CHECK: tensor.extract_slice %[[X]][1, 0, 0, 0] [1, 1, 4, 3] [1, 1, 1, 1]
// CHECK: linalg.matmul
// CHECK: linalg.matmul
// CHECK: %[[R1:.*]] = tensor.insert_slice %{{.*}} into %[[R0]][1, 0, 0, 0] [1, 2, 4, 3]
// CHECK: return %[[R1]]
func.func @conv_batch2_dilated(%x: tensor<2x1x4x5xf32>, %w: tensor<2x1x1x2xf32>, %b: tensor<2x2x4x3xf32>) -> tensor<2x2x4x3xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<2x1x4x5xf32>, tensor<2x1x1x2xf32>) outs(%b : tensor<2x2x4x3xf32>) -> tensor<2x2x4x3xf32>
  return %y : tensor<2x2x4x3xf32>
}

// -----

// CHECK-LABEL: func.func @negative_matmul_untouched
// CHECK: linalg.matmul ins(%arg0, %arg1
func.func @negative_matmul_untouched(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%c : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

func.func @negative_dynamic(%x: tensor<?x3x6x6xf32>, %w: tensor<4x3x2x2xf32>, %b: tensor<?x4x5x5xf32>) -> tensor<?x4x5x5xf32> {
  // expected-error @+1 {{nova-decompose-conv needs static tensor shapes}}
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<?x3x6x6xf32>, tensor<4x3x2x2xf32>) outs(%b : tensor<?x4x5x5xf32>) -> tensor<?x4x5x5xf32>
  return %y : tensor<?x4x5x5xf32>
}
