// RUN: nova-opt %s --nova-attach-target | FileCheck %s --check-prefix=DEFAULT
// RUN: nova-opt %s --nova-attach-target="target=nova-t1-ring8 chips=4" | FileCheck %s --check-prefix=RING
// RUN: nova-opt %s --nova-attach-target="target=%S/Inputs/custom.json" | FileCheck %s --check-prefix=FILE
// RUN: nova-opt %s --nova-attach-target="target=tiny" | nova-opt | FileCheck %s --check-prefix=TINY
// RUN: nova-opt %s --nova-attach-target="target=%S/Inputs/two-node.json" | nova-opt | FileCheck %s --check-prefix=NODES
// RUN: nova-opt %s --nova-attach-target="target=%S/Inputs/two-node.json chips=2" | FileCheck %s --check-prefix=ONENODE
// RUN: nova-opt %s --nova-attach-target="target=nova-t1-64" | FileCheck %s --check-prefix=SHIPPED

// The default target is nova-t1 from targets/nova-t1.json, its timing constants included.
// DEFAULT: module attributes {nova.target = #nova.target<name = "nova-t1", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 128, vector_lanes = 128, sram_bytes = 25165824, sram_gbps = 4000, acc_bytes = 2097152, hbm_bytes = 34359738368, hbm_gbps = 820, dma_engines = 16, chips = 8, topology = switch, link_gbps = 450, link_latency_ns = 1000, timing = {collective_algorithm = "auto", {{.*}}dma_setup_cycles = 64 : i64, {{.*}}matmul_weight_overlap = true, {{.*}}}>}
// DEFAULT-LABEL: func.func @matmul_tile_f32
// DEFAULT: nova.matmul

// `chips` overrides the file's chip count.
// RING: #nova.target<name = "nova-t1-ring8", {{.*}} chips = 4, topology = ring, link_gbps = 192, link_latency_ns = 1500, timing = {
// RING-LABEL: func.func @matmul_tile_f32

// A path to a file works as well as a name.
// FILE: #nova.target<name = "custom", {{.*}} chips = 3, topology = switch

// The attached target re-parses and the ops verify against it.
// TINY: #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8
// TINY-LABEL: func.func @matmul_tile_f32
// TINY: nova.matmul

// Several nodes: the node and NIC keys are carried (and re-parse); a one-node
// target (every one above) prints none of them.
// NODES: #nova.target<name = "two-node", {{.*}} chips = 4, topology = switch, link_gbps = 10, link_latency_ns = 100, chips_per_node = 2, nics_per_node = 1, nic_gbps = 5, nic_latency_ns = 2000, timing = {
// A chip count at most chips_per_node is one node of that many chips.
// ONENODE: chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100, chips_per_node = 2, nics_per_node = 1, nic_gbps = 5, nic_latency_ns = 2000
// SHIPPED: #nova.target<name = "nova-t1-64", {{.*}} chips = 64, topology = switch, link_gbps = 450, link_latency_ns = 1000, chips_per_node = 8, nics_per_node = 8, nic_gbps = 50, nic_latency_ns = 5000, timing = {

func.func @matmul_tile_f32(%a: memref<8x8xf32, #nova.memory_space<sram>>,
                           %b: memref<8x8xf32, #nova.memory_space<sram>>,
                           %c: memref<8x8xf32, #nova.memory_space<acc>>) {
  nova.matmul ins(%a, %b : memref<8x8xf32, #nova.memory_space<sram>>, memref<8x8xf32, #nova.memory_space<sram>>)
              outs(%c : memref<8x8xf32, #nova.memory_space<acc>>)
  return
}
