// RUN: nova-translate --nova-to-binary-text %s | FileCheck %s

// imm0 (group 6 of the listing, little-endian) carries an integer tile's
// immediate as its exact two's-complement i64 and a float tile's as the f64
// bits (docs/isa.md 3.1): no i64 goes through a double.

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 1, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
// CHECK-LABEL: program @main
func.func @main() {
  %a = nova_isa.li 0 on scalar
  %b = nova_isa.li 64 on scalar
  %c = nova_isa.li 128 on scalar
  // 0x9E3779B97F4A7C15 (SplitMix64's increment) as a signed i64.
  // CHECK: 4601{{[0-9a-f]+( [0-9a-f]+){4} }}157c4a7fb979379e {{.*}} nova_isa.vfill
  nova_isa.vfill -7046029254386353131 -> %a : #nova_isa.tile<sram, i64, [8], [1]> on vector
  // CHECK: 4201{{[0-9a-f]+( [0-9a-f]+){4} }}ffffffffffffff7f {{.*}} nova_isa.vscalar
  nova_isa.vscalar mul %a : #nova_isa.tile<sram, i64, [8], [1]>, 9223372036854775807 -> %a : #nova_isa.tile<sram, i64, [8], [1]> on vector
  // CHECK: 4201{{[0-9a-f]+( [0-9a-f]+){4} }}0000000000000080 {{.*}} nova_isa.vscalar
  nova_isa.vscalar xor %a : #nova_isa.tile<sram, i64, [8], [1]>, -9223372036854775808 -> %a : #nova_isa.tile<sram, i64, [8], [1]> on vector
  // 2^53 + 1, the first integer a double cannot hold.
  // CHECK: 4201{{[0-9a-f]+( [0-9a-f]+){4} }}0100000000002000 {{.*}} nova_isa.vscalar
  nova_isa.vscalar add %a : #nova_isa.tile<sram, i64, [8], [1]>, 9007199254740993 -> %a : #nova_isa.tile<sram, i64, [8], [1]> on vector
  // An i1 tile takes an integer too.
  // CHECK: 4601{{[0-9a-f]+( [0-9a-f]+){4} }}0100000000000000 {{.*}} nova_isa.vfill
  nova_isa.vfill 1 -> %c : #nova_isa.tile<sram, i1, [8], [1]> on vector
  // Float tiles: the f64 bits (-inf, 0.5).
  // CHECK: 4601{{[0-9a-f]+( [0-9a-f]+){4} }}000000000000f0ff {{.*}} nova_isa.vfill
  nova_isa.vfill 0xFFF0000000000000 -> %b : #nova_isa.tile<sram, f32, [8], [1]> on vector
  // CHECK: 4201{{[0-9a-f]+( [0-9a-f]+){4} }}000000000000e03f {{.*}} nova_isa.vscalar
  nova_isa.vscalar mul %b : #nova_isa.tile<sram, f32, [8], [1]>, 0.5 -> %b : #nova_isa.tile<sram, f32, [8], [1]> on vector
  return
}
}
