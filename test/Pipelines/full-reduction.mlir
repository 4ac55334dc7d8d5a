// A reduction over every element to a rank-0 tensor (a mean or a loss):
// the scalar accumulator is viewed as 1x1 with no reassociation groups, and
// both dimensions are reduced on the vector unit.
// RUN: nova-opt %s --nova-lower-to-tiles="target=nova-t1" | FileCheck %s

// CHECK-LABEL: func.func @full_reduction
// CHECK: %[[ACC:.*]] = memref.expand_shape %{{.*}} [] output_shape [1, 1] : memref<f32, #nova.memory_space<sram>> into memref<1x1xf32, #nova.memory_space<sram>>
// CHECK: nova.reduce <sum> ins(%{{.*}} : memref<8x4xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<1x4xf32, #nova.memory_space<sram>>) dim 0
// CHECK: nova.reduce <sum> ins(%{{.*}} : memref<1x4xf32, #nova.memory_space<sram>>) outs(%[[P:.*]] : memref<1x1xf32, #nova.memory_space<sram>>) dim 1
// CHECK: nova.elementwise <add> ins(%[[ACC]], %[[P]]
func.func @full_reduction(%x: tensor<8x4xf32>) -> tensor<f32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<8x4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}
