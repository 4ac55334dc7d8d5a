// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.all_gather: one case per rule.

func.func @negative_all_gather_dim(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<16x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_gather' op dim 2 is out of range for rank 2}}
  %t = nova.all_gather ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<16x4xf32, #nova.memory_space<hbm>>) dim 2 groups [[0, 1]]
  return
}

// -----

func.func @negative_all_gather_shape(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<8x8xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_gather' op output shape must be 16x4, got 8x8}}
  %t = nova.all_gather ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<8x8xf32, #nova.memory_space<hbm>>) dim 0 groups [[0, 1]]
  return
}
