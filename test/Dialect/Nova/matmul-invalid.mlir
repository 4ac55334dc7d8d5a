// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.matmul: one case per rule.

func.func @negative_matmul_rank(%a: memref<2x4x4xf32, #nova.memory_space<sram>>, %b: memref<4x4xf32, #nova.memory_space<sram>>, %c: memref<4x4xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.matmul' op lhs must be 2-D, got rank 3}}
  nova.matmul ins(%a, %b : memref<2x4x4xf32, #nova.memory_space<sram>>, memref<4x4xf32, #nova.memory_space<sram>>) outs(%c : memref<4x4xf32, #nova.memory_space<acc>>)
  return
}

// -----

func.func @negative_matmul_contraction(%a: memref<4x8xf32, #nova.memory_space<sram>>, %b: memref<16x4xf32, #nova.memory_space<sram>>, %c: memref<4x4xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.matmul' op lhs columns (8) must equal rhs rows (16)}}
  nova.matmul ins(%a, %b : memref<4x8xf32, #nova.memory_space<sram>>, memref<16x4xf32, #nova.memory_space<sram>>) outs(%c : memref<4x4xf32, #nova.memory_space<acc>>)
  return
}

// -----

func.func @negative_matmul_acc_shape(%a: memref<4x8xf32, #nova.memory_space<sram>>, %b: memref<8x4xf32, #nova.memory_space<sram>>, %c: memref<4x8xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.matmul' op acc shape must be 4x4, got 4x8}}
  nova.matmul ins(%a, %b : memref<4x8xf32, #nova.memory_space<sram>>, memref<8x4xf32, #nova.memory_space<sram>>) outs(%c : memref<4x8xf32, #nova.memory_space<acc>>)
  return
}

// -----

func.func @negative_matmul_mixed_inputs(%a: memref<4x8xf32, #nova.memory_space<sram>>, %b: memref<8x4xbf16, #nova.memory_space<sram>>, %c: memref<4x4xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.matmul' op lhs and rhs element types must match, got 'f32' and 'bf16'}}
  nova.matmul ins(%a, %b : memref<4x8xf32, #nova.memory_space<sram>>, memref<8x4xbf16, #nova.memory_space<sram>>) outs(%c : memref<4x4xf32, #nova.memory_space<acc>>)
  return
}

// -----

func.func @negative_matmul_acc_bf16(%a: memref<4x8xbf16, #nova.memory_space<sram>>, %b: memref<8x4xbf16, #nova.memory_space<sram>>, %c: memref<4x4xbf16, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.matmul' op acc element type must be f32, got 'bf16'}}
  nova.matmul ins(%a, %b : memref<4x8xbf16, #nova.memory_space<sram>>, memref<8x4xbf16, #nova.memory_space<sram>>) outs(%c : memref<4x4xbf16, #nova.memory_space<acc>>)
  return
}

// -----

func.func @negative_matmul_lhs_in_hbm(%a: memref<4x8xf32, #nova.memory_space<hbm>>, %b: memref<8x4xf32, #nova.memory_space<sram>>, %c: memref<4x4xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.matmul' op lhs must live in sram, got hbm}}
  nova.matmul ins(%a, %b : memref<4x8xf32, #nova.memory_space<hbm>>, memref<8x4xf32, #nova.memory_space<sram>>) outs(%c : memref<4x4xf32, #nova.memory_space<acc>>)
  return
}

// -----

func.func @negative_matmul_rhs_in_acc(%a: memref<4x8xf32, #nova.memory_space<sram>>, %b: memref<8x4xf32, #nova.memory_space<acc>>, %c: memref<4x4xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.matmul' op rhs must live in sram, got acc}}
  nova.matmul ins(%a, %b : memref<4x8xf32, #nova.memory_space<sram>>, memref<8x4xf32, #nova.memory_space<acc>>) outs(%c : memref<4x4xf32, #nova.memory_space<acc>>)
  return
}

// -----

func.func @negative_matmul_acc_in_sram(%a: memref<4x8xf32, #nova.memory_space<sram>>, %b: memref<8x4xf32, #nova.memory_space<sram>>, %c: memref<4x4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.matmul' op acc must live in acc, got sram}}
  nova.matmul ins(%a, %b : memref<4x8xf32, #nova.memory_space<sram>>, memref<8x4xf32, #nova.memory_space<sram>>) outs(%c : memref<4x4xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_matmul_integer(%a: memref<4x8xi32, #nova.memory_space<sram>>, %b: memref<8x4xi32, #nova.memory_space<sram>>, %c: memref<4x4xi32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.matmul' op operand #0 must be statically shaped memref of 32-bit float or bfloat16 type or 16-bit float values}}
  nova.matmul ins(%a, %b : memref<4x8xi32, #nova.memory_space<sram>>, memref<8x4xi32, #nova.memory_space<sram>>) outs(%c : memref<4x4xi32, #nova.memory_space<acc>>)
  return
}
