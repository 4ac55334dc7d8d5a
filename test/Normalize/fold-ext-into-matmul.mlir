// RUN: nova-opt %s --nova-fold-ext-into-matmul -split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// torch-mlir's bf16 mm: both operands widened to f32. The matmul reads the
// bf16 operands and still accumulates in f32.
// CHECK-LABEL: func.func @bf16_matmul
// CHECK-SAME: (%[[A:.*]]: tensor<16x64xbf16>, %[[B:.*]]: tensor<64x32xbf16>
// CHECK: linalg.matmul ins(%[[A]], %[[B]] : tensor<16x64xbf16>, tensor<64x32xbf16>) outs(%{{.*}} : tensor<16x32xf32>)
func.func @bf16_matmul(%a: tensor<16x64xbf16>, %b: tensor<64x32xbf16>, %acc: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %ea = tensor.empty() : tensor<16x64xf32>
  %a32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x64xbf16>) outs(%ea : tensor<16x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<16x64xf32>
  %eb = tensor.empty() : tensor<64x32xf32>
  %b32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<64x32xbf16>) outs(%eb : tensor<64x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<64x32xf32>
  %c = linalg.matmul ins(%a32, %b32 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%acc : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// A mixed f32 x bf16 matmul stays in f32 (the matrix unit takes one operand
// type).
// CHECK-LABEL: func.func @negative_mixed_operands
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x64xf32>, tensor<64x32xf32>)
func.func @negative_mixed_operands(%a: tensor<16x64xf32>, %b: tensor<64x32xbf16>, %acc: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %eb = tensor.empty() : tensor<64x32xf32>
  %b32 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<64x32xbf16>) outs(%eb : tensor<64x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %w = arith.extf %in : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<64x32xf32>
  %c = linalg.matmul ins(%a, %b32 : tensor<16x64xf32>, tensor<64x32xf32>) outs(%acc : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %c : tensor<16x32xf32>
}
