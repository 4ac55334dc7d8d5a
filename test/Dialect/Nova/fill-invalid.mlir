// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.fill: one case per rule.

func.func @negative_fill_hbm(%a: memref<4x8xf32, #nova.memory_space<hbm>>) {
  // expected-error @+1 {{'nova.fill' op output must live in sram or acc, got hbm}}
  nova.fill 0.0 outs(%a : memref<4x8xf32, #nova.memory_space<hbm>>)
  return
}
