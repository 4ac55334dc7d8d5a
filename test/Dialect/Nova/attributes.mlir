// RUN: nova-opt %s -split-input-file | nova-opt -split-input-file | FileCheck %s

// Round trip of the nova attributes; a target attached to the module.


// CHECK: module attributes {nova.target = #nova.target<name = "ring4", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 65536, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>}
module attributes {nova.target = #nova.target<name = "ring4", clock_mhz = 1000,
    matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576,
    sram_gbps = 1000, acc_bytes = 65536, hbm_bytes = 1073741824, hbm_gbps = 100,
    dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
  // CHECK-LABEL: func.func @matmul_within_matrix_unit
  // CHECK: nova.matmul
  func.func @matmul_within_matrix_unit(%a: memref<128x64xf32, #nova.memory_space<sram>>,
                                       %b: memref<64x32xf32, #nova.memory_space<sram>>,
                                       %c: memref<128x32xf32, #nova.memory_space<acc>>) {
    nova.matmul ins(%a, %b : memref<128x64xf32, #nova.memory_space<sram>>, memref<64x32xf32, #nova.memory_space<sram>>)
                outs(%c : memref<128x32xf32, #nova.memory_space<acc>>)
    return
  }
}

// -----

// The other topologies parse; attributes on ops keep their full form.
// CHECK-LABEL: func.func @topologies
// CHECK-SAME: k = #nova.elementwise_kind<tanh>
// CHECK-SAME: r = #nova.reduction_kind<min>
// CHECK-SAME: t0 = #nova.topology<switch>
// CHECK-SAME: t1 = #nova.topology<torus2d>
// CHECK-SAME: t2 = #nova.topology<pcie>
func.func @topologies() attributes {t0 = #nova.topology<switch>, t1 = #nova.topology<torus2d>,
                                    t2 = #nova.topology<pcie>, k = #nova.elementwise_kind<tanh>,
                                    r = #nova.reduction_kind<min>} {
  return
}

// -----

// Several nodes: the node and NIC parameters round-trip (a one-node target, as
// above, prints none of them).
// CHECK: module attributes {nova.target = #nova.target<name = "two-node", {{.*}} chips = 8, topology = ring, link_gbps = 50, link_latency_ns = 500, chips_per_node = 4, nics_per_node = 2, nic_gbps = 25, nic_latency_ns = 0>}
module attributes {nova.target = #nova.target<name = "two-node", clock_mhz = 1000,
    matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576,
    sram_gbps = 1000, acc_bytes = 65536, hbm_bytes = 1073741824, hbm_gbps = 100,
    dma_engines = 4, chips = 8, topology = ring, link_gbps = 50, link_latency_ns = 500,
    chips_per_node = 4, nics_per_node = 2, nic_gbps = 25, nic_latency_ns = 0>} {
}
