// RUN: nova-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The activation engine (docs/isa.md 2.7): vunary, vscalar, vcopy and nop may
// run on it when the target describes one; tensor-tensor work may not, and a
// target without one rejects it.

module attributes {nova.target = #nova.target<name = "t-act", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 1, topology = switch, link_gbps = 450, link_latency_ns = 1000, timing = {activation = {lanes = 128, overhead_cycles = 16, elementwise_factor = 1, transcendental_factor = 1}}>} {
// CHECK-LABEL: func.func @on_activation
func.func @on_activation(%a: index, %b: index) {
  // CHECK: nova_isa.vunary exp {{.*}} on activation wait [0] signal [1]
  nova_isa.vunary exp %a : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> -> %b : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on activation wait [0] signal [1]
  // CHECK: nova_isa.vscalar mul {{.*}} on activation
  nova_isa.vscalar mul %a : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>, 5.000000e-01 -> %b : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on activation
  // CHECK: nova_isa.vcopy {{.*}} on activation
  nova_isa.vcopy %a : #nova_isa.tile<acc, f32, [8, 16], [16, 1]> -> %b : #nova_isa.tile<sram, bf16, [8, 16], [16, 1]> on activation
  // CHECK: nova_isa.nop on activation signal [2]
  nova_isa.nop on activation signal [2]
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t-act", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 1, topology = switch, link_gbps = 450, link_latency_ns = 1000, timing = {activation = {lanes = 128, overhead_cycles = 16, elementwise_factor = 1, transcendental_factor = 1}}>} {
func.func @negative_binary_on_activation(%a: index, %b: index) {
  // expected-error @+1 {{'nova_isa.vbinary' op must run on vector, got activation}}
  nova_isa.vbinary add %a : #nova_isa.tile<sram, f32, [8, 16], [16, 1]>, %a : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> -> %b : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on activation
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t1", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 1, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @negative_target_without_activation(%a: index, %b: index) {
  // expected-error @+1 {{'nova_isa.vunary' op runs on activation, but target 't1' has no activation engine}}
  nova_isa.vunary exp %a : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> -> %b : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on activation
  return
}
}

// -----

// expected-error @+1 {{target activation key 'transcendental_factor' must be given as a number}}
module attributes {nova.target = #nova.target<name = "t-act", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 1, topology = switch, link_gbps = 450, link_latency_ns = 1000, timing = {activation = {lanes = 128, overhead_cycles = 16, elementwise_factor = 1}}>} {
}

// -----

// expected-error @+1 {{target activation key 'lanes' must be >= 1, got 0}}
module attributes {nova.target = #nova.target<name = "t-act", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 1, topology = switch, link_gbps = 450, link_latency_ns = 1000, timing = {activation = {lanes = 0, overhead_cycles = 16, elementwise_factor = 1, transcendental_factor = 1}}>} {
}

// -----

module attributes {nova.target = #nova.target<name = "t-act", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 1, topology = switch, link_gbps = 450, link_latency_ns = 1000, timing = {activation = {lanes = 128, overhead_cycles = 16, elementwise_factor = 1, transcendental_factor = 1}}>} {
func.func @negative_unary_on_scalar(%a: index, %b: index) {
  // expected-error @+1 {{'nova_isa.vunary' op must run on vector or activation, got scalar}}
  nova_isa.vunary exp %a : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> -> %b : #nova_isa.tile<sram, f32, [8, 16], [16, 1]> on scalar
  return
}
}
