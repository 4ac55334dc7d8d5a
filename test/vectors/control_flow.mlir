// RUN: cd %S && nova-translate --nova-to-binary control_flow.mlir -o %t && cmp %t control_flow.nova
// Test vector: structured control flow (nested loops with register and
// immediate bounds, if/else, if without else), scalar ALU, chip_id, index
// constants, and the vector instructions with immediates.
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100, timing = {collective_algorithm = "auto", collective_reduce_on_vector = true, dma_run_setup_cycles = 4, dma_setup_cycles = 64, hbm_burst_bytes = 4, matmul_f32_row_cycles = 4, matmul_fill_drain_cycles = -2, matmul_row_cycles = 1, matmul_weight_overlap = true, matmul_weight_row_cycles = 1, nop_cycles = 1, queue_depth = 32, recv_cycles = 1, sequencer_cycles = 1, sram_burst_bytes = 4, vector_elementwise_factor = 1, vector_overhead_cycles = 16, vector_scan_factor = 2, vector_sort_stage_factor = 1, vector_transcendental_factor = 4, vector_transpose_factor = 2}>} {
  func.func @main(%x: memref<4x16xbf16, #nova.memory_space<hbm>> {nova.address = 4096 : i64, nova.role = "input", nova.name = "x"},
                  %y: memref<16x4xbf16, #nova.memory_space<hbm>> {nova.address = 8192 : i64, nova.role = "output", nova.name = "y"}) {
    %id = nova_isa.chip_id on scalar
    %zero = arith.constant 0 : index
    %four = nova_isa.li 4 on scalar
    %row = nova_isa.li 32 on scalar
    %is0 = nova_isa.salu eq %id, %zero on scalar
    nova_isa.loop %i = 0 to %four step 1 on scalar {
      %off = nova_isa.salu mul %i, %row on scalar
      nova_isa.loop %j = %i to 16 step %four on scalar {
        %a = nova_isa.salu add %off, %j on scalar
        nova_isa.vscalar mul %a : #nova_isa.tile<sram, bf16, [1, 16], [16, 1]>, -1.5
            -> %a : #nova_isa.tile<sram, bf16, [1, 16], [16, 1]> on vector
      }
      nova_isa.vfill 0.0 -> %off : #nova_isa.tile<sram, bf16, [1, 16], [16, 1]> on vector
    }
    nova_isa.if %is0 on scalar {
      nova_isa.sem_signal [0] on scalar
    } else {
      nova_isa.sem_signal [1, 63] on scalar
    }
    nova_isa.if %is0 on scalar {
      nova_isa.vreduce max %zero : #nova_isa.tile<sram, bf16, [4, 16], [16, 1]>
          -> %row : #nova_isa.tile<sram, bf16, [4, 1], [1, 1]> axis 1 on vector
    }
    nova_isa.vtranspose %zero : #nova_isa.tile<sram, bf16, [4, 16], [16, 1]>
        -> %row : #nova_isa.tile<sram, bf16, [16, 4], [4, 1]> perm [1, 0] on vector
    nova_isa.vselect %zero : #nova_isa.tile<sram, bf16, [16, 4], [4, 1]>,
                     %row : #nova_isa.tile<sram, bf16, [16, 4], [4, 1]>,
                     %four : #nova_isa.tile<sram, bf16, [1, 1], [1, 1]>
        -> %row : #nova_isa.tile<sram, bf16, [16, 4], [4, 1]> on vector
    nova_isa.nop on vector signal [7]
    nova_isa.halt on scalar
    return
  }
}

// The readable encoding names the target, the program and its instructions.
// RUN: cd %S && nova-translate --nova-to-binary-text control_flow.mlir | FileCheck control_flow.mlir
// CHECK: // target {{.*}}, format 1, isa 2
// CHECK: program @
// CHECK: nova_isa.loop
// CHECK: nova_isa.if
// CHECK: nova_isa.halt
