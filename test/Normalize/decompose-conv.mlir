// RUN: nova-opt %s --nova-decompose-conv -split-input-file -verify-diagnostics | FileCheck %s

// Stride 2, 2x2 kernel, one image: loops over the image and the kernel
// taps around one accumulating matmul over strided views.
// CHECK-LABEL: func.func @conv_stride2
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x6x6xf32>, %[[W:.*]]: tensor<4x3x2x2xf32>, %[[B:.*]]: tensor<1x4x3x3xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-NOT: linalg.conv_2d_nchw_fchw
// CHECK: %[[R:.*]] = scf.for %[[N:[a-z0-9_]+]] = %[[C0]] to %[[C1]] step %[[C1]] iter_args(%[[OUT:[a-z0-9_]+]] = %[[B]])
// Full-rank slices and explicit reshapes: no rank-reducing slice whose
// dropped unit dims upstream folds could misread.
// CHECK: %[[ACC:.*]] = tensor.extract_slice %[[OUT]][%[[N]], 0, 0, 0] [1, 4, 3, 3] [1, 1, 1, 1] : tensor<1x4x3x3xf32> to tensor<1x4x3x3xf32>
// CHECK: %[[ACC2:.*]] = tensor.collapse_shape %[[ACC]] {{\[\[}}0, 1], [2, 3]] : tensor<1x4x3x3xf32> into tensor<4x9xf32>
// CHECK: %[[ROWS:.*]] = scf.for %[[I:[a-z0-9_]+]] = %[[C0]] to %[[C2]] step %[[C1]] iter_args(%[[A1:[a-z0-9_]+]] = %[[ACC2]])
// CHECK: %[[COLS:.*]] = scf.for %[[J:[a-z0-9_]+]] = %[[C0]] to %[[C2]] step %[[C1]] iter_args(%[[A2:[a-z0-9_]+]] = %[[A1]])
// CHECK: %[[TAPS:.*]] = tensor.extract_slice %[[W]][0, 0, %[[I]], %[[J]]] [4, 3, 1, 1] [1, 1, 1, 1] : tensor<4x3x2x2xf32> to tensor<4x3x1x1xf32>
// CHECK: %[[TAP:.*]] = tensor.collapse_shape %[[TAPS]] {{\[\[}}0], [1, 2, 3]] : tensor<4x3x1x1xf32> into tensor<4x3xf32>
// CHECK: %[[XS:.*]] = tensor.extract_slice %[[X]][%[[N]], 0, %[[I]], %[[J]]] [1, 3, 3, 3] [1, 1, 2, 2] : tensor<1x3x6x6xf32> to tensor<1x3x3x3xf32>
// CHECK: %[[XM:.*]] = tensor.collapse_shape %[[XS]] {{\[\[}}0, 1], [2, 3]] : tensor<1x3x3x3xf32> into tensor<3x9xf32>
// CHECK: %[[MM:.*]] = linalg.matmul ins(%[[TAP]], %[[XM]] : tensor<4x3xf32>, tensor<3x9xf32>) outs(%[[A2]] : tensor<4x9xf32>)
// CHECK: scf.yield %[[MM]]
// CHECK: scf.yield %[[COLS]]
// CHECK: %[[E:.*]] = tensor.expand_shape %[[ROWS]] {{\[\[}}0, 1], [2, 3]] output_shape [1, 4, 3, 3] : tensor<4x9xf32> into tensor<1x4x3x3xf32>
// CHECK: %[[W2:.*]] = tensor.insert_slice %[[E]] into %[[OUT]][%[[N]], 0, 0, 0] [1, 4, 3, 3] [1, 1, 1, 1] : tensor<1x4x3x3xf32> into tensor<1x4x3x3xf32>
// CHECK: scf.yield %[[W2]]
// CHECK: return %[[R]]
// CHECK-NOT: linalg.matmul
func.func @conv_stride2(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x2x2xf32>, %b: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<4x3x2x2xf32>) outs(%b : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %y : tensor<1x4x3x3xf32>
}

// -----

// Two images, dilation 2, 1x2 kernel: the tap offsets are the induction
// variables times the dilation; still one matmul in the IR.
// CHECK-LABEL: func.func @conv_batch2_dilated
// CHECK-SAME: (%[[X:.*]]: tensor<2x1x4x5xf32>
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: scf.for %[[N:[a-z0-9_]+]] = %{{.*}} to %[[C2]]
// CHECK: scf.for %[[I:[a-z0-9_]+]] =
// CHECK: scf.for %[[J:[a-z0-9_]+]] =
// CHECK-DAG: %[[DI:.*]] = arith.muli %[[I]], %[[C2]] : index
// CHECK-DAG: %[[DJ:.*]] = arith.muli %[[J]], %[[C2]] : index
// CHECK: tensor.extract_slice %[[X]][%[[N]], 0, %[[DI]], %[[DJ]]] [1, 1, 4, 3] [1, 1, 1, 1]
// CHECK: linalg.matmul
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @conv_batch2_dilated(%x: tensor<2x1x4x5xf32>, %w: tensor<2x1x1x2xf32>, %b: tensor<2x2x4x3xf32>) -> tensor<2x2x4x3xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<2x1x4x5xf32>, tensor<2x1x1x2xf32>) outs(%b : tensor<2x2x4x3xf32>) -> tensor<2x2x4x3xf32>
  return %y : tensor<2x2x4x3xf32>
}

// -----

// Grouped (torch-mlir's form for groups > 1 and for a strided conv's weight
// gradient): a loop over groups around the ungrouped loops.
// CHECK-LABEL: func.func @conv_grouped
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x3x6x6xf32>, %[[W:.*]]: tensor<2x4x3x2x2xf32>, %[[B:.*]]: tensor<1x2x4x5x5xf32>)
// CHECK: scf.for %[[G:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[OUT:[a-z0-9_]+]] = %[[B]])
// CHECK-DAG: tensor.extract_slice %[[X]][0, %[[G]], 0, 0, 0] [1, 1, 3, 6, 6] [1, 1, 1, 1, 1] : tensor<1x2x3x6x6xf32> to tensor<1x1x3x6x6xf32>
// CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x1x3x6x6xf32> into tensor<1x3x6x6xf32>
// CHECK-DAG: tensor.extract_slice %[[W]][%[[G]], 0, 0, 0, 0] [1, 4, 3, 2, 2] [1, 1, 1, 1, 1] : tensor<2x4x3x2x2xf32> to tensor<1x4x3x2x2xf32>
// CHECK-DAG: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3], [4]] : tensor<1x4x3x2x2xf32> into tensor<4x3x2x2xf32>
// CHECK-DAG: tensor.extract_slice %[[OUT]][0, %[[G]], 0, 0, 0] [1, 1, 4, 5, 5] [1, 1, 1, 1, 1] : tensor<1x2x4x5x5xf32> to tensor<1x1x4x5x5xf32>
// CHECK: linalg.matmul {{.*}} -> tensor<4x25xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 1, 4, 5, 5] : tensor<1x4x5x5xf32> into tensor<1x1x4x5x5xf32>
// CHECK: tensor.insert_slice %{{.*}} into %[[OUT]][0, %[[G]], 0, 0, 0] [1, 1, 4, 5, 5] [1, 1, 1, 1, 1] : tensor<1x1x4x5x5xf32> into tensor<1x2x4x5x5xf32>
// CHECK-NOT: linalg.conv
func.func @conv_grouped(%x: tensor<1x2x3x6x6xf32>, %w: tensor<2x4x3x2x2xf32>, %b: tensor<1x2x4x5x5xf32>) -> tensor<1x2x4x5x5xf32> {
  %y = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x2x3x6x6xf32>, tensor<2x4x3x2x2xf32>) outs(%b : tensor<1x2x4x5x5xf32>) -> tensor<1x2x4x5x5xf32>
  return %y : tensor<1x2x4x5x5xf32>
}

// -----

// Depthwise: each tap scales its channel's strided view elementwise.
// CHECK-LABEL: func.func @conv_depthwise
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x6x6xf32>, %[[W:.*]]: tensor<3x2x2xf32>
// CHECK: scf.for
// CHECK: scf.for %[[I:[a-z0-9_]+]] =
// CHECK: scf.for %[[J:[a-z0-9_]+]] =
// CHECK: %[[TAPS:.*]] = tensor.extract_slice %[[W]][0, %[[I]], %[[J]]] [3, 1, 1] [1, 1, 1] : tensor<3x2x2xf32> to tensor<3x1x1xf32>
// CHECK: %[[TAP:.*]] = tensor.collapse_shape %[[TAPS]] {{\[\[}}0, 1, 2]] : tensor<3x1x1xf32> into tensor<3xf32>
// CHECK: %[[XS:.*]] = tensor.extract_slice %[[X]][%{{.*}}, 0, %[[I]], %[[J]]] [1, 3, 5, 5] [1, 1, 1, 1]
// CHECK: %[[XM:.*]] = tensor.collapse_shape %[[XS]]
// CHECK: linalg.generic {{.*}} ins(%[[TAP]], %[[XM]] : tensor<3xf32>, tensor<3x25xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.depthwise
func.func @conv_depthwise(%x: tensor<1x3x6x6xf32>, %w: tensor<3x2x2xf32>, %b: tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32> {
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<3x2x2xf32>) outs(%b : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  return %y : tensor<1x3x5x5xf32>
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

// -----

// Max pooling: each tap takes the maximum with its strided view.
// CHECK-LABEL: func.func @pool_max
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: tensor.extract_slice %{{.*}} [1, 3, 3, 3] [1, 1, 2, 2]
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK-NOT: linalg.pooling
func.func @pool_max(%x: tensor<1x3x6x6xf32>, %b: tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32> {
  %w = tensor.empty() : tensor<2x2xf32>
  %y = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<2x2xf32>) outs(%b : tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %y : tensor<1x3x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @pool_sum
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK-NOT: linalg.pooling
func.func @pool_sum(%x: tensor<1x3x6x6xf32>, %b: tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32> {
  %w = tensor.empty() : tensor<2x2xf32>
  %y = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<2x2xf32>) outs(%b : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  return %y : tensor<1x3x5x5xf32>
}

// -----

// One output column: the view's column stride is 1 (a stride over one
// column means nothing, and a unit dim with a non-unit stride trips
// memref.subview's rank-reduction inference after bufferization).
// CHECK-LABEL: func.func @conv_one_output_column
// CHECK: tensor.extract_slice %{{.*}}[%{{.*}}, 0, %{{.*}}, %{{.*}}] [1, 2, 2, 1] [1, 1, 3, 1] : tensor<2x2x12x10xf32> to tensor<1x2x2x1xf32>
func.func @conv_one_output_column(%x: tensor<2x2x12x10xf32>, %w: tensor<1x2x3x3xf32>, %b: tensor<2x1x2x1xf32>) -> tensor<2x1x2x1xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<4> : vector<2xi64>, strides = dense<[3, 2]> : vector<2xi64>}
      ins(%x, %w : tensor<2x2x12x10xf32>, tensor<1x2x3x3xf32>) outs(%b : tensor<2x1x2x1xf32>) -> tensor<2x1x2x1xf32>
  return %y : tensor<2x1x2x1xf32>
}

// -----

// Integer convolution: the matrix unit takes floats only, so each tap is
// its products on the vector unit and a sum over the input channels.
// CHECK-LABEL: func.func @conv_integer
// CHECK-NOT: linalg.matmul
// CHECK: scf.for
// CHECK: %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]{{.*}} outs(%{{.*}} : tensor<4x3x9xi64>)
// CHECK: arith.muli
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]{{.*}} ins(%[[P]] : tensor<4x3x9xi64>) outs(%{{.*}} : tensor<4x9xi64>)
// CHECK: arith.addi
// CHECK-NOT: linalg.matmul
func.func @conv_integer(%x: tensor<1x3x6x6xi64>, %w: tensor<4x3x2x2xi64>, %b: tensor<1x4x3x3xi64>) -> tensor<1x4x3x3xi64> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xi64>, tensor<4x3x2x2xi64>) outs(%b : tensor<1x4x3x3xi64>) -> tensor<1x4x3x3xi64>
  return %y : tensor<1x4x3x3xi64>
}

// -----

// Integer sum pooling adds with addi (avg_pool of an int64 tensor).
// CHECK-LABEL: func.func @pool_sum_integer
// CHECK: linalg.generic
// CHECK: arith.addi
// CHECK-NOT: arith.addf
func.func @pool_sum_integer(%x: tensor<1x2x4x4xi64>, %b: tensor<1x2x2x2xi64>) -> tensor<1x2x2x2xi64> {
  %win = tensor.empty() : tensor<2x2xi64>
  %y = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%x, %win : tensor<1x2x4x4xi64>, tensor<2x2xi64>) outs(%b : tensor<1x2x2x2xi64>) -> tensor<1x2x2x2xi64>
  return %y : tensor<1x2x2x2xi64>
}
