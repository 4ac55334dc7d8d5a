// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.all_reduce: one case per rule.

func.func @negative_all_reduce_input_in_acc(%a: memref<8x4xf32, #nova.memory_space<acc>>, %b: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_reduce' op input must live in hbm or sram, got acc}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<acc>>) outs(%b : memref<8x4xf32, #nova.memory_space<hbm>>) groups [[0, 1]]
  return
}

// -----

func.func @negative_all_reduce_output_in_acc(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<8x4xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.all_reduce' op output must live in hbm or sram, got acc}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<8x4xf32, #nova.memory_space<acc>>) groups [[0, 1]]
  return
}

// -----

func.func @negative_all_reduce_element_type(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<8x4xbf16, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_reduce' op input and output element types must match, got 'f32' and 'bf16'}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<8x4xbf16, #nova.memory_space<hbm>>) groups [[0, 1]]
  return
}

// -----

func.func @negative_all_reduce_shape(%a: memref<8x4xf32, #nova.memory_space<hbm>>, %b: memref<4x8xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.all_reduce' op output shape must be 8x4, got 4x8}}
  %t = nova.all_reduce <sum> ins(%a : memref<8x4xf32, #nova.memory_space<hbm>>) outs(%b : memref<4x8xf32, #nova.memory_space<hbm>>) groups [[0, 1]]
  return
}
