// RUN: nova-opt %s --convert-nova-to-isa -split-input-file | FileCheck %s
// RUN: nova-opt %s --convert-nova-to-isa -split-input-file | nova-opt -split-input-file | FileCheck %s
// RUN: nova-opt %s "--convert-nova-to-isa=loop-dma-queues=4" -split-input-file | FileCheck %s --check-prefix=SPLIT4
// RUN: nova-opt %s "--convert-nova-to-isa=loop-dma-queues=4 loop-dma-policy=round-robin" -split-input-file | FileCheck %s --check-prefix=RR4
// RUN: nova-opt %s --convert-nova-to-isa=loop-dma-queues=1 -split-input-file | FileCheck %s --check-prefix=ONE

// Loops on several DMA queues (loop-dma-queues, loop-dma-policy): every queue
// a loop uses is synchronised like any other engine, through `nop queue q on
// dma` (entry fences, credits and drains of carried semaphores, the nop after
// the loop, the end-of-function drain).

// A tile loop, split policy (the default, two queues): the load stays on
// queue 0, the store goes to queue 1. The next iteration's load waits for
// the vector read of its buffer (carried semaphore VD, credited before the
// loop by a vector nop); the vector write of %t waits for the previous
// store's read of it (carried DV1, credited by `nop queue 1`); after the loop
// each carried semaphore is drained, and queue 1 signals the sequencer.
// CHECK-LABEL: func.func @tile_loop_split
// CHECK: nova_isa.nop on vector signal {{\[}}[[VD:[0-9]+]]]
// CHECK-NEXT: nova_isa.nop queue 1 on dma signal {{\[}}[[Q1V:[0-9]+]]]
// CHECK-NEXT: nova_isa.loop
// CHECK: nova_isa.dma_copy {{.*}} -> %{{.*}} : #nova_isa.tile<sram, f32, [64], [1]> queue 0 on dma wait {{\[}}[[VD]]] signal {{\[}}[[DV:[0-9]+]]]
// CHECK: nova_isa.vunary exp {{.*}} on vector wait {{\[}}[[DV]], [[Q1V]]] signal {{\[}}[[VD]], [[VQ1:[0-9]+]]]
// CHECK: nova_isa.dma_copy {{.*}} -> %{{.*}} : #nova_isa.tile<hbm, f32, [64], [1]> queue 1 on dma wait {{\[}}[[VQ1]]] signal {{\[}}[[Q1V]]]
// CHECK-NEXT: }
// CHECK-NEXT: nova_isa.nop queue 1 on dma signal {{\[}}[[Q1S:[0-9]+]]]
// CHECK-NEXT: nova_isa.nop on vector wait {{\[}}[[Q1V]]]
// CHECK-NEXT: nova_isa.nop on dma wait {{\[}}[[VD]]]
// CHECK: nova_isa.sem_wait [{{.*}}[[Q1S]]] on scalar
// CHECK-NEXT: nova_isa.halt
// ONE-LABEL: func.func @tile_loop_split
// ONE-NOT: queue 1
// ONE: nova_isa.halt
func.func @tile_loop_split(%in: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                           %out: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %o = arith.muli %i, %c64 : index
    %src = memref.subview %in[%o] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    %dst = memref.subview %out[%o] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    %s = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
    %t = memref.alloc() {nova.address = 256 : i64} : memref<64xf32, #nova.memory_space<sram>>
    %0 = nova.dma_start %src, %s : memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
    nova.wait %0
    nova.elementwise <exp> ins(%s : memref<64xf32, #nova.memory_space<sram>>) outs(%t : memref<64xf32, #nova.memory_space<sram>>)
    %1 = nova.dma_start %t, %dst : memref<64xf32, #nova.memory_space<sram>> -> memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    nova.wait %1
  }
  return
}

// -----

// Nested loops: the inner loop's queue-1 stores are owned by a `nop queue 1`
// at the end of the outer body (fenced at its top), and the reload of %out
// after the loop, on queue 0, waits for the nop on queue 1 after it (and for
// the vector's last read of %s).
// CHECK-LABEL: func.func @nested_loop_then_reload
// CHECK: nova_isa.loop
// CHECK: nova_isa.nop queue 1 on dma wait
// CHECK: nova_isa.loop
// CHECK: queue 0 on dma
// CHECK: queue 1 on dma
// CHECK: }
// CHECK: nova_isa.nop queue 1 on dma signal
// CHECK: }
// CHECK: nova_isa.nop queue 1 on dma signal {{\[}}[[RAW:[0-9]+]], [[Q1S:[0-9]+]]]
// CHECK: nova_isa.dma_copy {{.*}} : #nova_isa.tile<hbm, f32, [64], [1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [64], [1]> queue 0 on dma wait {{\[.*}}[[RAW]]]{{$}}
// CHECK: nova_isa.sem_wait [{{.*}}[[Q1S]]] on scalar
func.func @nested_loop_then_reload(%in: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                                   %out: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %s = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %t = memref.alloc() {nova.address = 256 : i64} : memref<64xf32, #nova.memory_space<sram>>
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c2 step %c1 {
      %oi = arith.muli %i, %c128 : index
      %oj = arith.muli %j, %c64 : index
      %o = arith.addi %oi, %oj : index
      %src = memref.subview %in[%o] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
      %dst = memref.subview %out[%o] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
      %0 = nova.dma_start %src, %s : memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
      nova.wait %0
      nova.elementwise <exp> ins(%s : memref<64xf32, #nova.memory_space<sram>>) outs(%t : memref<64xf32, #nova.memory_space<sram>>)
      %1 = nova.dma_start %t, %dst : memref<64xf32, #nova.memory_space<sram>> -> memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
      nova.wait %1
    }
  }
  %head = memref.subview %out[0] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1]>, #nova.memory_space<hbm>>
  %2 = nova.dma_start %head, %s : memref<64xf32, strided<[1]>, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
  nova.wait %2
  return
}

// -----

// Two loads and two stores on four queues. Split: loads on queues 0 and 1,
// stores on 2 and 3. Round robin: queues 0..3 in body order (load, store,
// load, store). The default (two queues) puts both stores on queue 1.
// CHECK-LABEL: func.func @two_loads_two_stores
// CHECK: queue 0 on dma
// CHECK: queue 1 on dma
// CHECK: queue 0 on dma
// CHECK: queue 1 on dma
// SPLIT4-LABEL: func.func @two_loads_two_stores
// SPLIT4: nova_isa.loop
// SPLIT4: tile<sram, f32, [64], [1]> queue 0 on dma
// SPLIT4: tile<hbm, f32, [64], [1]> queue 2 on dma
// SPLIT4: tile<sram, f32, [64], [1]> queue 1 on dma
// SPLIT4: tile<hbm, f32, [64], [1]> queue 3 on dma
// SPLIT4: }
// SPLIT4-DAG: nova_isa.nop queue 3 on dma signal {{\[}}[[S3:[0-9]+]]]
// SPLIT4-DAG: nova_isa.nop queue 2 on dma signal {{\[}}[[S2:[0-9]+]]]
// SPLIT4-DAG: nova_isa.nop queue 1 on dma signal {{\[}}[[S1:[0-9]+]]]
// SPLIT4: nova_isa.sem_wait {{.*}}[[S1]], [[S2]], [[S3]]] on scalar
// RR4-LABEL: func.func @two_loads_two_stores
// RR4: nova_isa.loop
// RR4: tile<sram, f32, [64], [1]> queue 0 on dma
// RR4: tile<hbm, f32, [64], [1]> queue 1 on dma
// RR4: tile<sram, f32, [64], [1]> queue 2 on dma
// RR4: tile<hbm, f32, [64], [1]> queue 3 on dma
// RR4: }
// ONE-LABEL: func.func @two_loads_two_stores
// ONE-NOT: queue 1
// ONE: nova_isa.halt
func.func @two_loads_two_stores(%a: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                                %b: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64},
                                %y: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 2048 : i64},
                                %z: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 3072 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %sa = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %sb = memref.alloc() {nova.address = 256 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %ty = memref.alloc() {nova.address = 512 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %tz = memref.alloc() {nova.address = 768 : i64} : memref<64xf32, #nova.memory_space<sram>>
  scf.for %i = %c0 to %c4 step %c1 {
    %o = arith.muli %i, %c64 : index
    %va = memref.subview %a[%o] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    %vb = memref.subview %b[%o] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    %vy = memref.subview %y[%o] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    %vz = memref.subview %z[%o] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    %0 = nova.dma_start %va, %sa : memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
    nova.wait %0
    nova.elementwise <exp> ins(%sa : memref<64xf32, #nova.memory_space<sram>>) outs(%ty : memref<64xf32, #nova.memory_space<sram>>)
    %1 = nova.dma_start %ty, %vy : memref<64xf32, #nova.memory_space<sram>> -> memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    %2 = nova.dma_start %vb, %sb : memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
    nova.wait %2
    nova.elementwise <exp> ins(%sb : memref<64xf32, #nova.memory_space<sram>>) outs(%tz : memref<64xf32, #nova.memory_space<sram>>)
    %3 = nova.dma_start %tz, %vz : memref<64xf32, #nova.memory_space<sram>> -> memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    nova.wait %1
    nova.wait %3
  }
  return
}

// -----

// After a loop, the nops that own the body's accesses are not ordered among
// themselves: the load's write of %s (queue 0) must not hide the vector's
// read of %s in the last iteration, so the straight-line DMA into %s after
// the loop (queue 1) waits for both (it used to wait for the queue-0 nop
// only, and could overwrite %s while the last exp still read it).
// CHECK-LABEL: func.func @exit_read_not_hidden_by_load
// CHECK: nova_isa.loop
// CHECK: nova_isa.vunary exp
// CHECK-NEXT: }
// CHECK-NEXT: nova_isa.nop on vector signal {{\[}}[[VX:[0-9]+]]]
// CHECK-NEXT: nova_isa.nop on dma signal {{\[}}[[DX:[0-9]+]]]
// CHECK: nova_isa.dma_copy {{.*}} queue 1 on dma wait {{\[}}[[DX]], [[VX]]]
// ONE-LABEL: func.func @exit_read_not_hidden_by_load
// ONE: nova_isa.loop
// ONE: nova_isa.vunary exp
// ONE-NEXT: }
// ONE-NEXT: nova_isa.nop on vector signal {{\[}}[[VX:[0-9]+]]]
// ONE-NEXT: nova_isa.nop on dma signal {{\[}}[[DX:[0-9]+]]]
// ONE: nova_isa.dma_copy {{.*}} queue 1 on dma wait {{\[}}[[DX]], [[VX]]]
func.func @exit_read_not_hidden_by_load(%in: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                                        %out: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64},
                                        %other: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 2048 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %s = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %t = memref.alloc() {nova.address = 256 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %u = memref.alloc() {nova.address = 512 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %pre = nova.dma_start %other, %u : memref<64xf32, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
  nova.wait %pre
  scf.for %i = %c0 to %c4 step %c1 {
    %o = arith.muli %i, %c64 : index
    %src = memref.subview %in[%o] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    %0 = nova.dma_start %src, %s : memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
    nova.wait %0
    nova.elementwise <exp> ins(%s : memref<64xf32, #nova.memory_space<sram>>) outs(%t : memref<64xf32, #nova.memory_space<sram>>)
  }
  %1 = nova.dma_start %other, %s : memref<64xf32, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
  nova.wait %1
  return
}
