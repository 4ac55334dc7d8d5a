// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.elementwise: one case per rule.

func.func @negative_elementwise_scalar_on_unary(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op a scalar operand is only allowed on binary kinds, not 'exp'}}
  nova.elementwise <exp> scalar(1.0) ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_unary_two_inputs(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op 'exp' takes 1 input, got 2}}
  nova.elementwise <exp> ins(%a, %a : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_binary_one_input(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op 'add' takes 2 inputs (or 1 and a scalar), got 1}}
  nova.elementwise <add> ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_binary_scalar_two_inputs(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op 'mul' takes 1 input, got 2}}
  nova.elementwise <mul> scalar(2.0) ins(%a, %a : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_select_two_inputs(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op 'select' takes 3 inputs, got 2}}
  nova.elementwise <select> ins(%a, %a : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_rank(%a: memref<8xf32, #nova.memory_space<sram>>, %o: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op input 0 has rank 1 but the output has rank 2}}
  nova.elementwise <exp> ins(%a : memref<8xf32, #nova.memory_space<sram>>) outs(%o : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_broadcast(%a: memref<4x8xf32, #nova.memory_space<sram>>, %b: memref<4x3xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op input 1 of shape 4x3 does not broadcast to the output shape 4x8}}
  nova.elementwise <add> ins(%a, %b : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x3xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_element_type(%a: memref<4x8xi32, #nova.memory_space<sram>>, %o: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op input 0 element type 'i32' differs from the output's 'f32' (only copy converts; float types mix; comparisons may write i1)}}
  nova.elementwise <add> ins(%a, %a : memref<4x8xi32, #nova.memory_space<sram>>, memref<4x8xi32, #nova.memory_space<sram>>) outs(%o : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_input_in_hbm(%a: memref<4x8xf32, #nova.memory_space<hbm>>, %o: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op input 0 must live in sram or acc, got hbm}}
  nova.elementwise <exp> ins(%a : memref<4x8xf32, #nova.memory_space<hbm>>) outs(%o : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_output_in_hbm(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<4x8xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.elementwise' op output must live in sram or acc, got hbm}}
  nova.elementwise <exp> ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<4x8xf32, #nova.memory_space<hbm>>)
  return
}

// -----

func.func @negative_elementwise_unknown_kind(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+2 {{failed to parse Nova_ElementwiseKindAttr parameter 'value'}}
  // expected-error @+1 {{expected ::mlir::nova::ElementwiseKind to be one of: copy, neg, abs, exp, log, sqrt, rsqrt, recip, tanh, erf, sigmoid, relu, floor, ceil, round, trunc, sin, cos, log1p, not, add, sub, mul, div, max, min, pow, cmp_eq, cmp_ne, cmp_lt, cmp_le, cmp_gt, cmp_ge, rem, floordiv, and, or, xor, shl, shr, shru, select}}
  nova.elementwise <gelu> ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

// The scalar has the inputs' kind: an i64 for integer inputs, also when the
// comparison writes i1.
func.func @negative_elementwise_float_scalar_on_int(%a: memref<4x8xi64, #nova.memory_space<sram>>, %m: memref<4x8xi1, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op scalar must be an i64 integer for the 'i64' input, got 1.600000e+01 : f64}}
  nova.elementwise <cmp_lt> scalar(16.0) ins(%a : memref<4x8xi64, #nova.memory_space<sram>>) outs(%m : memref<4x8xi1, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_elementwise_int_scalar_on_float(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise' op scalar must be an f64 float for the 'f32' input, got 2 : i64}}
  nova.elementwise <mul> scalar(2) ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

// nova.elementwise_pair: one case per rule.
func.func @negative_pair_kind(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise_pair' op kinds must be add, sub, mul, div, max or min, got cmp_lt}}
  nova.elementwise_pair <cmp_lt> scalar(1.0) then <add> scalar(1.0) ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_pair_arity(%a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise_pair' op takes 2 inputs, got 1}}
  nova.elementwise_pair <mul> then <add> scalar(1.0) ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_pair_integer(%a: memref<4x8xi32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise_pair' op takes float buffers, got 'i32'}}
  nova.elementwise_pair <mul> scalar(2) then <add> scalar(1) ins(%a : memref<4x8xi32, #nova.memory_space<sram>>) outs(%a : memref<4x8xi32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_pair_three_streams(%a: memref<4x8xf32, #nova.memory_space<sram>>, %r: memref<1x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise_pair' op reads 3 operands at the full rate, at most 2}}
  nova.elementwise_pair <mul> then <add> ins(%a, %r, %a : memref<4x8xf32, #nova.memory_space<sram>>, memref<1x8xf32, #nova.memory_space<sram>>, memref<4x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_pair_main_broadcast(%r: memref<1x8xf32, #nova.memory_space<sram>>, %a: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise_pair' op input 0 must have the output's shape 4x8}}
  nova.elementwise_pair <mul> scalar(2.0) then <add> scalar(1.0) ins(%r : memref<1x8xf32, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_pair_hbm(%a: memref<4x8xf32, #nova.memory_space<sram>>, %h: memref<4x8xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.elementwise_pair' op output}}
  nova.elementwise_pair <mul> scalar(2.0) then <add> scalar(1.0) ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%h : memref<4x8xf32, #nova.memory_space<hbm>>)
  return
}

// -----

// The intermediate is rounded to the inputs' one type.
func.func @negative_pair_input_types(%a: memref<4x8xf32, #nova.memory_space<sram>>, %r: memref<4x1xbf16, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise_pair' op input 1 element type 'bf16' differs from input 0's 'f32'}}
  nova.elementwise_pair <sub> then <add> scalar(1.0) ins(%a, %r : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x1xbf16, #nova.memory_space<sram>>) outs(%a : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

func.func @negative_pair_integer_output(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<4x8xi32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.elementwise_pair' op takes float buffers, got 'i32'}}
  nova.elementwise_pair <mul> scalar(2.0) then <add> scalar(1.0) ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<4x8xi32, #nova.memory_space<sram>>)
  return
}
