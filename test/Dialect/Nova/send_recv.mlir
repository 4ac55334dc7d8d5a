// RUN: nova-opt %s | nova-opt | FileCheck %s
// RUN: nova-opt %s -mlir-print-op-generic | nova-opt | FileCheck %s

// Round trip of nova.send and nova.recv through the custom and the generic form.

!hbm = memref<64x128xf32, #nova.memory_space<hbm>>
!sram = memref<64x128xf32, #nova.memory_space<sram>>

// CHECK-LABEL: func.func @pipeline_send_recv
// CHECK: nova.send ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<hbm>>) to 1 channel 0
// CHECK: nova.recv outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>) from 0 channel 7
func.func @pipeline_send_recv(%x: !hbm, %y: !sram) {
  %0 = nova.send ins(%x : !hbm) to 1 channel 0
  %1 = nova.recv outs(%y : !sram) from 0 channel 7
  nova.wait %0, %1
  return
}
