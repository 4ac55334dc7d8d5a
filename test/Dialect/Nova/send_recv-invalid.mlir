// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Verifier rules of nova.send and nova.recv: one case per rule.

func.func @negative_send_from_acc(%a: memref<8x4xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.send' op input must live in hbm or sram, got acc}}
  %t = nova.send ins(%a : memref<8x4xf32, #nova.memory_space<acc>>) to 1 channel 0
  return
}

// -----

func.func @negative_recv_into_acc(%a: memref<8x4xf32, #nova.memory_space<acc>>) {
  // expected-error @+1 {{'nova.recv' op output must live in hbm or sram, got acc}}
  %t = nova.recv outs(%a : memref<8x4xf32, #nova.memory_space<acc>>) from 1 channel 0
  return
}
