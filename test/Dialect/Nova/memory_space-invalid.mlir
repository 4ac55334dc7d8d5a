// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of #nova.memory_space: one case per rule.

// expected-error @+2 {{failed to parse Nova_MemorySpaceAttr parameter 'value'}}
// expected-error @+1 {{expected ::mlir::nova::MemorySpace to be one of: hbm, sram, acc}}
func.func @negative_memory_space_unknown(%a: memref<4xf32, #nova.memory_space<l2>>) {
  return
}
