// RUN: nova-opt %s | nova-opt | FileCheck %s
// RUN: nova-opt %s -mlir-print-op-generic | nova-opt | FileCheck %s

// Round trip of nova.reduce through the custom and the generic form.

!hbm = memref<64x128xf32, #nova.memory_space<hbm>>
!sram = memref<64x128xf32, #nova.memory_space<sram>>

// CHECK-LABEL: func.func @softmax_row_reductions
// CHECK: nova.reduce <max> ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x1xf32, #nova.memory_space<sram>>) dim 1
// CHECK: nova.reduce <sum> ins(
// CHECK: nova.reduce <avg> ins(
// CHECK: nova.reduce <min> ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<acc>>) outs(%{{.*}} : memref<1x128xf32, #nova.memory_space<sram>>) dim 0
func.func @softmax_row_reductions(%x: !sram, %m: memref<64x1xf32, #nova.memory_space<sram>>,
                                  %acc: memref<64x128xf32, #nova.memory_space<acc>>,
                                  %col: memref<1x128xf32, #nova.memory_space<sram>>) {
  nova.reduce <max> ins(%x : !sram) outs(%m : memref<64x1xf32, #nova.memory_space<sram>>) dim 1
  nova.reduce <sum> ins(%x : !sram) outs(%m : memref<64x1xf32, #nova.memory_space<sram>>) dim 1
  nova.reduce <avg> ins(%x : !sram) outs(%m : memref<64x1xf32, #nova.memory_space<sram>>) dim 1
  nova.reduce <min> ins(%acc : memref<64x128xf32, #nova.memory_space<acc>>) outs(%col : memref<1x128xf32, #nova.memory_space<sram>>) dim 0
  return
}

// Float types mix: a bf16 tile reduced into f32 (read as f32, summed in f32).
// CHECK-LABEL: func.func @reduce_bf16_into_f32
// CHECK: nova.reduce <sum> ins(%{{.*}} : memref<64x128xbf16, #nova.memory_space<sram>>) outs(%{{.*}} : memref<1x128xf32, #nova.memory_space<sram>>) dim 0
func.func @reduce_bf16_into_f32(%x: memref<64x128xbf16, #nova.memory_space<sram>>, %y: memref<1x128xf32, #nova.memory_space<sram>>) {
  nova.reduce <sum> ins(%x : memref<64x128xbf16, #nova.memory_space<sram>>) outs(%y : memref<1x128xf32, #nova.memory_space<sram>>) dim 0
  return
}
