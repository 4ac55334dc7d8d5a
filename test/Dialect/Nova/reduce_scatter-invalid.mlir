// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.reduce_scatter: one case per rule.

func.func @negative_reduce_scatter_uneven(%a: memref<6x4xf32, #nova.memory_space<hbm>>, %b: memref<2x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.reduce_scatter' op dim 0 of size 6 does not split evenly over groups of 4}}
  %t = nova.reduce_scatter <sum> ins(%a : memref<6x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<2x4xf32, #nova.memory_space<hbm>>) dim 0 groups [[0, 1, 2, 3]]
  return
}

// -----

func.func @negative_reduce_scatter_shape(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.reduce_scatter' op output shape must be 4x4, got 8x4}}
  %t = nova.reduce_scatter <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<8x4xf32, #nova.memory_space<hbm>>) dim 0 groups [[0, 1]]
  return
}

// -----

func.func @negative_reduce_scatter_dim(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.reduce_scatter' op dim 5 is out of range for rank 2}}
  %t = nova.reduce_scatter <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<8x4xf32, #nova.memory_space<hbm>>) dim 5 groups [[0, 1]]
  return
}
