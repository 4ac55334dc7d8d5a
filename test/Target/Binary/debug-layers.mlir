// RUN: nova-translate --nova-to-binary-text %s | FileCheck %s

// A loop over layers (nova-roll-layers locates it at `layers:<module of each
// iteration>`) carries those modules in its DEBUG text after its location;
// the profile charges each iteration to its own layer (binary-format.md 4.6).
module attributes {nova.target = #nova.target<name = "tiny", clock_mhz = 1000, matrix_rows = 8, matrix_cols = 8, vector_lanes = 8, sram_bytes = 16384, sram_gbps = 100, acc_bytes = 2048, hbm_bytes = 1048576, hbm_gbps = 10, dma_engines = 2, chips = 1, topology = switch, link_gbps = 10, link_latency_ns = 100>} {
// CHECK-LABEL: program @main
func.func @main() {
  // CHECK: nova_isa.loop  @ m.py:3:1 in blocks.0.fc over layers blocks.0,blocks.1,blocks.2
  nova_isa.loop %i = 0 to 3 step 1 on scalar {
    // CHECK: nova_isa.vcopy  @ m.py:3:1 in blocks.0.fc{{$}}
    %c = nova_isa.li 7 on scalar loc("module:blocks.0.fc"("m.py":3:1))
    nova_isa.vcopy %c : #nova_isa.tile<sram, f32, [8], [1]> -> %c : #nova_isa.tile<sram, f32, [8], [1]> on vector loc("module:blocks.0.fc"("m.py":3:1))
  } loc("layers:blocks.0,blocks.1,blocks.2"("module:blocks.0.fc"("m.py":3:1)))
  return
}
}
