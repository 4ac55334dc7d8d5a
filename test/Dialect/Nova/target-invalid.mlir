// RUN: nova-opt %s -split-input-file -verify-diagnostics

// Rules that need the hardware: the module's #nova.target (64x32 matrix unit,
// 16 KiB accumulator, 4 chips) bounds tiles, peers and replica groups.

module attributes {nova.target = #nova.target<name = "small", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
  func.func @negative_matmul_contraction_exceeds_rows(%a: memref<8x128xf32, #nova.memory_space<sram>>, %b: memref<128x32xf32, #nova.memory_space<sram>>, %c: memref<8x32xf32, #nova.memory_space<acc>>) {
    // expected-error @+1 {{'nova.matmul' op contraction size 128 exceeds the matrix unit's 64 rows}}
    nova.matmul ins(%a, %b : memref<8x128xf32, #nova.memory_space<sram>>, memref<128x32xf32, #nova.memory_space<sram>>) outs(%c : memref<8x32xf32, #nova.memory_space<acc>>)
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "small", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
  func.func @negative_matmul_width_exceeds_cols(%a: memref<8x64xf32, #nova.memory_space<sram>>, %b: memref<64x64xf32, #nova.memory_space<sram>>, %c: memref<8x64xf32, #nova.memory_space<acc>>) {
    // expected-error @+1 {{'nova.matmul' op output width 64 exceeds the matrix unit's 32 columns}}
    nova.matmul ins(%a, %b : memref<8x64xf32, #nova.memory_space<sram>>, memref<64x64xf32, #nova.memory_space<sram>>) outs(%c : memref<8x64xf32, #nova.memory_space<acc>>)
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "small", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
  func.func @negative_matmul_tile_exceeds_accumulator(%a: memref<256x64xf32, #nova.memory_space<sram>>, %b: memref<64x32xf32, #nova.memory_space<sram>>, %c: memref<256x32xf32, #nova.memory_space<acc>>) {
    // expected-error @+1 {{'nova.matmul' op accumulator tile of 32768 bytes exceeds the target's 16384-byte accumulator}}
    nova.matmul ins(%a, %b : memref<256x64xf32, #nova.memory_space<sram>>, memref<64x32xf32, #nova.memory_space<sram>>) outs(%c : memref<256x32xf32, #nova.memory_space<acc>>)
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "small", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
  func.func @negative_dma_peer_out_of_range(%a: memref<4xf32, #nova.memory_space<hbm>>) {
    // expected-error @+1 {{'nova.dma_start' op peer chip 4 is out of range for a target with 4 chips}}
    %t = nova.dma_start %a, %a peer 4 : memref<4xf32, #nova.memory_space<hbm>> -> memref<4xf32, #nova.memory_space<hbm>>
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "small", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
  func.func @negative_send_peer_out_of_range(%a: memref<4xf32, #nova.memory_space<hbm>>) {
    // expected-error @+1 {{'nova.send' op peer chip 7 is out of range for a target with 4 chips}}
    %t = nova.send ins(%a : memref<4xf32, #nova.memory_space<hbm>>) to 7 channel 0
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "small", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
  func.func @negative_recv_peer_out_of_range(%a: memref<4xf32, #nova.memory_space<hbm>>) {
    // expected-error @+1 {{'nova.recv' op peer chip 9 is out of range for a target with 4 chips}}
    %t = nova.recv outs(%a : memref<4xf32, #nova.memory_space<hbm>>) from 9 channel 0
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "small", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
  func.func @negative_group_chip_out_of_range(%a: memref<4xf32, #nova.memory_space<hbm>>) {
    // expected-error @+1 {{'nova.all_reduce' op chip 5 is out of range for a target with 4 chips}}
    %t = nova.all_reduce <sum> ins(%a : memref<4xf32, #nova.memory_space<hbm>>) outs(%a : memref<4xf32, #nova.memory_space<hbm>>) groups [[0, 1], [2, 5]]
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "small", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
  func.func @negative_groups_miss_chips_of_target(%a: memref<4xf32, #nova.memory_space<hbm>>) {
    // expected-error @+1 {{'nova.barrier' op chip 2 is in no replica group}}
    %t = nova.barrier groups [[0, 1]]
    return
  }
}

// -----

// expected-error @+1 {{'nova.target' must be a #nova.target attribute}}
module attributes {nova.target = 1 : i64} {
}

// -----

// expected-error @+1 {{unknown nova attribute 'nova.tile'}}
module attributes {nova.tile = 1 : i64} {
}

// -----

// expected-error @+1 {{target name must not be empty}}
module attributes {nova.target = #nova.target<name = "", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
}

// -----

// expected-error @+1 {{target field 'matrix_rows' must be positive, got 0}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 0, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
}

// -----

// expected-error @+1 {{target field 'link_latency_ns' must not be negative, got -5}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = -5>} {
}

// -----

// expected-error @+1 {{accumulator (2097152 bytes) must not be larger than sram (1048576 bytes)}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 2097152, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
}

// -----

// expected-error @+1 {{a ring needs at least 2 chips, got 1}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 1, topology = ring, link_gbps = 50, link_latency_ns = 500>} {
}

// -----

// A missing field is a parse error.
// expected-error @+1 {{struct is missing required parameter: link_latency_ns}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 1, topology = ring, link_gbps = 50>} {
}

// -----

func.func @negative_address_negative() {
  // expected-error @+1 {{'nova.address' must be a non-negative integer}}
  %a = memref.alloc() {nova.address = -64 : i64} : memref<4xf32, #nova.memory_space<sram>>
  return
}

// -----

// expected-error @+1 {{'nova.chips' must be a non-empty array of chip ids}}
func.func @negative_chips_empty() attributes {nova.chips = array<i64>} {
  return
}

// -----

// Timing constants are numbers, bools or strings.
// expected-error @+1 {{target timing key 'queue_depth' must be a number, bool or string, got [32]}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 2, topology = ring, link_gbps = 50, link_latency_ns = 500, timing = {queue_depth = [32]}>} {
}

// -----

// Several nodes: chips must fill whole nodes.
// expected-error @+1 {{target field 'chips' must be a multiple of chips_per_node (3) or at most it, got 4}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = switch, link_gbps = 50, link_latency_ns = 500, chips_per_node = 3, nic_gbps = 5, nic_latency_ns = 100>} {
}

// -----

// The network's keys need nodes.
// expected-error @+1 {{target field 'nic_gbps' needs chips_per_node (the network joins nodes)}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = switch, link_gbps = 50, link_latency_ns = 500, nic_gbps = 5>} {
}

// -----

// Nodes need the network's bandwidth and latency.
// expected-error @+1 {{target field 'nic_latency_ns' must be given (>= 0) when chips_per_node is set, got -1}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = switch, link_gbps = 50, link_latency_ns = 500, chips_per_node = 2, nic_gbps = 5>} {
}

// -----

// expected-error @+1 {{target field 'nic_gbps' must be positive when chips_per_node is set, got 0}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = switch, link_gbps = 50, link_latency_ns = 500, chips_per_node = 2, nic_latency_ns = 100>} {
}

// -----

// expected-error @+1 {{target field 'nics_per_node' must divide chips_per_node (2), got 4}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = switch, link_gbps = 50, link_latency_ns = 500, chips_per_node = 2, nics_per_node = 4, nic_gbps = 5, nic_latency_ns = 100>} {
}

// -----

// expected-error @+1 {{target field 'chips_per_node' must be positive, got -2}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = switch, link_gbps = 50, link_latency_ns = 500, chips_per_node = -2, nic_gbps = 5, nic_latency_ns = 100>} {
}

// -----

// expected-error @+1 {{a ring needs at least 2 chips per node, got 1}}
module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1000, matrix_rows = 64, matrix_cols = 32, vector_lanes = 64, sram_bytes = 1048576, sram_gbps = 1000, acc_bytes = 16384, hbm_bytes = 1073741824, hbm_gbps = 100, dma_engines = 4, chips = 4, topology = ring, link_gbps = 50, link_latency_ns = 500, chips_per_node = 1, nic_gbps = 5, nic_latency_ns = 100>} {
}
