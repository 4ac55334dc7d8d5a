// RUN: nova-translate --nova-to-binary-text %s | FileCheck %s

// DMA_SCATTER (0x22) on the dma engine (3): queue in byte 5, src in ra, idx
// in rb, dst in rdst; tiles a (src), b (idx) and d (dst); `accumulate` is
// flag bit 5 (0x20), absent without it.
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 2, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
// CHECK-LABEL: program @main chips [0, 1]
func.func @main() {
  %src = nova_isa.li 0 on scalar
  %idx = nova_isa.li 256 on scalar
  %dst = nova_isa.li 1024 on scalar
  // CHECK: 3: 2203002001000001 000200000100ffff 0200000000000000 {{.*}} nova_isa.dma_scatter
  nova_isa.dma_scatter %src : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, %idx : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> -> %dst : #nova_isa.tile<hbm, f32, [16, 8], [8, 1]> queue 1 accumulate on dma
  // CHECK-NEXT: 4: 2203000000000001 000200000100ffff 0200000000000000 {{.*}} nova_isa.dma_scatter
  nova_isa.dma_scatter %src : #nova_isa.tile<sram, f32, [4, 8], [8, 1]>, %idx : #nova_isa.tile<sram, i64, [4, 8], [8, 1]> -> %dst : #nova_isa.tile<hbm, f32, [16, 8], [8, 1]> queue 0 on dma
  // CHECK: tile 0 = #nova_isa.tile<sram, f32, [4, 8], [8, 1]>
  // CHECK-NEXT: tile 1 = #nova_isa.tile<sram, i64, [4, 8], [8, 1]>
  // CHECK-NEXT: tile 2 = #nova_isa.tile<hbm, f32, [16, 8], [8, 1]>
  return
}
}
