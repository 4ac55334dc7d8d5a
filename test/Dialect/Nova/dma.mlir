// RUN: nova-opt %s | nova-opt | FileCheck %s
// RUN: nova-opt %s -mlir-print-op-generic | nova-opt | FileCheck %s

// Round trip of nova.dma_start and nova.wait through the custom and the generic form.

!hbm = memref<64x128xf32, #nova.memory_space<hbm>>
!sram = memref<64x128xf32, #nova.memory_space<sram>>

// CHECK-LABEL: func.func @dma_hbm_to_sram_and_back
// CHECK-SAME: (%[[H:.*]]: memref<64x128xf32, #nova.memory_space<hbm>>, %[[S:.*]]: memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK: %[[T0:.*]] = nova.dma_start %[[H]], %[[S]] : memref<64x128xf32, #nova.memory_space<hbm>> -> memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: %[[T1:.*]] = nova.dma_start %[[S]], %[[H]] : memref<64x128xf32, #nova.memory_space<sram>> -> memref<64x128xf32, #nova.memory_space<hbm>>
// CHECK: nova.wait %[[T0]], %[[T1]]
func.func @dma_hbm_to_sram_and_back(%h: !hbm, %s: !sram) {
  %t0 = nova.dma_start %h, %s : !hbm -> !sram
  %t1 = nova.dma_start %s, %h : !sram -> !hbm
  nova.wait %t0, %t1
  return
}

// CHECK-LABEL: func.func @dma_to_peer_hbm
// CHECK: nova.dma_start %{{.*}}, %{{.*}} peer 3 : memref<64x128xf32, #nova.memory_space<hbm>> -> memref<64x128xf32, #nova.memory_space<hbm>>
func.func @dma_to_peer_hbm(%a: !hbm, %b: !hbm) {
  %t = nova.dma_start %a, %b peer 3 : !hbm -> !hbm
  nova.wait %t
  return
}

// CHECK-LABEL: func.func @dma_strided_hbm_slice
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<64x128xbf16, strided<[768, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<64x128xbf16, #nova.memory_space<sram>>
func.func @dma_strided_hbm_slice(%a: memref<64x128xbf16, strided<[768, 1], offset: ?>, #nova.memory_space<hbm>>,
                                 %b: memref<64x128xbf16, #nova.memory_space<sram>>) {
  %t = nova.dma_start %a, %b : memref<64x128xbf16, strided<[768, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<64x128xbf16, #nova.memory_space<sram>>
  nova.wait %t
  return
}
