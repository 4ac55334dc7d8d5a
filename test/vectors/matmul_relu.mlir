// RUN: cd %S && nova-translate --nova-to-binary matmul_relu.mlir -o %t && cmp %t matmul_relu.nova
// Test vector: y = relu(x @ w + bias) on the tiny target, one SPMD program.
// Inputs and outputs are memref arguments at fixed HBM addresses.
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100, timing = {collective_algorithm = "auto", collective_reduce_on_vector = true, dma_run_setup_cycles = 4, dma_setup_cycles = 64, hbm_burst_bytes = 4, matmul_f32_row_cycles = 4, matmul_fill_drain_cycles = -2, matmul_row_cycles = 1, matmul_weight_overlap = true, matmul_weight_row_cycles = 1, nop_cycles = 1, queue_depth = 32, recv_cycles = 1, sequencer_cycles = 1, sram_burst_bytes = 4, vector_elementwise_factor = 1, vector_overhead_cycles = 16, vector_scan_factor = 2, vector_sort_stage_factor = 1, vector_transcendental_factor = 4, vector_transpose_factor = 2}>} {
  func.func @main(%x: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input", nova.name = "x"},
                  %w: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 256 : i64, nova.role = "input", nova.name = "w"},
                  %y: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 512 : i64, nova.role = "output"},
                  %b: memref<1x8xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64, nova.role = "input", nova.name = "bias"}) {
    %hx = nova_isa.li 0 on scalar
    %hw = nova_isa.li 256 on scalar
    %hy = nova_isa.li 512 on scalar
    %hb = nova_isa.li 1024 on scalar
    %sx = nova_isa.li 0 on scalar
    %sw = nova_isa.li 256 on scalar
    %sb = nova_isa.li 512 on scalar
    %acc = nova_isa.li 0 on scalar
    nova_isa.dma_copy %hx : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]>
        -> %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> queue 0 on dma signal [0]
    nova_isa.dma_copy %hw : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]>
        -> %sw : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> queue 1 on dma signal [1]
    nova_isa.dma_copy %hb : #nova_isa.tile<hbm, f32, [1, 8], [8, 1]>
        -> %sb : #nova_isa.tile<sram, f32, [1, 8], [8, 1]> queue 0 on dma signal [2]
    nova_isa.matmul %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>,
                    %sw : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>
        -> %acc : #nova_isa.tile<acc, f32, [8, 8], [8, 1]> on matrix wait [0, 1] signal [3]
    nova_isa.vbinary add %acc : #nova_isa.tile<acc, f32, [8, 8], [8, 1]>,
                         %sb : #nova_isa.tile<sram, f32, [1, 8], [8, 1]>
        -> %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> on vector wait [2, 3]
    nova_isa.vunary relu %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>
        -> %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> on vector signal [4]
    nova_isa.dma_copy %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>
        -> %hy : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]> queue 0 on dma wait [4] signal [5]
    nova_isa.sem_wait [5] on scalar
    return
  }
}

// The readable encoding names the target, the program and its instructions.
// RUN: cd %S && nova-translate --nova-to-binary-text matmul_relu.mlir | FileCheck matmul_relu.mlir
// CHECK: // target {{.*}}, format 1, isa 2
// CHECK: program @
// CHECK: nova_isa.dma_copy
// CHECK: nova_isa.matmul
// CHECK: nova_isa.vbinary
