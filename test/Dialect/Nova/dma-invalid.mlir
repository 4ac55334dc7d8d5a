// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.dma_start and nova.wait: one case per rule.

func.func @negative_dma_from_acc(%a: memref<4x4xf32, #nova.memory_space<acc>>, %b: memref<4x4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.dma_start' op source must live in hbm or sram, got acc}}
  %t = nova.dma_start %a, %b : memref<4x4xf32, #nova.memory_space<acc>> -> memref<4x4xf32, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_dma_to_acc(%a: memref<4x4xf32, #nova.memory_space<hbm>>, %b: memref<4x4xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.dma_start' op target must live in hbm or sram, got acc}}
  %t = nova.dma_start %a, %b : memref<4x4xf32, #nova.memory_space<hbm>> -> memref<4x4xf32, #nova.memory_space<acc>>
  return
}

// -----

func.func @negative_dma_no_memory_space(%a: memref<4x4xf32>, %b: memref<4x4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.dma_start' op source must live in hbm or sram, got no nova memory space}}
  %t = nova.dma_start %a, %b : memref<4x4xf32> -> memref<4x4xf32, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_dma_element_types(%a: memref<4x4xf32, #nova.memory_space<hbm>>, %b: memref<4x4xbf16, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.dma_start' op source and target element types must match, got 'f32' and 'bf16'}}
  %t = nova.dma_start %a, %b : memref<4x4xf32, #nova.memory_space<hbm>> -> memref<4x4xbf16, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_dma_shapes(%a: memref<4x4xf32, #nova.memory_space<hbm>>, %b: memref<4x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.dma_start' op source and target shapes must match, got 4x4 and 4x8}}
  %t = nova.dma_start %a, %b : memref<4x4xf32, #nova.memory_space<hbm>> -> memref<4x8xf32, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_dma_peer_to_sram(%a: memref<4x4xf32, #nova.memory_space<hbm>>, %b: memref<4x4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.dma_start' op a dma to a peer chip must write to hbm, got sram}}
  %t = nova.dma_start %a, %b peer 1 : memref<4x4xf32, #nova.memory_space<hbm>> -> memref<4x4xf32, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_dma_dynamic_shape(%a: memref<?x4xf32, #nova.memory_space<hbm>>, %b: memref<4x4xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'nova.dma_start' op operand #0 must be statically shaped memref of any type values}}
  %t = nova.dma_start %a, %b : memref<?x4xf32, #nova.memory_space<hbm>> -> memref<4x4xf32, #nova.memory_space<sram>>
  return
}

// -----

func.func @negative_wait_nothing() {
  // expected-error @+1 {{'nova.wait' op needs at least one token}}
  nova.wait
  return
}
