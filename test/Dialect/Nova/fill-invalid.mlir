// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.fill: one case per rule.

func.func @negative_fill_hbm(%a: memref<4x8xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.fill' op output must live in sram or acc, got hbm}}
  nova.fill 0.0 outs(%a : memref<4x8xf32, #nova.memory_space<hbm>>)
  return
}

// -----

// An integer tile takes its value as an exact i64: an f64 would round every
// value above 2^53.
func.func @negative_fill_float_on_int(%a: memref<4x8xi64, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.fill' op value must be an i64 integer for the 'i64' output, got -7.0460292543863532E+18 : f64}}
  nova.fill -7.0460292543863532E+18 outs(%a : memref<4x8xi64, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_fill_int_on_float(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.fill' op value must be an f64 float for the 'f32' output, got 1 : i64}}
  nova.fill 1 outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_fill_float_on_bool(%a: memref<4x8xi1, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.fill' op value must be an i64 integer for the 'i1' output, got 1.000000e+00 : f64}}
  nova.fill 1.0 outs(%a : memref<4x8xi1, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_fill_typed_literal(%a: memref<4x8xi32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{expected an immediate: a float literal (f64) or an integer (i64)}}
  nova.fill 1 : i32 outs(%a : memref<4x8xi32, #nova.memory_space<sram>>)
  return
}
