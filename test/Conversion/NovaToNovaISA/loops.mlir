// The queue-0 scheme (every loop DMA on queue 0, also the fallback when
// semaphores run out); loop-dma-queues.mlir has the loops on several queues.
// RUN: nova-opt %s --convert-nova-to-isa=loop-dma-queues=1 -split-input-file | FileCheck %s
// RUN: nova-opt %s --convert-nova-to-isa=loop-dma-queues=1 -split-input-file | nova-opt -split-input-file | FileCheck %s

// A tile loop: IV-dependent HBM views become salu address arithmetic; the
// loop-carried WAR (next iteration's DMA into %s while the vector engine
// still reads it) waits on a carried semaphore that the reading instruction
// itself signals, with a credit before the loop and a drain after it.
// CHECK-LABEL: func.func @tile_loop
// CHECK: nova_isa.nop on vector signal {{\[}}[[VD:[0-9]+]]]
// CHECK-NEXT: nova_isa.loop %[[I:.*]] = 0 to 4 step 1 on scalar {
// CHECK: %[[C:.*]] = nova_isa.li 64 on scalar
// CHECK: %[[O:.*]] = nova_isa.salu mul %[[I]], %[[C]] on scalar
// CHECK: %[[OFF:.*]] = nova_isa.salu mul %[[O]], %{{.*}} on scalar
// CHECK: nova_isa.dma_copy %[[OFF]] : #nova_isa.tile<hbm, f32, [64], [1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [64], [1]> queue 0 on dma wait {{\[}}[[VD]]] signal [[DV:\[[0-9]+\]]]
// CHECK: nova_isa.vunary exp {{.*}} on vector wait [[DV]] signal {{\[}}[[VD]], [[VD2:[0-9]+]]]
// CHECK: %[[OUT:.*]] = nova_isa.salu add %[[OFF]], %{{.*}} on scalar
// CHECK: nova_isa.dma_copy {{.*}} -> %[[OUT]] : #nova_isa.tile<hbm, f32, [64], [1]> queue 0 on dma wait {{\[}}[[VD2]]]{{$}}
// CHECK-NEXT: }
// CHECK-NEXT: nova_isa.nop on dma wait {{\[}}[[VD]]]
// CHECK: nova_isa.halt
func.func @tile_loop(%in: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
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

// A K-chunk loop on the matrix engine after a fill on the vector engine: a
// fence nop before the loop, the vector drain after it waits on a nop right
// after the loop; dynamic bounds are registers.
// CHECK-LABEL: func.func @k_loop
// CHECK: nova_isa.vfill {{.*}} on vector signal [[VM:\[[0-9]+\]]]
// CHECK: nova_isa.nop on matrix wait [[VM]]
// CHECK-NEXT: nova_isa.loop %[[K:.*]] = 0 to 256 step 128 on scalar {
// CHECK: nova_isa.matmul {{.*}} accumulate on matrix{{$}}
// CHECK: }
// CHECK-NEXT: nova_isa.nop on matrix signal [[MV:\[[0-9]+\]]]
// CHECK: nova_isa.vcopy {{.*}} on vector wait [[MV]]
func.func @k_loop() {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %a = memref.alloc() {nova.address = 0 : i64} : memref<16x256xf32, #nova.memory_space<sram>>
  %b = memref.alloc() {nova.address = 16384 : i64} : memref<256x32xf32, #nova.memory_space<sram>>
  %o = memref.alloc() {nova.address = 65536 : i64} : memref<16x32xf32, #nova.memory_space<sram>>
  %acc = memref.alloc() {nova.address = 0 : i64} : memref<16x32xf32, #nova.memory_space<acc>>
  nova.fill 0.0 outs(%acc : memref<16x32xf32, #nova.memory_space<acc>>)
  scf.for %k = %c0 to %c256 step %c128 {
    %ak = memref.subview %a[0, %k] [16, 128] [1, 1] : memref<16x256xf32, #nova.memory_space<sram>> to memref<16x128xf32, strided<[256, 1], offset: ?>, #nova.memory_space<sram>>
    %bk = memref.subview %b[%k, 0] [128, 32] [1, 1] : memref<256x32xf32, #nova.memory_space<sram>> to memref<128x32xf32, strided<[32, 1], offset: ?>, #nova.memory_space<sram>>
    nova.matmul ins(%ak, %bk : memref<16x128xf32, strided<[256, 1], offset: ?>, #nova.memory_space<sram>>, memref<128x32xf32, strided<[32, 1], offset: ?>, #nova.memory_space<sram>>) outs(%acc : memref<16x32xf32, #nova.memory_space<acc>>) accumulate
  }
  nova.elementwise <copy> ins(%acc : memref<16x32xf32, #nova.memory_space<acc>>) outs(%o : memref<16x32xf32, #nova.memory_space<sram>>)
  return
}

// -----

// Double buffering: token iter_args are local tokens (ordered by hazards);
// memref.view at a dynamic byte shift and arith.select lower to salu.
// CHECK-LABEL: func.func @double_buffer
// CHECK: nova_isa.loop
// CHECK: nova_isa.salu rem
// CHECK: nova_isa.salu lt
// CHECK: nova_isa.dma_copy
// CHECK: nova_isa.vunary exp
// CHECK: nova_isa.halt
func.func @double_buffer(%in: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                         %out: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %db = memref.alloc() {nova.address = 0 : i64} : memref<512xi8, #nova.memory_space<sram>>
  %o = memref.alloc() {nova.address = 512 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %src0 = memref.subview %in[0] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1]>, #nova.memory_space<hbm>>
  %buf0 = memref.view %db[%c0][] : memref<512xi8, #nova.memory_space<sram>> to memref<64xf32, #nova.memory_space<sram>>
  %t0 = nova.dma_start %src0, %buf0 : memref<64xf32, strided<[1]>, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
  %last = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %t0) -> (!nova.token) {
    %slot = arith.remui %i, %c2 : index
    %off = arith.muli %slot, %c256 : index
    %offn = arith.subi %c256, %off : index
    %i1 = arith.addi %i, %c1 : index
    %more = arith.cmpi ult, %i1, %c4 : index
    %next = arith.select %more, %i1, %i : index
    %e = arith.muli %next, %c64 : index
    %srcn = memref.subview %in[%e] [64] [1] : memref<256xf32, #nova.memory_space<hbm>> to memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>
    %bufn = memref.view %db[%offn][] : memref<512xi8, #nova.memory_space<sram>> to memref<64xf32, #nova.memory_space<sram>>
    %tn = nova.dma_start %srcn, %bufn : memref<64xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<sram>>
    %buf = memref.view %db[%off][] : memref<512xi8, #nova.memory_space<sram>> to memref<64xf32, #nova.memory_space<sram>>
    nova.wait %t
    nova.elementwise <exp> ins(%buf : memref<64xf32, #nova.memory_space<sram>>) outs(%o : memref<64xf32, #nova.memory_space<sram>>)
    scf.yield %tn : !nova.token
  }
  nova.wait %last
  return
}

// -----

// A chip-dependent HBM view (shard.all_slice's lowering): nova.chip_id is
// the CHIP_ID register, and the offset is scalar arithmetic on it.
// CHECK-LABEL: func.func @chip_slice
// CHECK: %[[ID:.*]] = nova_isa.chip_id on scalar
// CHECK: %[[R:.*]] = nova_isa.salu rem %[[ID]], %{{.*}} on scalar
// CHECK: %[[B:.*]] = nova_isa.salu mul %[[R]], %{{.*}} on scalar
// CHECK: %[[A:.*]] = nova_isa.salu add %{{.*}}, %{{.*}} on scalar
// CHECK: nova_isa.dma_copy %[[A]] : #nova_isa.tile<hbm, f32, [2, 4], [4, 1]> -> %{{.*}} : #nova_isa.tile<hbm, f32, [2, 4], [4, 1]> queue 0 on dma
func.func @chip_slice(%in: memref<8x4xf32, #nova.memory_space<hbm>> {nova.address = 256 : i64},
                      %out: memref<2x4xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64}) {
  %id = nova.chip_id
  %c4 = arith.constant 4 : index
  %c2 = arith.constant 2 : index
  %g = arith.remui %id, %c4 : index
  %o = arith.muli %g, %c2 : index
  %v = memref.subview %in[%o, 0] [2, 4] [1, 1] : memref<8x4xf32, #nova.memory_space<hbm>> to memref<2x4xf32, strided<[4, 1], offset: ?>, #nova.memory_space<hbm>>
  %t = nova.dma_start %v, %out : memref<2x4xf32, strided<[4, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<2x4xf32, #nova.memory_space<hbm>>
  nova.wait %t
  return
}

// -----

// Two accumulators used in turn (a double-buffered tile loop unrolled by
// two): the next iteration's first matmul waits for the drain of its own
// accumulator only (a carried semaphore the first vcopy signals), not for
// the whole previous iteration of the vector engine; the second matmul waits
// on the second vcopy the same way (both edges on one semaphore: its
// signals and waits keep one order per iteration; two credits, two drains).
// CHECK-LABEL: func.func @carried_per_instruction
// CHECK: nova_isa.nop on vector signal {{\[}}[[C:[0-9]+]]]
// CHECK: nova_isa.loop
// CHECK: nova_isa.matmul {{.*}} on matrix wait {{\[}}[[C]]] signal [[MV:\[[0-9]+\]]]{{$}}
// CHECK: nova_isa.vcopy {{.*}} on vector wait [[MV]] signal {{\[}}[[C]]]{{$}}
// CHECK: nova_isa.matmul {{.*}} on matrix wait {{\[}}[[C]]] signal [[MV]]{{$}}
// CHECK: nova_isa.vcopy {{.*}} on vector wait [[MV]] signal {{\[}}[[C]]]{{$}}
// CHECK-NEXT: }
// CHECK-NEXT: nova_isa.nop on matrix wait {{\[}}[[C]]]
// CHECK-NEXT: nova_isa.nop on matrix wait {{\[}}[[C]]]
func.func @carried_per_instruction() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() {nova.address = 0 : i64} : memref<16x128xf32, #nova.memory_space<sram>>
  %b = memref.alloc() {nova.address = 16384 : i64} : memref<128x32xf32, #nova.memory_space<sram>>
  %o0 = memref.alloc() {nova.address = 65536 : i64} : memref<16x32xf32, #nova.memory_space<sram>>
  %o1 = memref.alloc() {nova.address = 131072 : i64} : memref<16x32xf32, #nova.memory_space<sram>>
  %acc0 = memref.alloc() {nova.address = 0 : i64} : memref<16x32xf32, #nova.memory_space<acc>>
  %acc1 = memref.alloc() {nova.address = 4096 : i64} : memref<16x32xf32, #nova.memory_space<acc>>
  scf.for %i = %c0 to %c4 step %c1 {
    nova.matmul ins(%a, %b : memref<16x128xf32, #nova.memory_space<sram>>, memref<128x32xf32, #nova.memory_space<sram>>) outs(%acc0 : memref<16x32xf32, #nova.memory_space<acc>>)
    nova.elementwise <copy> ins(%acc0 : memref<16x32xf32, #nova.memory_space<acc>>) outs(%o0 : memref<16x32xf32, #nova.memory_space<sram>>)
    nova.matmul ins(%a, %b : memref<16x128xf32, #nova.memory_space<sram>>, memref<128x32xf32, #nova.memory_space<sram>>) outs(%acc1 : memref<16x32xf32, #nova.memory_space<acc>>)
    nova.elementwise <copy> ins(%acc1 : memref<16x32xf32, #nova.memory_space<acc>>) outs(%o1 : memref<16x32xf32, #nova.memory_space<sram>>)
  }
  return
}
