// RUN: cd %S && nova-translate --nova-to-binary collectives.mlir -o %t && cmp %t collectives.nova
// Test vector: collectives on 4 chips (replica-group table with a shared
// entry), a peer DMA and send/recv between ring neighbours.
module attributes {nova.target = #nova.target<name = "ring4", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 128, vector_lanes = 128, sram_bytes = 25165824, sram_gbps = 4000, acc_bytes = 2097152, hbm_bytes = 34359738368, hbm_gbps = 820, dma_engines = 16, chips = 4, topology = ring, link_gbps = 450, link_latency_ns = 1000, timing = {collective_algorithm = "auto", collective_reduce_on_vector = true, dma_run_setup_cycles = 4, dma_setup_cycles = 64, hbm_burst_bytes = 64, matmul_f32_row_cycles = 4, matmul_fill_drain_cycles = -2, matmul_row_cycles = 1, matmul_weight_overlap = true, matmul_weight_row_cycles = 1, nop_cycles = 1, queue_depth = 32, recv_cycles = 1, sequencer_cycles = 1, sram_burst_bytes = 4, vector_elementwise_factor = 1, vector_overhead_cycles = 16, vector_scan_factor = 2, vector_sort_stage_factor = 1, vector_transcendental_factor = 4, vector_transpose_factor = 2}>} {
  func.func @main(%g: memref<64x64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input", nova.name = "grad"},
                  %o: memref<16x64xf32, #nova.memory_space<hbm>> {nova.address = 17179869184 : i64, nova.role = "output", nova.name = "shard"}) {
    %id = nova_isa.chip_id on scalar
    %one = nova_isa.li 1 on scalar
    %n = nova_isa.li 4 on scalar
    %p1 = nova_isa.salu add %id, %one on scalar
    %next = nova_isa.salu rem %p1, %n on scalar
    %in = nova_isa.li 0 on scalar
    %out = nova_isa.li 17179869184 on scalar
    nova_isa.all_reduce sum %in : #nova_isa.tile<hbm, f32, [64, 64], [64, 1]>
        -> %in : #nova_isa.tile<hbm, f32, [64, 64], [64, 1]> groups [[0, 1], [2, 3]] on collective signal [0]
    nova_isa.reduce_scatter avg %in : #nova_isa.tile<hbm, f32, [64, 64], [64, 1]>
        -> %out : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> dim 0 groups [[0, 1, 2, 3]] on collective wait [0]
    nova_isa.all_gather %out : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]>
        -> %in : #nova_isa.tile<hbm, f32, [64, 64], [64, 1]> dim 0 groups [[0, 1, 2, 3]] on collective
    nova_isa.all_to_all %in : #nova_isa.tile<hbm, f32, [64, 64], [64, 1]>
        -> %in : #nova_isa.tile<hbm, f32, [32, 128], [128, 1]> split_dim 0 concat_dim 1 groups [[0, 2], [1, 3]] on collective
    nova_isa.send %out : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> to %next channel 3 on collective
    nova_isa.recv %out : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> from %next channel 3 on collective signal [1]
    nova_isa.dma_copy %out : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]>
        -> %out : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> queue 15 peer %next on dma wait [1]
    nova_isa.barrier groups [[0, 1], [2, 3]] on collective signal [2]
    nova_isa.sem_wait [2] on scalar
    return
  }
}

// The readable encoding names the target, the program and its instructions.
// RUN: cd %S && nova-translate --nova-to-binary-text collectives.mlir | FileCheck collectives.mlir
// CHECK: // target {{.*}}, format 1, isa 2
// CHECK: program @
// CHECK: nova_isa.all_reduce
// CHECK: nova_isa.all_gather
// CHECK: nova_isa.send
