// RUN: cd %S && nova-translate --nova-to-binary integer_gather.mlir -o %t && cmp %t integer_gather.nova
// Test vector (ISA 2): an embedding lookup. Token ids (i64) are checked
// against the table's 16 rows (vscalar cmp_lt writing i1, vassert with its
// message), turned into flat positions id * 4 + column (viota, vscalar mul
// with an integer immediate, vbinary add) and gathered row by row from HBM
// (dma_gather); a register-valued vfill adds 2 to the positions' origin.
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 1, topology = switch, link_gbps = 10, link_latency_ns = 100, timing = {collective_algorithm = "auto", collective_reduce_on_vector = true, dma_run_setup_cycles = 4, dma_setup_cycles = 64, hbm_burst_bytes = 4, matmul_f32_row_cycles = 4, matmul_fill_drain_cycles = -2, matmul_row_cycles = 1, matmul_weight_overlap = true, matmul_weight_row_cycles = 1, nop_cycles = 1, queue_depth = 32, recv_cycles = 1, sequencer_cycles = 1, sram_burst_bytes = 4, vector_elementwise_factor = 1, vector_overhead_cycles = 16, vector_scan_factor = 2, vector_sort_stage_factor = 1, vector_transcendental_factor = 4, vector_transpose_factor = 2}>} {
  func.func @main(%table: memref<16x4xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input", nova.name = "table"},
                  %ids: memref<3x1xi64, #nova.memory_space<hbm>> {nova.address = 256 : i64, nova.role = "input", nova.name = "ids"},
                  %rows: memref<3x4xf32, #nova.memory_space<hbm>> {nova.address = 512 : i64, nova.role = "output", nova.name = "rows"}) {
    %hbm_table = nova_isa.li 0 on scalar
    %hbm_ids = nova_isa.li 256 on scalar
    %hbm_rows = nova_isa.li 512 on scalar
    %s_ids = nova_isa.li 0 on scalar
    %s_ok = nova_isa.li 64 on scalar
    %s_col = nova_isa.li 128 on scalar
    %s_pos = nova_isa.li 256 on scalar
    %s_rows = nova_isa.li 512 on scalar
    %s_two = nova_isa.li 640 on scalar
    %two = nova_isa.li 2 on scalar
    nova_isa.dma_copy %hbm_ids : #nova_isa.tile<hbm, i64, [3, 1], [1, 1]>
        -> %s_ids : #nova_isa.tile<sram, i64, [3, 1], [1, 1]> queue 0 on dma signal [0]
    nova_isa.vscalar cmp_lt %s_ids : #nova_isa.tile<sram, i64, [3, 1], [1, 1]>, 16
        -> %s_ok : #nova_isa.tile<sram, i1, [3, 1], [1, 1]> on vector wait [0]
    nova_isa.vassert %s_ok : #nova_isa.tile<sram, i1, [3, 1], [1, 1]> "index must be smaller than dim size" on vector
    nova_isa.viota -> %s_col : #nova_isa.tile<sram, i64, [1, 4], [4, 1]> axis 1 on vector
    nova_isa.vfill 0 value(%two) -> %s_two : #nova_isa.tile<sram, i64, [1, 1], [1, 1]> on vector
    nova_isa.vbinary sub %s_col : #nova_isa.tile<sram, i64, [1, 4], [4, 1]>, %s_two : #nova_isa.tile<sram, i64, [1, 1], [1, 1]>
        -> %s_col : #nova_isa.tile<sram, i64, [1, 4], [4, 1]> on vector
    nova_isa.vscalar add %s_col : #nova_isa.tile<sram, i64, [1, 4], [4, 1]>, 2
        -> %s_col : #nova_isa.tile<sram, i64, [1, 4], [4, 1]> on vector
    nova_isa.vscalar mul %s_ids : #nova_isa.tile<sram, i64, [3, 1], [1, 1]>, 4
        -> %s_ids : #nova_isa.tile<sram, i64, [3, 1], [1, 1]> on vector
    nova_isa.vbinary add %s_ids : #nova_isa.tile<sram, i64, [3, 1], [1, 1]>, %s_col : #nova_isa.tile<sram, i64, [1, 4], [4, 1]>
        -> %s_pos : #nova_isa.tile<sram, i64, [3, 4], [4, 1]> on vector signal [1]
    nova_isa.dma_gather %hbm_table : #nova_isa.tile<hbm, f32, [16, 4], [4, 1]>, %s_pos : #nova_isa.tile<sram, i64, [3, 4], [4, 1]>
        -> %s_rows : #nova_isa.tile<sram, f32, [3, 4], [4, 1]> queue 1 on dma wait [1] signal [2]
    nova_isa.dma_copy %s_rows : #nova_isa.tile<sram, f32, [3, 4], [4, 1]>
        -> %hbm_rows : #nova_isa.tile<hbm, f32, [3, 4], [4, 1]> queue 1 on dma wait [2] signal [3]
    nova_isa.sem_wait [3] on scalar
    return
  }
}

// The readable encoding names the target, the program and its instructions.
// RUN: cd %S && nova-translate --nova-to-binary-text integer_gather.mlir | FileCheck integer_gather.mlir
// CHECK: // target {{.*}}, format 1, isa 2
// CHECK: program @
// CHECK: nova_isa.vassert
// CHECK: nova_isa.dma_gather
