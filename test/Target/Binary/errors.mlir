// RUN: nova-translate --nova-to-binary %s -split-input-file -verify-diagnostics -o /dev/null

// expected-error @+1 {{module needs a 'nova.target' attribute to be encoded}}
module {
  func.func @main() {
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  func.func @main() {
    %c = nova_isa.li 1 on scalar
    // expected-error @+1 {{'arith.addi' is not a nova_isa instruction and cannot be encoded}}
    %d = arith.addi %c, %c : index
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  func.func @main() {
    // expected-error @+1 {{only index constants can be encoded (as LI), got 'i32'}}
    %c = arith.constant 1 : i32
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op argument 0 is an index value: a program starts with no register set}}
  func.func @main(%n: index) {
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op argument 0 needs a non-negative i64 'nova.address'}}
  func.func @main(%x: memref<8xf32, #nova.memory_space<hbm>> {nova.role = "input"}) {
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op argument 0 needs 'nova.role' = "input" or "output"}}
  func.func @main(%x: memref<8xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "inout"}) {
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op argument 0 must live in hbm}}
  func.func @main(%x: memref<8xf32, #nova.memory_space<sram>> {nova.address = 0 : i64, nova.role = "input"}) {
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op argument 0 must have a static shape and an identity layout}}
  func.func @main(%x: memref<?xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input"}) {
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op argument 0 ends at HBM byte 1048580, beyond hbm_bytes = 1048576}}
  func.func @main(%x: memref<2xf32, #nova.memory_space<hbm>> {nova.address = 1048572 : i64, nova.role = "input"}) {
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op argument 1 repeats the name 'x'}}
  func.func @main(%x: memref<2xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input", nova.name = "x"},
                  %y: memref<2xf32, #nova.memory_space<hbm>> {nova.address = 8 : i64, nova.role = "output", nova.name = "x"}) {
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op must not return values}}
  func.func @main() -> i32 {
    %c = arith.constant 1 : i32
    return %c : i32
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op needs 'nova.chips' when the module holds several programs}}
  func.func @a() {
    return
  }
  func.func @b() {
    return
  }
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'memref.global' op needs an i64 'nova.address'}}
  memref.global "private" constant @c : memref<2xf32, #nova.memory_space<hbm>> = dense<1.0>
  func.func @main() {
    return
  }
}

// -----

// expected-error @+1 {{module has no program function to encode}}
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
}

// -----

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
  // expected-error @+1 {{'func.func' op argument 1 has 'nova.aliases' = 0 but is not an output at the address, dtype and shape of an earlier input}}
  func.func @main(%a: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 0 : i64, nova.role = "input"},
                  %r: memref<64xf32, #nova.memory_space<hbm>> {nova.address = 256 : i64, nova.aliases = 0 : i64, nova.role = "output"}) {
    return
  }
}
