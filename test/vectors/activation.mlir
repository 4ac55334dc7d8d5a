// RUN: cd %S && nova-translate --nova-to-binary activation.mlir -o %t && cmp %t activation.nova
// Test vector: the activation engine (ISA version 3, docs/isa.md 2.7) on the tiny
// target with an activation block: y = exp(x) on activation while z = x * 0.5 runs
// on vector, each ordered after the load and before its store by semaphores.
module attributes {nova.target = #nova.target<name = "tiny-act", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 1, topology = switch, link_gbps = 10, link_latency_ns = 100, timing = {activation = {elementwise_factor = 1, lanes = 8, overhead_cycles = 10, transcendental_factor = 2}, collective_algorithm = "auto", collective_reduce_on_vector = true, dma_run_setup_cycles = 4, dma_setup_cycles = 64, hbm_burst_bytes = 4, matmul_f32_row_cycles = 4, matmul_fill_drain_cycles = -2, matmul_row_cycles = 1, matmul_weight_overlap = true, matmul_weight_row_cycles = 1, nop_cycles = 1, queue_depth = 32, recv_cycles = 1, sequencer_cycles = 1, sram_burst_bytes = 4, vector_elementwise_factor = 1, vector_overhead_cycles = 16, vector_scan_factor = 2, vector_sort_stage_factor = 1, vector_transcendental_factor = 4, vector_transpose_factor = 2}>} {
  func.func @main(%x: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input", nova.name = "x"},
                  %y: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 256 : i64, nova.role = "output", nova.name = "y"},
                  %z: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 512 : i64, nova.role = "output", nova.name = "z"}) {
    %hx = nova_isa.li 0 on scalar
    %hy = nova_isa.li 256 on scalar
    %hz = nova_isa.li 512 on scalar
    %sx = nova_isa.li 0 on scalar
    %sy = nova_isa.li 256 on scalar
    %sz = nova_isa.li 512 on scalar
    nova_isa.dma_copy %hx : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]>
        -> %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> queue 0 on dma signal [0, 1]
    nova_isa.vunary exp %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>
        -> %sy : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> on activation wait [0] signal [2]
    nova_isa.vscalar mul %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>, 5.000000e-01
        -> %sz : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> on vector wait [1] signal [3]
    nova_isa.dma_copy %sy : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>
        -> %hy : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]> queue 0 on dma wait [2] signal [4]
    nova_isa.dma_copy %sz : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>
        -> %hz : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]> queue 1 on dma wait [3] signal [5]
    nova_isa.sem_wait [4, 5] on scalar
    return
  }
}

// The readable encoding: version 3, engine byte 5 (VUNARY 0x40 on 05, kind exp 03),
// VSCALAR 0x42 on vector (01).
// RUN: cd %S && nova-translate --nova-to-binary-text activation.mlir | FileCheck activation.mlir
// CHECK: // target tiny-act, 1 chips, format 1, isa 3
// CHECK: 7: 400503{{.*}} nova_isa.vunary
// CHECK: 8: 420122{{.*}} nova_isa.vscalar
