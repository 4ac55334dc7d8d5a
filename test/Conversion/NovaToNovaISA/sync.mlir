// RUN: nova-opt %s --convert-nova-to-isa -split-input-file | FileCheck %s
// RUN: nova-opt %s --convert-nova-to-isa -split-input-file | nova-opt -split-input-file | FileCheck %s

// WAR across engines: the DMA that overwrites %s waits for the vector op
// still reading it; two buffers that plan-memory placed at one address are
// one buffer for the hazards.
// CHECK-LABEL: func.func @war_and_aliasing
// CHECK: nova_isa.dma_copy {{.*}} queue 0 on dma signal [[DV:\[[0-9]+\]]]
// CHECK: nova_isa.vunary exp {{.*}} on vector wait [[DV]] signal [[VD:\[[0-9]+\]]]
// CHECK: nova_isa.dma_copy {{.*}} queue 1 on dma wait [[VD]]
// CHECK: nova_isa.halt
func.func @war_and_aliasing(%in: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                            %in2: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 256 : i64}) {
  %s = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %t = memref.alloc() {nova.address = 1024 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %0 = nova.dma_start %in, %s : memref<64xf32, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
  nova.wait %0
  nova.elementwise <exp> ins(%s : memref<64xf32, #nova.memory_space<sram>>) outs(%t : memref<64xf32, #nova.memory_space<sram>>)
  // Same SRAM bytes as %s.
  %r = memref.alloc() {nova.address = 128 : i64} : memref<16xf32, #nova.memory_space<sram>>
  %sub = memref.subview %in2[0] [16] [1] : memref<64xf32, #nova.memory_space<hbm>> to memref<16xf32, strided<[1]>, #nova.memory_space<hbm>>
  %1 = nova.dma_start %sub, %r : memref<16xf32, strided<[1]>, #nova.memory_space<hbm>> -> memref<16xf32, #nova.memory_space<sram>>
  nova.wait %1
  return
}

// -----

// Independent work on two engines needs no semaphore between them.
// CHECK-LABEL: func.func @independent
// CHECK: nova_isa.dma_copy {{.*}} queue 0 on dma{{$}}
// CHECK: nova_isa.vfill {{.*}} on vector{{$}}
func.func @independent(%in: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64}) {
  %s = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %t = memref.alloc() {nova.address = 1024 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %0 = nova.dma_start %in, %s : memref<64xf32, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
  nova.fill 1.0 outs(%t : memref<64xf32, #nova.memory_space<sram>>)
  nova.wait %0
  return
}
