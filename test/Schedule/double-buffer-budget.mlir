// RUN: nova-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(nova-double-buffer))' | FileCheck %s

// nova-double-buffer with a target on the module: second slots are given only
// while the loop's on-chip footprint fits the target's sram and acc (tiny:
// 65536 bytes of sram, 8192 of acc).

// Within budget: an input tile (8 KiB) and an output tile (8 KiB) get two
// slots each, 32 KiB in all.
// CHECK-LABEL: func.func @within_budget
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<16384xi8, #nova.memory_space<sram>>
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<16384xi8, #nova.memory_space<sram>>
// CHECK: scf.for {{.*}} iter_args
// CHECK-NOT: memref.alloc()
// CHECK: scf.yield
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 65536, sram_gbps = 400, acc_bytes = 8192, hbm_bytes = 1048576, hbm_gbps = 100, dma_engines = 2, chips = 1, topology = switch, link_gbps = 50, link_latency_ns = 500>} {
func.func @within_budget(%a: memref<128x64xf32, #hbm>, %out: memref<128x64xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  scf.for %i = %c0 to %c128 step %c32 {
    %src = memref.subview %a[%i, 0] [32, 64] [1, 1] : memref<128x64xf32, #hbm> to memref<32x64xf32, strided<[64, 1], offset: ?>, #hbm>
    %buf = memref.alloc() : memref<32x64xf32, #sram>
    %t = nova.dma_start %src, %buf : memref<32x64xf32, strided<[64, 1], offset: ?>, #hbm> -> memref<32x64xf32, #sram>
    nova.wait %t
    %res = memref.alloc() : memref<32x64xf32, #sram>
    nova.elementwise <exp> ins(%buf : memref<32x64xf32, #sram>) outs(%res : memref<32x64xf32, #sram>)
    %dst = memref.subview %out[%i, 0] [32, 64] [1, 1] : memref<128x64xf32, #hbm> to memref<32x64xf32, strided<[64, 1], offset: ?>, #hbm>
    %t2 = nova.dma_start %res, %dst : memref<32x64xf32, #sram> -> memref<32x64xf32, strided<[64, 1], offset: ?>, #hbm>
    nova.wait %t2
  }
  return
}
}

// -----

// Two slots of the 32 KiB input tile next to the 32 KiB output tile need
// 96 KiB of sram: the loop stays single-buffered (its allocs, DMA and wait
// untouched, no token carried).
// CHECK-LABEL: func.func @negative_prefetch_over_sram
// CHECK: scf.for {{.*}} step %{{[a-z0-9_]+}} {
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<128x64xf32, #nova.memory_space<sram>>
// CHECK: %[[T:.*]] = nova.dma_start %{{.*}}, %[[BUF]]
// CHECK: nova.wait %[[T]]
// CHECK: memref.alloc() : memref<128x64xf32, #nova.memory_space<sram>>
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 65536, sram_gbps = 400, acc_bytes = 8192, hbm_bytes = 1048576, hbm_gbps = 100, dma_engines = 2, chips = 1, topology = switch, link_gbps = 50, link_latency_ns = 500>} {
func.func @negative_prefetch_over_sram(%a: memref<512x64xf32, #hbm>, %out: memref<512x64xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c512 step %c128 {
    %src = memref.subview %a[%i, 0] [128, 64] [1, 1] : memref<512x64xf32, #hbm> to memref<128x64xf32, strided<[64, 1], offset: ?>, #hbm>
    %buf = memref.alloc() : memref<128x64xf32, #sram>
    %t = nova.dma_start %src, %buf : memref<128x64xf32, strided<[64, 1], offset: ?>, #hbm> -> memref<128x64xf32, #sram>
    nova.wait %t
    %res = memref.alloc() : memref<128x64xf32, #sram>
    nova.elementwise <exp> ins(%buf : memref<128x64xf32, #sram>) outs(%res : memref<128x64xf32, #sram>)
    %dst = memref.subview %out[%i, 0] [128, 64] [1, 1] : memref<512x64xf32, #hbm> to memref<128x64xf32, strided<[64, 1], offset: ?>, #hbm>
    %t2 = nova.dma_start %res, %dst : memref<128x64xf32, #sram> -> memref<128x64xf32, strided<[64, 1], offset: ?>, #hbm>
    nova.wait %t2
  }
  return
}
}

// -----

// A buffer live across the loop (filled before it, stored after it) counts
// too: 48 KiB of it leave room for the loop's 16 KiB of single tiles but not
// for a second input slot.
// CHECK-LABEL: func.func @negative_live_across_fills_sram
// CHECK: memref.alloc() : memref<12288xf32, #nova.memory_space<sram>>
// CHECK: scf.for {{.*}} step %{{[a-z0-9_]+}} {
// CHECK: memref.alloc() : memref<32x64xf32, #nova.memory_space<sram>>
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 65536, sram_gbps = 400, acc_bytes = 8192, hbm_bytes = 1048576, hbm_gbps = 100, dma_engines = 2, chips = 1, topology = switch, link_gbps = 50, link_latency_ns = 500>} {
func.func @negative_live_across_fills_sram(%a: memref<128x64xf32, #hbm>, %out: memref<128x64xf32, #hbm>, %keep: memref<12288xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %big = memref.alloc() : memref<12288xf32, #sram>
  nova.fill 0.0 outs(%big : memref<12288xf32, #sram>)
  scf.for %i = %c0 to %c128 step %c32 {
    %src = memref.subview %a[%i, 0] [32, 64] [1, 1] : memref<128x64xf32, #hbm> to memref<32x64xf32, strided<[64, 1], offset: ?>, #hbm>
    %buf = memref.alloc() : memref<32x64xf32, #sram>
    %t = nova.dma_start %src, %buf : memref<32x64xf32, strided<[64, 1], offset: ?>, #hbm> -> memref<32x64xf32, #sram>
    nova.wait %t
    %res = memref.alloc() : memref<32x64xf32, #sram>
    nova.elementwise <exp> ins(%buf : memref<32x64xf32, #sram>) outs(%res : memref<32x64xf32, #sram>)
    %dst = memref.subview %out[%i, 0] [32, 64] [1, 1] : memref<128x64xf32, #hbm> to memref<32x64xf32, strided<[64, 1], offset: ?>, #hbm>
    %t2 = nova.dma_start %res, %dst : memref<32x64xf32, #sram> -> memref<32x64xf32, strided<[64, 1], offset: ?>, #hbm>
    nova.wait %t2
  }
  %t3 = nova.dma_start %big, %keep : memref<12288xf32, #sram> -> memref<12288xf32, #hbm>
  nova.wait %t3
  return
}
}

// -----

// The accumulator tile is all of the target's acc: it keeps one slot, while
// the weight strip (256 bytes) and the output tile (8 KiB) in sram get two.
// CHECK-LABEL: func.func @acc_local_keeps_one_slot
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<512xi8, #nova.memory_space<sram>>
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<16384xi8, #nova.memory_space<sram>>
// CHECK-NOT: memref<16384xi8, #nova.memory_space<acc>>
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.alloc() : memref<256x8xf32, #nova.memory_space<acc>>
// CHECK: nova.matmul
// CHECK: scf.yield
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 65536, sram_gbps = 400, acc_bytes = 8192, hbm_bytes = 1048576, hbm_gbps = 100, dma_engines = 2, chips = 1, topology = switch, link_gbps = 50, link_latency_ns = 500>} {
func.func @acc_local_keeps_one_slot(%x: memref<256x8xf32, #sram>, %w: memref<8x32xf32, #hbm>, %out: memref<256x32xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  scf.for %n = %c0 to %c32 step %c8 {
    %sw = memref.subview %w[0, %n] [8, 8] [1, 1] : memref<8x32xf32, #hbm> to memref<8x8xf32, strided<[32, 1], offset: ?>, #hbm>
    %lw = memref.alloc() : memref<8x8xf32, #sram>
    %tw = nova.dma_start %sw, %lw : memref<8x8xf32, strided<[32, 1], offset: ?>, #hbm> -> memref<8x8xf32, #sram>
    nova.wait %tw
    %acc = memref.alloc() : memref<256x8xf32, #acc>
    nova.matmul ins(%x, %lw : memref<256x8xf32, #sram>, memref<8x8xf32, #sram>) outs(%acc : memref<256x8xf32, #acc>)
    %o = memref.alloc() : memref<256x8xf32, #sram>
    nova.elementwise <copy> ins(%acc : memref<256x8xf32, #acc>) outs(%o : memref<256x8xf32, #sram>)
    %so = memref.subview %out[0, %n] [256, 8] [1, 1] : memref<256x32xf32, #hbm> to memref<256x8xf32, strided<[32, 1], offset: ?>, #hbm>
    %to = nova.dma_start %o, %so : memref<256x8xf32, #sram> -> memref<256x8xf32, strided<[32, 1], offset: ?>, #hbm>
    nova.wait %to
  }
  return
}
}
