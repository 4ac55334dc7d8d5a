// RUN: nova-opt %s "--convert-nova-to-isa=semaphores=6" | FileCheck %s
// RUN: nova-opt %s "--convert-nova-to-isa=semaphores=6" --mlir-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// RUN: not nova-opt %s "--convert-nova-to-isa=semaphores=4" 2>&1 | FileCheck %s --check-prefix=OUT
// RUN: nova-opt %s "--convert-nova-to-isa=semaphores=7" | FileCheck %s --check-prefix=ROOM
// RUN: nova-opt %s "--convert-nova-to-isa=semaphores=7" --mlir-pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=ROOMSTATS

// Two loop queues need 7 semaphores here, queue 0 alone 5: with 6 (a stand-in
// for the ISA's 64 running out in a large function) the function is lowered
// again with its loops on queue 0 alone, a slower program but never a failure.
// CHECK-LABEL: func.func @tile_loop_falls_back
// CHECK-NOT: queue 1
// CHECK: nova_isa.halt
// STATS: 1 loop-queue-fallbacks
// STATS: 5 semaphores
// With 4, even queue 0 alone does not fit: a clear error.
// OUT: error: needs more than 4 semaphores (lower dma-queues)
// ROOM-LABEL: func.func @tile_loop_falls_back
// ROOM: queue 1 on dma
// ROOMSTATS: 0 loop-queue-fallbacks
// ROOMSTATS: 7 semaphores
func.func @tile_loop_falls_back(%in: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
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
