// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.transpose: one case per rule.

func.func @negative_transpose_perm_size(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<8x4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.transpose' op permutation has 3 entries for an input of rank 2}}
  nova.transpose ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<8x4xf32, #nova.memory_space<sram>>) permutation = [1, 0, 2]
  return
}

// -----

func.func @negative_transpose_not_a_permutation(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<8x4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.transpose' op permutation is not a permutation of 0..1}}
  nova.transpose ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<8x4xf32, #nova.memory_space<sram>>) permutation = [1, 1]
  return
}

// -----

func.func @negative_transpose_output_shape(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.transpose' op output shape must be 8x4, got 4x8}}
  nova.transpose ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<4x8xf32, #nova.memory_space<sram>>) permutation = [1, 0]
  return
}

// -----

func.func @negative_transpose_element_type(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<8x4xf16, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.transpose' op input and output element types must match, got 'f32' and 'f16'}}
  nova.transpose ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<8x4xf16, #nova.memory_space<sram>>) permutation = [1, 0]
  return
}

// -----

func.func @negative_transpose_input_in_hbm(%a: memref<4x8xf32, #nova.memory_space<hbm>>, %o: memref<8x4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.transpose' op input must live in sram or acc, got hbm}}
  nova.transpose ins(%a : memref<4x8xf32, #nova.memory_space<hbm>>) outs(%o : memref<8x4xf32, #nova.memory_space<sram>>) permutation = [1, 0]
  return
}

// -----

func.func @negative_transpose_output_in_hbm(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<8x4xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.transpose' op output must live in sram, got hbm}}
  nova.transpose ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<8x4xf32, #nova.memory_space<hbm>>) permutation = [1, 0]
  return
}
