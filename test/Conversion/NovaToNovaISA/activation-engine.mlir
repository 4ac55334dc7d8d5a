// RUN: nova-opt %s --convert-nova-to-isa -split-input-file | FileCheck %s
// RUN: nova-opt %s --convert-nova-to-isa -split-input-file | nova-opt -split-input-file | FileCheck %s
// RUN: nova-opt %s --convert-nova-to-isa=activation-engine=false -split-input-file | FileCheck %s --check-prefix=OFF

// Engine placement on a target with an activation engine (docs/isa.md 2.7):
// a transcendental always goes there, ordered against the DMAs by semaphores
// like any engine, and drained before halt.
// CHECK-LABEL: func.func @exp_on_activation
// CHECK: nova_isa.dma_copy {{.*}} queue 0 on dma signal [0]
// CHECK: nova_isa.vunary exp %{{.*}} : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> -> %{{.*}} : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on activation wait [0] signal [[AD:\[[0-9]+\]]]
// CHECK: nova_isa.dma_copy {{.*}} on dma wait [[AD]]
// CHECK: nova_isa.nop on activation signal
// CHECK: nova_isa.sem_wait
// CHECK-NEXT: nova_isa.halt on scalar
// OFF-LABEL: func.func @exp_on_activation
// OFF-NOT: on activation
// OFF: nova_isa.vunary exp {{.*}} on vector
module attributes {nova.target = #nova.target<name = "t-act", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 128, vector_lanes = 128, sram_bytes = 16777216, sram_gbps = 4000, acc_bytes = 2097152, hbm_bytes = 1073741824, hbm_gbps = 820, dma_engines = 4, chips = 1, topology = switch, link_gbps = 450, link_latency_ns = 1000, timing = {vector_overhead_cycles = 16, vector_elementwise_factor = 1, vector_transcendental_factor = 4, activation = {lanes = 128, overhead_cycles = 16, elementwise_factor = 1, transcendental_factor = 1}}>} {
func.func @exp_on_activation(%in: memref<8x16xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64},
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
}

// -----

// Plain single-input elementwise work goes where the two engines' loads so far,
// in program order, end lower (ties stay on vector): each [64, 128] f32 op costs
// 16 + 64 cycles on either engine. add (tensor-tensor) 80 on vector; mul 1 -> A
// (0 + 80 < 80 + 80); mul 2 -> V (160 = 160); mul 3 -> A (160 < 240); the bf16
// conversion -> V (240 = 240); a reduction stays on vector.
// CHECK-LABEL: func.func @balance_plain_elementwise
// CHECK: nova_isa.vbinary add {{.*}} on vector
// CHECK: nova_isa.vscalar mul {{.*}}, 2.000000e+00 -> {{.*}} on activation
// CHECK: nova_isa.vscalar mul {{.*}}, 3.000000e+00 -> {{.*}} on vector
// CHECK: nova_isa.vscalar mul {{.*}}, 4.000000e+00 -> {{.*}} on activation
// CHECK: nova_isa.vcopy {{.*}} -> %{{.*}} : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector
// CHECK: nova_isa.vreduce sum {{.*}} on vector
// OFF-LABEL: func.func @balance_plain_elementwise
// OFF-NOT: on activation
// OFF: nova_isa.halt
module attributes {nova.target = #nova.target<name = "t-act", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 128, vector_lanes = 128, sram_bytes = 16777216, sram_gbps = 4000, acc_bytes = 2097152, hbm_bytes = 1073741824, hbm_gbps = 820, dma_engines = 4, chips = 1, topology = switch, link_gbps = 450, link_latency_ns = 1000, timing = {vector_overhead_cycles = 16, vector_elementwise_factor = 1, vector_transcendental_factor = 4, activation = {lanes = 128, overhead_cycles = 16, elementwise_factor = 1, transcendental_factor = 1}}>} {
func.func @balance_plain_elementwise() {
  %x = memref.alloc() {nova.address = 0 : i64} : memref<64x128xf32, #nova.memory_space<sram>>
  %y = memref.alloc() {nova.address = 32768 : i64} : memref<64x128xf32, #nova.memory_space<sram>>
  %a = memref.alloc() {nova.address = 65536 : i64} : memref<64x128xf32, #nova.memory_space<sram>>
  %b = memref.alloc() {nova.address = 98304 : i64} : memref<64x128xf32, #nova.memory_space<sram>>
  %c = memref.alloc() {nova.address = 131072 : i64} : memref<64x128xf32, #nova.memory_space<sram>>
  %h = memref.alloc() {nova.address = 163840 : i64} : memref<64x128xbf16, #nova.memory_space<sram>>
  %r = memref.alloc() {nova.address = 196608 : i64} : memref<64x1xf32, #nova.memory_space<sram>>
  nova.elementwise <add> ins(%x, %y : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x128xf32, #nova.memory_space<sram>>) outs(%y : memref<64x128xf32, #nova.memory_space<sram>>)
  nova.elementwise <mul> scalar(2.0) ins(%x : memref<64x128xf32, #nova.memory_space<sram>>) outs(%a : memref<64x128xf32, #nova.memory_space<sram>>)
  nova.elementwise <mul> scalar(3.0) ins(%x : memref<64x128xf32, #nova.memory_space<sram>>) outs(%b : memref<64x128xf32, #nova.memory_space<sram>>)
  nova.elementwise <mul> scalar(4.0) ins(%x : memref<64x128xf32, #nova.memory_space<sram>>) outs(%c : memref<64x128xf32, #nova.memory_space<sram>>)
  nova.elementwise <copy> ins(%y : memref<64x128xf32, #nova.memory_space<sram>>) outs(%h : memref<64x128xbf16, #nova.memory_space<sram>>)
  nova.reduce <sum> ins(%y : memref<64x128xf32, #nova.memory_space<sram>>) outs(%r : memref<64x1xf32, #nova.memory_space<sram>>) dim 1
  return
}
}

// -----

// A target without an activation engine: nothing moves.
// CHECK-LABEL: func.func @negative_no_activation_engine
// CHECK-NOT: on activation
// CHECK: nova_isa.vunary tanh {{.*}} on vector
// CHECK: nova_isa.vscalar mul {{.*}} on vector
// CHECK: nova_isa.halt
module attributes {nova.target = #nova.target<name = "t1", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 128, vector_lanes = 128, sram_bytes = 16777216, sram_gbps = 4000, acc_bytes = 2097152, hbm_bytes = 1073741824, hbm_gbps = 820, dma_engines = 4, chips = 1, topology = switch, link_gbps = 450, link_latency_ns = 1000, timing = {vector_overhead_cycles = 16, vector_elementwise_factor = 1, vector_transcendental_factor = 4}>} {
func.func @negative_no_activation_engine() {
  %x = memref.alloc() {nova.address = 0 : i64} : memref<64x128xf32, #nova.memory_space<sram>>
  %a = memref.alloc() {nova.address = 65536 : i64} : memref<64x128xf32, #nova.memory_space<sram>>
  nova.elementwise <tanh> ins(%x : memref<64x128xf32, #nova.memory_space<sram>>) outs(%a : memref<64x128xf32, #nova.memory_space<sram>>)
  nova.elementwise <mul> scalar(2.0) ins(%x : memref<64x128xf32, #nova.memory_space<sram>>) outs(%x : memref<64x128xf32, #nova.memory_space<sram>>)
  return
}
}
