// RUN: cd %S && nova-translate --nova-to-binary queued_nop.mlir -o %t && cmp %t queued_nop.nova
// Test vector: ISA version 4, a nop on dma queue 1 (docs/isa.md 3.2, 4). The
// output of convert-nova-to-isa on a tile loop y = exp(x) (4 tiles of 64) on the
// tiny target: loads on queue 0, stores on queue 1, whose carried semaphore is
// credited by `nop queue 1 on dma` before the loop, and queue 1 signals the
// sequencer from a nop after it.
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 1, topology = switch, link_gbps = 10, link_latency_ns = 100, timing = {collective_algorithm = "auto", collective_reduce_on_vector = true, dma_run_setup_cycles = 4 : i64, dma_setup_cycles = 64 : i64, hbm_burst_bytes = 4 : i64, matmul_f32_row_cycles = 4 : i64, matmul_fill_drain_cycles = -2 : i64, matmul_row_cycles = 1 : i64, matmul_weight_overlap = true, matmul_weight_row_cycles = 1 : i64, nop_cycles = 1 : i64, queue_depth = 32 : i64, recv_cycles = 1 : i64, sequencer_cycles = 1 : i64, sram_burst_bytes = 4 : i64, vector_elementwise_factor = 1 : i64, vector_overhead_cycles = 16 : i64, vector_scan_factor = 2 : i64, vector_sort_stage_factor = 1 : i64, vector_transcendental_factor = 4 : i64, vector_transpose_factor = 2 : i64}>} {
  func.func @main(%arg0: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.name = "x", nova.role = "input"}, %arg1: memref<256xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64, nova.name = "y", nova.role = "output"}) {
    nova_isa.nop on vector signal [0]
    nova_isa.nop queue 1 on dma signal [2]
    nova_isa.loop %arg2 = 0 to 4 step 1 on scalar {
      %0 = nova_isa.li 64 on scalar
      %1 = nova_isa.salu mul %arg2, %0 on scalar
      %2 = nova_isa.li 4 on scalar
      %3 = nova_isa.salu mul %1, %2 on scalar
      %4 = nova_isa.li 0 on scalar
      nova_isa.dma_copy %3 : #nova_isa.tile<hbm, f32, [64], [1]> -> %4 : #nova_isa.tile<sram, f32, [64], [1]> queue 0 on dma wait [0] signal [1]
      %5 = nova_isa.li 256 on scalar
      nova_isa.vunary exp %4 : #nova_isa.tile<sram, f32, [64], [1]> -> %5 : #nova_isa.tile<sram, f32, [64], [1]> on vector wait [1, 2] signal [0, 3]
      %6 = nova_isa.li 1024 on scalar
      %7 = nova_isa.salu add %3, %6 on scalar
      nova_isa.dma_copy %5 : #nova_isa.tile<sram, f32, [64], [1]> -> %7 : #nova_isa.tile<hbm, f32, [64], [1]> queue 1 on dma wait [3] signal [2]
    }
    nova_isa.nop queue 1 on dma signal [6]
    nova_isa.nop on vector wait [2]
    nova_isa.nop on dma wait [0]
    nova_isa.nop on vector signal [4]
    nova_isa.nop on dma signal [5]
    nova_isa.sem_wait [4, 5, 6] on scalar
    nova_isa.halt on scalar
    return
  }
}


// The readable encoding: version 4, and the nop on dma (engine 03) carries
// queue 1 in byte 4.
// RUN: cd %S && nova-translate --nova-to-binary-text queued_nop.mlir | FileCheck queued_nop.mlir
// CHECK: // target tiny, 1 chips, format 1, isa 4
// CHECK: 1: 0003000001{{.*}} nova_isa.nop
