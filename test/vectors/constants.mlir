// RUN: cd %S && nova-translate --nova-to-binary constants.mlir -o %t && cmp %t constants.nova
// Test vector: memref.global constants placed in HBM (the CONSTANTS section):
// f32, bf16 and i1 initial values, one splat.
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100, timing = {collective_algorithm = "auto", collective_reduce_on_vector = true, dma_run_setup_cycles = 4, dma_setup_cycles = 64, hbm_burst_bytes = 4, matmul_f32_row_cycles = 4, matmul_fill_drain_cycles = -2, matmul_row_cycles = 1, matmul_weight_overlap = true, matmul_weight_row_cycles = 1, nop_cycles = 1, queue_depth = 32, recv_cycles = 1, sequencer_cycles = 1, sram_burst_bytes = 4, vector_elementwise_factor = 1, vector_overhead_cycles = 16, vector_scan_factor = 2, vector_sort_stage_factor = 1, vector_transcendental_factor = 4, vector_transpose_factor = 2}>} {
  memref.global "private" constant @bias : memref<1x8xf32, #nova.memory_space<hbm>> = dense<[[0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 0.0, 0.25]]> {nova.address = 1024 : i64}
  memref.global "private" constant @ones : memref<4xbf16, #nova.memory_space<hbm>> = dense<1.0> {nova.address = 2048 : i64}
  memref.global "private" constant @mask : memref<3xi1, #nova.memory_space<hbm>> = dense<[true, false, true]> {nova.address = 4096 : i64}
  func.func @main(%y: memref<1x8xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "output", nova.name = "y"}) {
    %src = nova_isa.li 1024 on scalar
    %dst = nova_isa.li 0 on scalar
    nova_isa.dma_copy %src : #nova_isa.tile<hbm, f32, [1, 8], [8, 1]>
        -> %dst : #nova_isa.tile<hbm, f32, [1, 8], [8, 1]> queue 0 on dma signal [0]
    nova_isa.sem_wait [0] on scalar
    return
  }
}

// The readable encoding names the target, the program and its instructions.
// RUN: cd %S && nova-translate --nova-to-binary-text constants.mlir | FileCheck constants.mlir
// CHECK: // target {{.*}}, format 1, isa 2
// CHECK: program @
// CHECK: nova_isa.dma_copy
