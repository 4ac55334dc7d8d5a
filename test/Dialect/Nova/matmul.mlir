// RUN: nova-opt %s | nova-opt | FileCheck %s
// RUN: nova-opt %s -mlir-print-op-generic | nova-opt | FileCheck %s

// Round trip of nova.matmul through the custom and the generic form.

!hbm = memref<64x128xf32, #nova.memory_space<hbm>>
!sram = memref<64x128xf32, #nova.memory_space<sram>>

// CHECK-LABEL: func.func @matmul_overwrite_and_accumulate
// CHECK-SAME: (%[[A:.*]]: memref<64x128xbf16, #nova.memory_space<sram>>, %[[B:.*]]: memref<128x96xbf16, #nova.memory_space<sram>>, %[[C:.*]]: memref<64x96xf32, #nova.memory_space<acc>>)
// CHECK: nova.matmul ins(%[[A]], %[[B]] : memref<64x128xbf16, #nova.memory_space<sram>>, memref<128x96xbf16, #nova.memory_space<sram>>) outs(%[[C]] : memref<64x96xf32, #nova.memory_space<acc>>){{$}}
// CHECK: nova.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[C]] : {{.*}}) accumulate
func.func @matmul_overwrite_and_accumulate(%a: memref<64x128xbf16, #nova.memory_space<sram>>,
                                           %b: memref<128x96xbf16, #nova.memory_space<sram>>,
                                           %c: memref<64x96xf32, #nova.memory_space<acc>>) {
  nova.matmul ins(%a, %b : memref<64x128xbf16, #nova.memory_space<sram>>, memref<128x96xbf16, #nova.memory_space<sram>>)
              outs(%c : memref<64x96xf32, #nova.memory_space<acc>>)
  nova.matmul ins(%a, %b : memref<64x128xbf16, #nova.memory_space<sram>>, memref<128x96xbf16, #nova.memory_space<sram>>)
              outs(%c : memref<64x96xf32, #nova.memory_space<acc>>) accumulate
  return
}
