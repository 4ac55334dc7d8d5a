// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.reduce: one case per rule.

func.func @negative_reduce_dim_out_of_range(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<4x1xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.reduce' op dim 2 is out of range for rank 2}}
  nova.reduce <sum> ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<4x1xf32, #nova.memory_space<sram>>) dim 2
  return
}

// -----

func.func @negative_reduce_dropped_dim(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.reduce' op output shape must be 4x1, got 4}}
  nova.reduce <sum> ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<4xf32, #nova.memory_space<sram>>) dim 1
  return
}

// -----

// Float types mix (a bf16 input reduced into f32); a float and an integer
// do not.
func.func @negative_reduce_element_type(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<4x1xi32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.reduce' op input and output element types must match, got 'f32' and 'i32'}}
  nova.reduce <max> ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<4x1xi32, #nova.memory_space<sram>>) dim 1
  return
}

// -----

func.func @negative_reduce_input_in_hbm(%a: memref<4x8xf32, #nova.memory_space<hbm>>, %o: memref<4x1xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.reduce' op input must live in sram or acc, got hbm}}
  nova.reduce <sum> ins(%a : memref<4x8xf32, #nova.memory_space<hbm>>) outs(%o : memref<4x1xf32, #nova.memory_space<sram>>) dim 1
  return
}

// -----

func.func @negative_reduce_output_in_acc(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<4x1xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.reduce' op output must live in sram, got acc}}
  nova.reduce <sum> ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<4x1xf32, #nova.memory_space<acc>>) dim 1
  return
}

// -----

func.func @negative_reduce_negative_dim(%a: memref<4x8xf32, #nova.memory_space<sram>>, %o: memref<4x1xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.reduce' op attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  nova.reduce <sum> ins(%a : memref<4x8xf32, #nova.memory_space<sram>>) outs(%o : memref<4x1xf32, #nova.memory_space<sram>>) dim -1
  return
}
