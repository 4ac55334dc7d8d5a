// RUN: nova-opt %s --convert-nova-to-isa -split-input-file | FileCheck %s
// RUN: nova-opt %s --convert-nova-to-isa -split-input-file | nova-opt -split-input-file | FileCheck %s

// A DMA in, a vector op, a DMA out: addresses from nova.address, one
// semaphore per engine pair, drain and halt.
// CHECK-LABEL: func.func @dma_exp_dma
// CHECK-SAME: nova.address = 0 : i64
// CHECK-DAG: %[[A:.*]] = nova_isa.li 0 on scalar
// CHECK-DAG: %[[S:.*]] = nova_isa.li 4096 on scalar
// CHECK: nova_isa.dma_copy %[[A]] : #nova_isa.tile<hbm, f32, [8, 16], [16, 1]> -> %[[S]] : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> queue 0 on dma signal [0]
// CHECK: %[[T:.*]] = nova_isa.li 8192 on scalar
// CHECK: nova_isa.vunary exp %[[S]] : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> -> %[[T]] : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on vector wait [0] signal [1]
// CHECK: %[[O:.*]] = nova_isa.li 512 on scalar
// CHECK: nova_isa.dma_copy %[[T]] : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> -> %[[O]] : #nova_isa.tile<hbm, f32, [8, 16], [16, 1]> queue 1 on dma wait [1] signal [[Q1:\[[0-9]+\]]]
// CHECK: nova_isa.nop on vector signal
// CHECK: nova_isa.nop on dma signal
// CHECK: nova_isa.sem_wait
// CHECK-NEXT: nova_isa.halt on scalar
// CHECK-NEXT: return
func.func @dma_exp_dma(%in: memref<8x16xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                       %out: memref<8x16xf32, #nova.memory_space<hbm>> {nova.address = 512 : i64}) {
  %s = memref.alloc() {nova.address = 4096 : i64} : memref<8x16xf32, #nova.memory_space<sram>>
  %t = memref.alloc() {nova.address = 8192 : i64} : memref<8x16xf32, #nova.memory_space<sram>>
  %0 = nova.dma_start %in, %s : memref<8x16xf32, #nova.memory_space<hbm>> -> memref<8x16xf32, #nova.memory_space<sram>>
  nova.wait %0
  nova.elementwise <exp> ins(%s : memref<8x16xf32, #nova.memory_space<sram>>) outs(%t : memref<8x16xf32, #nova.memory_space<sram>>)
  %1 = nova.dma_start %t, %out : memref<8x16xf32, #nova.memory_space<sram>> -> memref<8x16xf32, #nova.memory_space<hbm>>
  nova.wait %1
  return
}

// -----

// Matmul into acc, drained by the vector engine (matrix -> vector RAW), with
// the fill of acc ordered before the matmul (vector -> matrix WAW).
// CHECK-LABEL: func.func @matmul_fill_drain
// CHECK: nova_isa.vfill 0.000000e+00 -> %{{.*}} : #nova_isa.tile<acc, f32, [16, 32], [32, 1]> on vector signal [[VM:\[[0-9]+\]]]
// CHECK: nova_isa.matmul %{{.*}} : #nova_isa.tile<sram, f32, [16, 64], [64, 1]>, %{{.*}} : #nova_isa.tile<sram, f32, [64, 32], [32, 1]> -> %{{.*}} : #nova_isa.tile<acc, f32, [16, 32], [32, 1]> accumulate on matrix wait [[VM]] signal [[MV:\[[0-9]+\]]]
// CHECK: nova_isa.vcopy %{{.*}} : #nova_isa.tile<acc, f32, [16, 32], [32, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [16, 32], [32, 1]> on vector wait [[MV]]
// CHECK: nova_isa.halt
func.func @matmul_fill_drain() {
  %a = memref.alloc() {nova.address = 0 : i64} : memref<16x64xf32, #nova.memory_space<sram>>
  %b = memref.alloc() {nova.address = 4096 : i64} : memref<64x32xf32, #nova.memory_space<sram>>
  %o = memref.alloc() {nova.address = 16384 : i64} : memref<16x32xf32, #nova.memory_space<sram>>
  %acc = memref.alloc() {nova.address = 0 : i64} : memref<16x32xf32, #nova.memory_space<acc>>
  nova.fill 0.0 outs(%acc : memref<16x32xf32, #nova.memory_space<acc>>)
  nova.matmul ins(%a, %b : memref<16x64xf32, #nova.memory_space<sram>>, memref<64x32xf32, #nova.memory_space<sram>>) outs(%acc : memref<16x32xf32, #nova.memory_space<acc>>) accumulate
  nova.elementwise <copy> ins(%acc : memref<16x32xf32, #nova.memory_space<acc>>) outs(%o : memref<16x32xf32, #nova.memory_space<sram>>)
  return
}

// -----

// Every vector instruction; views fold into the descriptor.
// CHECK-LABEL: func.func @vector_ops
// CHECK: nova_isa.vbinary add %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, %{{.*}} : #nova_isa.tile<sram, f32, [1, 8], [8, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> on vector
// CHECK: nova_isa.vscalar mul %{{.*}}, 5.000000e-01 -> %{{.*}} on vector
// CHECK: nova_isa.vselect %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}} on vector
// CHECK: nova_isa.vreduce max %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [4, 1], [1, 1]> axis 1 on vector
// CHECK: nova_isa.vtranspose %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [8, 4], [4, 1]> perm [1, 0] on vector
// CHECK: %[[SUB:.*]] = nova_isa.li 1040 on scalar
// CHECK: nova_isa.vunary relu %[[SUB]] : #nova_isa.tile<sram, f32, [2, 4], [4, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [2, 4], [8, 1]> on vector
// CHECK-NOT: on vector wait
// CHECK: nova_isa.halt
func.func @vector_ops() {
  %x = memref.alloc() {nova.address = 0 : i64} : memref<4x8xf32, #nova.memory_space<sram>>
  %row = memref.alloc() {nova.address = 256 : i64} : memref<8xf32, #nova.memory_space<sram>>
  %y = memref.alloc() {nova.address = 512 : i64} : memref<4x8xf32, #nova.memory_space<sram>>
  %m = memref.alloc() {nova.address = 768 : i64} : memref<4x1xf32, #nova.memory_space<sram>>
  %t = memref.alloc() {nova.address = 1024 : i64} : memref<8x4xf32, #nova.memory_space<sram>>
  %e = memref.expand_shape %row [[0, 1]] output_shape [1, 8] : memref<8xf32, #nova.memory_space<sram>> into memref<1x8xf32, #nova.memory_space<sram>>
  nova.elementwise <add> ins(%x, %e : memref<4x8xf32, #nova.memory_space<sram>>, memref<1x8xf32, #nova.memory_space<sram>>) outs(%y : memref<4x8xf32, #nova.memory_space<sram>>)
  nova.elementwise <mul> scalar(5.000000e-01) ins(%y : memref<4x8xf32, #nova.memory_space<sram>>) outs(%y : memref<4x8xf32, #nova.memory_space<sram>>)
  nova.elementwise <select> ins(%x, %y, %y : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x8xf32, #nova.memory_space<sram>>, memref<4x8xf32, #nova.memory_space<sram>>) outs(%y : memref<4x8xf32, #nova.memory_space<sram>>)
  nova.reduce <max> ins(%y : memref<4x8xf32, #nova.memory_space<sram>>) outs(%m : memref<4x1xf32, #nova.memory_space<sram>>) dim 1
  nova.transpose ins(%y : memref<4x8xf32, #nova.memory_space<sram>>) outs(%t : memref<8x4xf32, #nova.memory_space<sram>>) permutation = [1, 0]
  %sub = memref.subview %t[1, 0] [2, 4] [1, 1] : memref<8x4xf32, #nova.memory_space<sram>> to memref<2x4xf32, strided<[4, 1], offset: 4>, #nova.memory_space<sram>>
  %ssub = memref.subview %x[0, 0] [2, 4] [1, 1] : memref<4x8xf32, #nova.memory_space<sram>> to memref<2x4xf32, strided<[8, 1]>, #nova.memory_space<sram>>
  nova.elementwise <relu> ins(%sub : memref<2x4xf32, strided<[4, 1], offset: 4>, #nova.memory_space<sram>>) outs(%ssub : memref<2x4xf32, strided<[8, 1]>, #nova.memory_space<sram>>)
  return
}

// -----

// Collectives on the collective engine; the local token needs no wait, the
// barrier's wait blocks the sequencer.
// CHECK-LABEL: func.func @collectives
// CHECK: nova_isa.all_reduce sum %{{.*}} : #nova_isa.tile<hbm, f32, [64], [1]> -> %{{.*}} : #nova_isa.tile<hbm, f32, [64], [1]> groups {{\[\[}}0, 1]] on collective
// CHECK: nova_isa.all_gather {{.*}} dim 0 groups {{\[\[}}0, 1]] on collective
// CHECK: nova_isa.reduce_scatter sum {{.*}} dim 0 groups {{\[\[}}0, 1]] on collective
// CHECK: nova_isa.all_to_all {{.*}} split_dim 0 concat_dim 0 groups {{\[\[}}0, 1]] on collective
// CHECK: %[[P:.*]] = nova_isa.li 1 on scalar
// CHECK: nova_isa.send %{{.*}} : #nova_isa.tile<hbm, f32, [64], [1]> to %[[P]] channel 3 on collective
// CHECK: nova_isa.recv %{{.*}} : #nova_isa.tile<hbm, f32, [64], [1]> from %[[P]] channel 4 on collective
// CHECK: nova_isa.barrier groups {{\[\[}}0, 1]] on collective signal [[B:\[[0-9]+\]]]
// CHECK-NEXT: nova_isa.sem_wait [[B]] on scalar
// CHECK: nova_isa.halt
func.func @collectives(%x: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                       %y: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 256 : i64},
                       %g: memref<128xf32, #nova.memory_space<hbm>> {nova.address = 512 : i64},
                       %h: memref<32xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64}) {
  %0 = nova.all_reduce <sum> ins(%x : memref<64xf32, #nova.memory_space<hbm>>) outs(%y : memref<64xf32, #nova.memory_space<hbm>>) groups [[0, 1]]
  nova.wait %0
  %1 = nova.all_gather ins(%x : memref<64xf32, #nova.memory_space<hbm>>) outs(%g : memref<128xf32, #nova.memory_space<hbm>>) dim 0 groups [[0, 1]]
  %2 = nova.reduce_scatter <sum> ins(%x : memref<64xf32, #nova.memory_space<hbm>>) outs(%h : memref<32xf32, #nova.memory_space<hbm>>) dim 0 groups [[0, 1]]
  %3 = nova.all_to_all ins(%x : memref<64xf32, #nova.memory_space<hbm>>) outs(%y : memref<64xf32, #nova.memory_space<hbm>>) split_dim 0 concat_dim 0 groups [[0, 1]]
  %4 = nova.send ins(%x : memref<64xf32, #nova.memory_space<hbm>>) to 1 channel 3
  %5 = nova.recv outs(%y : memref<64xf32, #nova.memory_space<hbm>>) from 1 channel 4
  %6 = nova.barrier groups [[0, 1]]
  nova.wait %1, %2, %3, %4, %5, %6
  return
}

// -----

// A peer DMA: its wait blocks the sequencer.
// CHECK-LABEL: func.func @peer_dma
// CHECK: %[[P:.*]] = nova_isa.li 3 on scalar
// CHECK: nova_isa.dma_copy {{.*}} queue 0 peer %[[P]] on dma signal [[S:\[[0-9]+\]]]
// CHECK-NEXT: nova_isa.sem_wait [[S]] on scalar
func.func @peer_dma(%x: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64}) {
  %s = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #nova.memory_space<sram>>
  %0 = nova.dma_start %s, %x peer 3 : memref<64xf32, #nova.memory_space<sram>> -> memref<64xf32, #nova.memory_space<hbm>>
  nova.wait %0
  return
}

// -----

// memref.get_global takes the global's address; memref.copy is a DMA.
// CHECK-LABEL: func.func @global_and_copy
// CHECK: %[[G:.*]] = nova_isa.li 8192 on scalar
// CHECK: nova_isa.dma_copy %[[G]] : #nova_isa.tile<hbm, f32, [4], [1]> -> %{{.*}} : #nova_isa.tile<hbm, f32, [4], [1]> queue 0 on dma
memref.global "private" constant @cst : memref<4xf32, #nova.memory_space<hbm>> = dense<1.0> {nova.address = 8192 : i64}
func.func @global_and_copy(%o: memref<4xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64}) {
  %g = memref.get_global @cst : memref<4xf32, #nova.memory_space<hbm>>
  memref.copy %g, %o : memref<4xf32, #nova.memory_space<hbm>> to memref<4xf32, #nova.memory_space<hbm>>
  return
}

// -----

// A broadcasting copy reads its size-1 dimensions with stride 0.
// CHECK-LABEL: func.func @broadcast_copy
// CHECK: nova_isa.vcopy %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [0, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> on vector
func.func @broadcast_copy() {
  %x = memref.alloc() {nova.address = 0 : i64} : memref<1x8xf32, #nova.memory_space<sram>>
  %y = memref.alloc() {nova.address = 64 : i64} : memref<4x8xf32, #nova.memory_space<sram>>
  nova.elementwise <copy> ins(%x : memref<1x8xf32, #nova.memory_space<sram>>) outs(%y : memref<4x8xf32, #nova.memory_space<sram>>)
  return
}

// -----

// Integer and indexed ops: an iota, a check, a fill from a loop register and
// a gather whose DMA queue is tracked as its own engine: the store on the
// next queue waits for the gather's signal.
// CHECK-LABEL: func.func @iota_assert_gather
// CHECK: nova_isa.viota -> %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> axis 1 on vector
// CHECK: nova_isa.vscalar cmp_lt %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]>, 128 -> %{{.*}} : #nova_isa.tile<sram, i1, [4, 8], [8, 1]> on vector
// CHECK: nova_isa.vassert %{{.*}} : #nova_isa.tile<sram, i1, [4, 8], [8, 1]> "in range" on vector
// CHECK: nova_isa.dma_gather %{{.*}} : #nova_isa.tile<hbm, f32, [128, 8], [8, 1]>, %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> queue 0 on dma wait [{{[0-9]+}}] signal {{\[}}[[S:[0-9]+]]]
// CHECK: nova_isa.dma_copy {{.*}} queue 1 on dma wait {{\[}}[[S]]]
func.func @iota_assert_gather(%table: memref<128x8xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                              %out: memref<4x8xf32, #nova.memory_space<hbm>> {nova.address = 8192 : i64}) {
  %pos = memref.alloc() {nova.address = 0 : i64} : memref<4x8xi64, #nova.memory_space<sram>>
  %ok = memref.alloc() {nova.address = 512 : i64} : memref<4x8xi1, #nova.memory_space<sram>>
  %rows = memref.alloc() {nova.address = 1024 : i64} : memref<4x8xf32, #nova.memory_space<sram>>
  nova.iota outs(%pos : memref<4x8xi64, #nova.memory_space<sram>>) dim 1
  nova.elementwise <cmp_lt> scalar(128) ins(%pos : memref<4x8xi64, #nova.memory_space<sram>>) outs(%ok : memref<4x8xi1, #nova.memory_space<sram>>)
  nova.assert ins(%ok : memref<4x8xi1, #nova.memory_space<sram>>) "in range"
  %t = nova.gather %table[%pos] into %rows : memref<128x8xf32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<sram>> -> memref<4x8xf32, #nova.memory_space<sram>>
  nova.wait %t
  %u = nova.dma_start %rows, %out : memref<4x8xf32, #nova.memory_space<sram>> -> memref<4x8xf32, #nova.memory_space<hbm>>
  nova.wait %u
  return
}

// -----

// The accumulating scatter: its destination is a write, so a later read of
// the table (the DMA copy out) waits for it.
// CHECK-LABEL: func.func @scatter_accumulate
// CHECK: nova_isa.dma_copy {{.*}} -> %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> queue {{[0-9]+}} on dma
// CHECK: nova_isa.dma_scatter %{{.*}} : #nova_isa.tile<hbm, f32, [4, 8], [8, 1]>, %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> -> %{{.*}} : #nova_isa.tile<hbm, f32, [16, 8], [8, 1]> queue {{[0-9]+}} accumulate on dma wait [{{[0-9]+}}] signal {{\[}}[[S:[0-9]+]]
// CHECK: nova_isa.dma_copy %{{.*}} : #nova_isa.tile<hbm, f32, [16, 8], [8, 1]> {{.*}} wait {{\[}}[[S]]]
func.func @scatter_accumulate(%rows: memref<4x8xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                              %ids: memref<4x8xi64, #nova.memory_space<hbm>> {nova.address = 128 : i64},
                              %table: memref<16x8xf32, #nova.memory_space<hbm>> {nova.address = 512 : i64},
                              %out: memref<16x8xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64}) {
  %pos = memref.alloc() {nova.address = 0 : i64} : memref<4x8xi64, #nova.memory_space<sram>>
  %d = nova.dma_start %ids, %pos : memref<4x8xi64, #nova.memory_space<hbm>> -> memref<4x8xi64, #nova.memory_space<sram>>
  nova.wait %d
  %t = nova.scatter %rows[%pos] into %table accumulate : memref<4x8xf32, #nova.memory_space<hbm>>, memref<4x8xi64, #nova.memory_space<sram>> -> memref<16x8xf32, #nova.memory_space<hbm>>
  nova.wait %t
  %u = nova.dma_start %table, %out : memref<16x8xf32, #nova.memory_space<hbm>> -> memref<16x8xf32, #nova.memory_space<hbm>>
  nova.wait %u
  return
}

// -----

// Integer immediates pass to vfill / vscalar as the same exact i64; float
// ones stay f64.
// CHECK-LABEL: func.func @exact_immediates
// CHECK: nova_isa.vfill -7046029254386353131 -> %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> on vector
// CHECK: nova_isa.vscalar mul %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]>, 9223372036854775807 -> %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> on vector
// CHECK: nova_isa.vscalar cmp_lt %{{.*}} : #nova_isa.tile<sram, i64, [4, 8], [8, 1]>, -9223372036854775808 -> %{{.*}} : #nova_isa.tile<sram, i1, [4, 8], [8, 1]> on vector
// CHECK: nova_isa.vfill 0xFFF0000000000000 -> %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]> on vector
// CHECK: nova_isa.vscalar cmp_lt %{{.*}} : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, 2.500000e-01 -> %{{.*}} : #nova_isa.tile<sram, i1, [4, 8], [8, 1]> on vector
func.func @exact_immediates() {
  %a = memref.alloc() {nova.address = 0 : i64} : memref<4x8xi64, #nova.memory_space<sram>>
  %m = memref.alloc() {nova.address = 256 : i64} : memref<4x8xi1, #nova.memory_space<sram>>
  %x = memref.alloc() {nova.address = 512 : i64} : memref<4x8xf32, #nova.memory_space<sram>>
  nova.fill -7046029254386353131 outs(%a : memref<4x8xi64, #nova.memory_space<sram>>)
  nova.elementwise <mul> scalar(9223372036854775807) ins(%a : memref<4x8xi64, #nova.memory_space<sram>>) outs(%a : memref<4x8xi64, #nova.memory_space<sram>>)
  nova.elementwise <cmp_lt> scalar(-9223372036854775808) ins(%a : memref<4x8xi64, #nova.memory_space<sram>>) outs(%m : memref<4x8xi1, #nova.memory_space<sram>>)
  nova.fill 0xFFF0000000000000 outs(%x : memref<4x8xf32, #nova.memory_space<sram>>)
  nova.elementwise <cmp_lt> scalar(0.25) ins(%x : memref<4x8xf32, #nova.memory_space<sram>>) outs(%m : memref<4x8xi1, #nova.memory_space<sram>>)
  return
}

// -----

// Rank 5 collapses into the descriptor where row-major order allows: unit
// dimensions drop and contiguous ones merge (a fill alone; a copy and
// same-shape elementwise operands only where every operand merges).
// CHECK-LABEL: func.func @rank5_collapses
// CHECK: nova_isa.vfill 0.000000e+00 -> %{{.*}} : #nova_isa.tile<sram, f32, [8], [1]>
// CHECK: nova_isa.dma_copy %{{.*}} : #nova_isa.tile<hbm, f32, [2, 60], [120, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [2, 60], [60, 1]>
func.func @rank5_collapses(%a: memref<1x1x1x2x4xf32, #nova.memory_space<sram>> {nova.address = 0 : i64},
                           %h: memref<2x1x3x4x5xf32, strided<[120, 60, 20, 5, 1]>, #nova.memory_space<hbm>> {nova.address = 0 : i64},
                           %s: memref<2x1x3x4x5xf32, #nova.memory_space<sram>> {nova.address = 64 : i64}) {
  nova.fill 0.0 outs(%a : memref<1x1x1x2x4xf32, #nova.memory_space<sram>>)
  %t = nova.dma_start %h, %s : memref<2x1x3x4x5xf32, strided<[120, 60, 20, 5, 1]>, #nova.memory_space<hbm>> -> memref<2x1x3x4x5xf32, #nova.memory_space<sram>>
  nova.wait %t
  return
}
