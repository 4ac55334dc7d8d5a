// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(nova-attach-target{target=tiny},func.func(nova-interleave-loops))' | FileCheck %s

// nova-interleave-loops' SRAM budget on `tiny` (16 KiB of SRAM): a matmul
// loop (80 tiles of 32 x 8 x 8: 2560 array cycles) and an independent exp
// loop (4 tiles: 2560 vector cycles) whose nest allocates a tile of 8 x 320
// f32 (10240 bytes).

#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>

// 10240 bytes fit once but not twice: the loops fuse (4 iterations of 20
// matmul tiles and one exp tile). nova-double-buffer gives second slots only
// to what still fits; the engines overlap either way.
// CHECK-LABEL: func.func @fits_once_not_twice
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c4{{.*}} step %c1
// CHECK: scf.for
// CHECK: nova.matmul
// CHECK: nova.elementwise <exp>
// CHECK-NOT: scf.for
// CHECK: return
func.func @fits_once_not_twice(%xt: memref<32x8xf32, #sram>, %wt: memref<8x8xf32, #sram>, %acc: memref<32x8xf32, #acc>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c80 = arith.constant 80 : index
  scf.for %i = %c0 to %c80 step %c1 {
    nova.matmul ins(%xt, %wt : memref<32x8xf32, #sram>, memref<8x8xf32, #sram>) outs(%acc : memref<32x8xf32, #acc>)
  }
  scf.for %k = %c0 to %c4 step %c1 {
    %t = memref.alloc() : memref<8x320xf32, #sram>
    nova.fill 1.0 outs(%t : memref<8x320xf32, #sram>)
    nova.elementwise <exp> ins(%t : memref<8x320xf32, #sram>) outs(%t : memref<8x320xf32, #sram>)
  }
  return
}

// -----

#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>

// A tile of 8 x 640 f32 (20480 bytes) does not fit even once: the loops stay
// apart.
// CHECK-LABEL: func.func @negative_does_not_fit_once
// CHECK: scf.for
// CHECK-NEXT: nova.matmul
// CHECK-NEXT: }
// CHECK: scf.for
// CHECK: nova.elementwise <exp>
func.func @negative_does_not_fit_once(%xt: memref<32x8xf32, #sram>, %wt: memref<8x8xf32, #sram>, %acc: memref<32x8xf32, #acc>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c160 = arith.constant 160 : index
  scf.for %i = %c0 to %c160 step %c1 {
    nova.matmul ins(%xt, %wt : memref<32x8xf32, #sram>, memref<8x8xf32, #sram>) outs(%acc : memref<32x8xf32, #acc>)
  }
  scf.for %k = %c0 to %c4 step %c1 {
    %t = memref.alloc() : memref<8x640xf32, #sram>
    nova.fill 1.0 outs(%t : memref<8x640xf32, #sram>)
    nova.elementwise <exp> ins(%t : memref<8x640xf32, #sram>) outs(%t : memref<8x640xf32, #sram>)
  }
  return
}
