// RUN: nova-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// Checks that depend on the #nova.target attached to the module.

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
// CHECK-LABEL: func.func @fits_target
func.func @fits_target(%a: index, %b: index, %c: index, %p: index) {
  // CHECK: nova_isa.dma_copy {{.*}} queue 3 peer %{{.*}} on dma
  nova_isa.dma_copy %a : #nova_isa.tile<sram, f32, [64, 64], [64, 1]> -> %b : #nova_isa.tile<hbm, f32, [64, 64], [64, 1]> queue 3 peer %p on dma
  // CHECK: nova_isa.matmul {{.*}} on matrix
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>, %b : #nova_isa.tile<sram, bf16, [128, 64], [64, 1]> -> %c : #nova_isa.tile<acc, f32, [64, 64], [64, 1]> on matrix
  // CHECK: nova_isa.all_reduce sum {{.*}} groups {{\[}}[0, 1], [2, 3]] on collective
  nova_isa.all_reduce sum %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<hbm, f32, [8], [1]> groups [[0, 1], [2, 3]] on collective
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @dma_queue_out_of_range(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{'nova_isa.dma_copy' op queue 4 is out of range for a target with 4 dma engines}}
  nova_isa.dma_copy %a : #nova_isa.tile<hbm, f32, [8], [1]> -> %b : #nova_isa.tile<sram, f32, [8], [1]> queue 4 on dma
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @matmul_contraction_too_large(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{'nova_isa.matmul' op contraction size 256 exceeds the matrix unit's 128 rows}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [8, 256], [256, 1]>, %b : #nova_isa.tile<sram, bf16, [256, 8], [8, 1]> -> %c : #nova_isa.tile<acc, f32, [8, 8], [8, 1]> on matrix
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @matmul_output_too_wide(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{'nova_isa.matmul' op output width 128 exceeds the matrix unit's 64 columns}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [8, 16], [16, 1]>, %b : #nova_isa.tile<sram, bf16, [16, 128], [128, 1]> -> %c : #nova_isa.tile<acc, f32, [8, 128], [128, 1]> on matrix
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @acc_tile_too_large(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{'nova_isa.matmul' op acc spans 32768 bytes, more than the target's 16384-byte acc}}
  nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [128, 16], [16, 1]>, %b : #nova_isa.tile<sram, bf16, [16, 64], [64, 1]> -> %c : #nova_isa.tile<acc, f32, [128, 64], [64, 1]> on matrix
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @sram_tile_too_large(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{'nova_isa.vfill' op output spans 131072 bytes, more than the target's 65536-byte sram}}
  nova_isa.vfill 0.0 -> %a : #nova_isa.tile<sram, f32, [256, 128], [128, 1]> on vector
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @strided_tile_extent(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{'nova_isa.vunary' op input spans 65540 bytes, more than the target's 65536-byte sram}}
  nova_isa.vunary exp %a : #nova_isa.tile<sram, f32, [2, 1], [16384, 1]> -> %b : #nova_isa.tile<sram, f32, [2, 1], [1, 1]> on vector
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @groups_chip_out_of_range(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{'nova_isa.barrier' op chip 4 is out of range for a target with 4 chips}}
  nova_isa.barrier groups [[0, 1, 2, 4]] on collective
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @groups_miss_target_chip(%a: index, %b: index, %c: index) {
  // expected-error @+1 {{'nova_isa.barrier' op chip 3 is in no replica group}}
  nova_isa.barrier groups [[0], [1], [2]] on collective
  return
}
}

// -----

module attributes {nova.target = #nova.target<name = "t", clock_mhz = 1400, matrix_rows = 128, matrix_cols = 64, vector_lanes = 128, sram_bytes = 65536, sram_gbps = 4000, acc_bytes = 16384, hbm_bytes = 1048576, hbm_gbps = 820, dma_engines = 4, chips = 4, topology = switch, link_gbps = 450, link_latency_ns = 1000>} {
func.func @nop_queue_out_of_range() {
  // expected-error @+1 {{'nova_isa.nop' op queue 4 is out of range for a target with 4 dma engines}}
  nova_isa.nop queue 4 on dma wait [0]
  return
}
}
