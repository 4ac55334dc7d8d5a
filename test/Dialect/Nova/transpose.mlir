// RUN: nova-opt %s | nova-opt | FileCheck %s
// RUN: nova-opt %s -mlir-print-op-generic | nova-opt | FileCheck %s

// Round trip of nova.transpose and nova.fill through the custom and the generic form.

!hbm = memref<64x128xf32, #nova.memory_space<hbm>>
!sram = memref<64x128xf32, #nova.memory_space<sram>>

// CHECK-LABEL: func.func @transpose_and_fill
// CHECK: nova.transpose ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x64xf32, #nova.memory_space<sram>>) permutation = [1, 0]
// CHECK: nova.transpose ins(%{{.*}} : memref<2x3x4xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<4x2x3xf32, #nova.memory_space<sram>>) permutation = [2, 0, 1]
// CHECK: nova.fill 0.000000e+00 outs(%{{.*}} : memref<64x96xf32, #nova.memory_space<acc>>)
// CHECK: nova.fill 0xFFF0000000000000 outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>)
func.func @transpose_and_fill(%x: !sram, %y: memref<128x64xf32, #nova.memory_space<sram>>,
                              %p: memref<2x3x4xf32, #nova.memory_space<sram>>,
                              %q: memref<4x2x3xf32, #nova.memory_space<sram>>,
                              %acc: memref<64x96xf32, #nova.memory_space<acc>>) {
  nova.transpose ins(%x : !sram) outs(%y : memref<128x64xf32, #nova.memory_space<sram>>) permutation = [1, 0]
  nova.transpose ins(%p : memref<2x3x4xf32, #nova.memory_space<sram>>) outs(%q : memref<4x2x3xf32, #nova.memory_space<sram>>) permutation = [2, 0, 1]
  nova.fill 0.0 outs(%acc : memref<64x96xf32, #nova.memory_space<acc>>)
  nova.fill 0xFFF0000000000000 outs(%x : !sram)
  return
}
