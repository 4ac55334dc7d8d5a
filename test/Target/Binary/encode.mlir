// RUN: nova-translate --nova-to-binary-text %s | FileCheck %s

// The listing shows each word as 8 groups of 8 bytes: group 1 is
// opcode engine kind flags queue rd ra rb; group 2 rc rdst tile_a tile_b tile_c;
// group 3 tile_d group target.

module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
// CHECK-LABEL: program @main chips [0, 1]
func.func @main() {
  // Registers are handed out lowest first.
  // CHECK-NEXT: 0: 1002000000000000 0000ffffffffffff ffff000000000000 {{.*}} nova_isa.li
  %n = nova_isa.li 4 on scalar
  // CHECK-NEXT: 1: 1002000000010000
  %base = nova_isa.li 64 on scalar
  // LOOP latches its bounds before writing the induction variable, so the
  // induction variable may take the register of %n, which dies here (r0).
  // %base is used inside the loop: it keeps r1 across every iteration, and
  // the body's value takes r2.
  // LOOP: flags = 2 (ub in rb = r0), rd = r0, imm0 = 0, imm2 = 1, target = 4.
  // CHECK-NEXT: 2: 1802000200000000 0000ffffffffffff ffff000004000000 0000000000000000 0000000000000000 0000000000000000 0000000000000000 0100000000000000 nova_isa.loop
  nova_isa.loop %i = 0 to %n step 1 on scalar {
    // SALU add: rd = r2, ra = r0, rb = r1.
    // CHECK-NEXT: 3: 1102000000020001
    %a = nova_isa.salu add %i, %base on scalar
  }
  // ENDLOOP targets its LOOP (2).
  // CHECK-NEXT: 4: 1902000000000000 0000ffffffffffff ffff000002000000 {{.*}} nova_isa.end
  // After the loop every register is free again; the dead value still gets one.
  // CHECK-NEXT: 5: 1002000000000000
  %c = nova_isa.li 7 on scalar
  // Identical descriptors share a tile-table entry (tile_a = tile_d = 0).
  // CHECK-NEXT: 6: 4701000000000000 00000000ffffffff 0000000000000000 {{.*}} nova_isa.vcopy
  nova_isa.vcopy %c : #nova_isa.tile<sram, f32, [8], [1]> -> %c : #nova_isa.tile<sram, f32, [8], [1]> on vector
  // The encoder appends HALT at the return.
  // CHECK-NEXT: 7: 0102000000000000 {{.*}} func.return
  // CHECK-NEXT: tile 0 = #nova_isa.tile<sram, f32, [8], [1]>
  // CHECK-NOT: tile 1
  return
}
}
