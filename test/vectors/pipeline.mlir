// RUN: cd %S && nova-translate --nova-to-binary pipeline.mlir -o %t && cmp %t pipeline.nova
// Test vector: two pipeline stages, one program per chip (nova.chips); both
// declare the same arguments.
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100, timing = {collective_algorithm = "auto", collective_reduce_on_vector = true, dma_run_setup_cycles = 4, dma_setup_cycles = 64, hbm_burst_bytes = 4, matmul_f32_row_cycles = 4, matmul_fill_drain_cycles = -2, matmul_row_cycles = 1, matmul_weight_overlap = true, matmul_weight_row_cycles = 1, nop_cycles = 1, queue_depth = 32, recv_cycles = 1, sequencer_cycles = 1, sram_burst_bytes = 4, vector_elementwise_factor = 1, vector_overhead_cycles = 16, vector_scan_factor = 2, vector_sort_stage_factor = 1, vector_transcendental_factor = 4, vector_transpose_factor = 2}>} {
  func.func @stage0(%x: memref<8xf16, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input", nova.name = "x"},
                    %y: memref<8xf16, #nova.memory_space<hbm>> {nova.address = 64 : i64, nova.role = "output", nova.name = "y"})
      attributes {nova.chips = array<i64: 0>} {
    %a = nova_isa.li 0 on scalar
    %peer = nova_isa.li 1 on scalar
    nova_isa.send %a : #nova_isa.tile<hbm, f16, [8], [1]> to %peer channel 0 on collective signal [0]
    nova_isa.sem_wait [0] on scalar
    return
  }
  func.func @stage1(%x: memref<8xf16, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input", nova.name = "x"},
                    %y: memref<8xf16, #nova.memory_space<hbm>> {nova.address = 64 : i64, nova.role = "output", nova.name = "y"})
      attributes {nova.chips = array<i64: 1>} {
    %a = nova_isa.li 64 on scalar
    %peer = nova_isa.li 0 on scalar
    nova_isa.recv %a : #nova_isa.tile<hbm, f16, [8], [1]> from %peer channel 0 on collective signal [0]
    nova_isa.sem_wait [0] on scalar
    return
  }
}

// The readable encoding names the target, the program and its instructions.
// RUN: cd %S && nova-translate --nova-to-binary-text pipeline.mlir | FileCheck pipeline.mlir
// CHECK: // target {{.*}}, format 1, isa 2
// CHECK: program @
// CHECK: nova_isa.send
// CHECK: nova_isa.recv
