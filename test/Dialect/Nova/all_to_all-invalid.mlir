// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.all_to_all: one case per rule.

func.func @negative_all_to_all_split_dim(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_to_all' op split_dim 2 is out of range for rank 2}}
  %t = nova.all_to_all ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<8x4xf32, #nova.memory_space<hbm>>) split_dim 2 concat_dim 0 groups [[0, 1]]
  return
}

// -----

func.func @negative_all_to_all_concat_dim(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_to_all' op concat_dim 3 is out of range for rank 2}}
  %t = nova.all_to_all ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<8x4xf32, #nova.memory_space<hbm>>) split_dim 0 concat_dim 3 groups [[0, 1]]
  return
}

// -----

func.func @negative_all_to_all_uneven(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_to_all' op dim 1 of size 4 does not split evenly over groups of 3}}
  %t = nova.all_to_all ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<8x4xf32, #nova.memory_space<hbm>>) split_dim 1 concat_dim 0 groups [[0, 1, 2]]
  return
}

// -----

func.func @negative_all_to_all_shape(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_to_all' op output shape must be 4x8, got 8x4}}
  %t = nova.all_to_all ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<8x4xf32, #nova.memory_space<hbm>>) split_dim 0 concat_dim 1 groups [[0, 1]]
  return
}
