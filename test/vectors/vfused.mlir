// RUN: cd %S && nova-translate --nova-to-binary vfused.mlir -o %t && cmp %t vfused.nova
// Test vector: VFUSED (ISA version 5, docs/isa.md 2.4): y = (x * s) + b with a
// broadcast [1, 1] tile s and a full tile b, and z = max(x / 4, -1) with two
// immediates, on the tiny target.
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 1, topology = switch, link_gbps = 10, link_latency_ns = 100, timing = {collective_algorithm = "auto", collective_reduce_on_vector = true, dma_run_setup_cycles = 4 : i64, dma_setup_cycles = 64 : i64, hbm_burst_bytes = 4 : i64, matmul_f32_row_cycles = 4 : i64, matmul_fill_drain_cycles = -2 : i64, matmul_row_cycles = 1 : i64, matmul_weight_overlap = true, matmul_weight_row_cycles = 1 : i64, nop_cycles = 1 : i64, queue_depth = 32 : i64, recv_cycles = 1 : i64, sequencer_cycles = 1 : i64, sram_burst_bytes = 4 : i64, vector_elementwise_factor = 1 : i64, vector_overhead_cycles = 16 : i64, vector_scan_factor = 2 : i64, vector_sort_stage_factor = 1 : i64, vector_transcendental_factor = 4 : i64, vector_transpose_factor = 2 : i64}>} {
  func.func @main(%x: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input", nova.name = "x"},
                  %b: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 256 : i64, nova.role = "input", nova.name = "b"},
                  %s: memref<1x1xf32, #nova.memory_space<hbm>> {nova.address = 512 : i64, nova.role = "input", nova.name = "s"},
                  %y: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 768 : i64, nova.role = "output", nova.name = "y"},
                  %z: memref<8x8xf32, #nova.memory_space<hbm>> {nova.address = 1024 : i64, nova.role = "output", nova.name = "z"}) {
    %hx = nova_isa.li 0 on scalar
    %hb = nova_isa.li 256 on scalar
    %hs = nova_isa.li 512 on scalar
    %hy = nova_isa.li 768 on scalar
    %hz = nova_isa.li 1024 on scalar
    %sx = nova_isa.li 0 on scalar
    %sb = nova_isa.li 256 on scalar
    %ss = nova_isa.li 512 on scalar
    %sy = nova_isa.li 768 on scalar
    %sz = nova_isa.li 1024 on scalar
    nova_isa.dma_copy %hx : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]>
        -> %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> queue 0 on dma signal [0]
    nova_isa.dma_copy %hb : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]>
        -> %sb : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> queue 1 on dma signal [1]
    nova_isa.dma_copy %hs : #nova_isa.tile<hbm, f32, [1, 1], [1, 1]>
        -> %ss : #nova_isa.tile<sram, f32, [1, 1], [1, 1]> queue 0 on dma signal [2]
    nova_isa.vfused mul, add %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>,
        %ss : #nova_isa.tile<sram, f32, [1, 1], [1, 1]>, %sb : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>
        -> %sy : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> on vector wait [0, 1, 2] signal [3]
    nova_isa.vfused div, max %sx : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>, 4.000000e+00, -1.000000e+00
        -> %sz : #nova_isa.tile<sram, f32, [8, 8], [8, 1]> on vector signal [4]
    nova_isa.dma_copy %sy : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>
        -> %hy : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]> queue 0 on dma wait [3] signal [5]
    nova_isa.dma_copy %sz : #nova_isa.tile<sram, f32, [8, 8], [8, 1]>
        -> %hz : #nova_isa.tile<hbm, f32, [8, 8], [8, 1]> queue 1 on dma wait [4] signal [6]
    nova_isa.sem_wait [5, 6] on scalar
    return
  }
}

// The readable encoding: version 5, VFUSED 0x4C on vector (01) with kind mul (0x22);
// the second has kind div (0x23) and its immediates in place of tiles b and c.
// RUN: cd %S && nova-translate --nova-to-binary-text vfused.mlir | FileCheck vfused.mlir
// CHECK: // target tiny, 1 chips, format 1, isa 5
// CHECK: 4c0122{{.*}} nova_isa.vfused
// CHECK: 4c0123{{.*}} nova_isa.vfused
