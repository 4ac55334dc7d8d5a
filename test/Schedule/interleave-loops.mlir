// RUN: nova-opt %s --split-input-file --nova-interleave-loops | FileCheck %s

#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>

// A matmul loop (2 tiles, 640 cycles of the 128 x 128 array without a
// target) and an independent exp loop (4 tiles, 640 cycles of the 128 vector
// lanes), on other buffers: one fused loop over 2 iterations, each a matmul
// tile and a nested loop over 2 exp tiles (iterations 2 * j + k). The exp
// loop's buffer (allocated between the loops) moves in front.
// CHECK-LABEL: func.func @matmul_and_exp
// CHECK: memref.alloc() : memref<4x128x160xf32, #nova.memory_space<sram>>
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:   nova.matmul
// CHECK:   %[[BASE:.*]] = arith.muli %[[J]], %{{.*}} : index
// CHECK:   scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:     %[[IDX:.*]] = arith.addi %[[BASE]], %[[K]] : index
// CHECK:     arith.muli %[[IDX]], %{{.*}} : index
// CHECK:     nova.elementwise <exp>
// CHECK:   }
// CHECK-NEXT: }
// CHECK-NOT: scf.for
// CHECK: return %{{.*}}, %{{.*}}
func.func @matmul_and_exp() -> (memref<2x128x128xf32, #acc>, memref<4x128x160xf32, #sram>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %xt = memref.alloc() : memref<128x320xf32, #sram>
  %wt = memref.alloc() : memref<320x128xf32, #sram>
  %y = memref.alloc() : memref<2x128x128xf32, #acc>
  scf.for %i = %c0 to %c2 step %c1 {
    %ys = memref.subview %y[%i, 0, 0] [1, 128, 128] [1, 1, 1] : memref<2x128x128xf32, #acc> to memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>
    nova.matmul ins(%xt, %wt : memref<128x320xf32, #sram>, memref<320x128xf32, #sram>) outs(%ys : memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>)
  }
  %e = memref.alloc() : memref<4x128x160xf32, #sram>
  scf.for %k = %c0 to %c4 step %c1 {
    %es = memref.subview %e[%k, 0, 0] [1, 128, 160] [1, 1, 1] : memref<4x128x160xf32, #sram> to memref<128x160xf32, strided<[160, 1], offset: ?>, #sram>
    nova.elementwise <exp> ins(%es : memref<128x160xf32, strided<[160, 1], offset: ?>, #sram>) outs(%es : memref<128x160xf32, strided<[160, 1], offset: ?>, #sram>)
  }
  return %y, %e : memref<2x128x128xf32, #acc>, memref<4x128x160xf32, #sram>
}

// -----

#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>

// The exp loop reads the matmul's result %y (a RAW dependence): no fusion,
// though the two are bound on different engines and as long (128 cycles).
// CHECK-LABEL: func.func @dependent_not_fused
// CHECK: scf.for
// CHECK-NEXT: nova.matmul
// CHECK-NEXT: }
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: scf.for
// CHECK: nova.elementwise <exp>
func.func @dependent_not_fused() -> memref<128x128xf32, #sram> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %xt = memref.alloc() : memref<128x64xf32, #sram>
  %wt = memref.alloc() : memref<64x128xf32, #sram>
  %y = memref.alloc() : memref<128x128xf32, #acc>
  scf.for %i = %c0 to %c2 step %c1 {
    nova.matmul ins(%xt, %wt : memref<128x64xf32, #sram>, memref<64x128xf32, #sram>) outs(%y : memref<128x128xf32, #acc>)
  }
  %e = memref.alloc() : memref<128x128xf32, #sram>
  scf.for %k = %c0 to %c128 step %c32 {
    %ys = memref.subview %y[%k, 0] [32, 128] [1, 1] : memref<128x128xf32, #acc> to memref<32x128xf32, strided<[128, 1], offset: ?>, #acc>
    %es = memref.subview %e[%k, 0] [32, 128] [1, 1] : memref<128x128xf32, #sram> to memref<32x128xf32, strided<[128, 1], offset: ?>, #sram>
    nova.elementwise <exp> ins(%ys : memref<32x128xf32, strided<[128, 1], offset: ?>, #acc>) outs(%es : memref<32x128xf32, strided<[128, 1], offset: ?>, #sram>)
  }
  return %e : memref<128x128xf32, #sram>
}

// -----

#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>

// Two exp loops: both bound on the vector unit, nothing to overlap.
// CHECK-LABEL: func.func @same_engine_not_fused
// CHECK: scf.for
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: nova.elementwise <exp>
// CHECK-NEXT: }
// CHECK-NEXT: scf.for
func.func @same_engine_not_fused(%a: memref<8x8xf32, #hbm>, %b: memref<8x8xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %t = memref.alloc() : memref<8x8xf32, #sram>
    nova.elementwise <exp> ins(%t : memref<8x8xf32, #sram>) outs(%t : memref<8x8xf32, #sram>)
  }
  scf.for %i = %c0 to %c2 step %c1 {
    %t = memref.alloc() : memref<8x8xf32, #sram>
    nova.elementwise <exp> ins(%t : memref<8x8xf32, #sram>) outs(%t : memref<8x8xf32, #sram>)
  }
  return
}

// -----

#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>

// The matmul loop takes twice as long as the exp loop: the exp loop fuses
// with its first 2 iterations (two exp tiles each), and its last 2 follow in
// a loop of their own, free to fuse with a later op.
// CHECK-LABEL: func.func @long_matmul_keeps_a_tail
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[C2]] step %{{.*}} {
// CHECK:   nova.matmul
// CHECK:   nova.elementwise <exp>
// CHECK:   }
// CHECK-NEXT: }
// CHECK-NEXT: %[[TAIL:.*]] = arith.constant 2 : index
// CHECK-NEXT: scf.for %{{.*}} = %[[TAIL]] to %[[C4]] step %{{.*}} {
// CHECK-NEXT:   memref.subview
// CHECK-NEXT:   nova.matmul
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @long_matmul_keeps_a_tail() -> (memref<4x128x128xf32, #acc>, memref<4x128x160xf32, #sram>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %xt = memref.alloc() : memref<128x320xf32, #sram>
  %wt = memref.alloc() : memref<320x128xf32, #sram>
  %y = memref.alloc() : memref<4x128x128xf32, #acc>
  scf.for %i = %c0 to %c4 step %c1 {
    %ys = memref.subview %y[%i, 0, 0] [1, 128, 128] [1, 1, 1] : memref<4x128x128xf32, #acc> to memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>
    nova.matmul ins(%xt, %wt : memref<128x320xf32, #sram>, memref<320x128xf32, #sram>) outs(%ys : memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>)
  }
  %e = memref.alloc() : memref<4x128x160xf32, #sram>
  scf.for %k = %c0 to %c4 step %c1 {
    %es = memref.subview %e[%k, 0, 0] [1, 128, 160] [1, 1, 1] : memref<4x128x160xf32, #sram> to memref<128x160xf32, strided<[160, 1], offset: ?>, #sram>
    nova.elementwise <exp> ins(%es : memref<128x160xf32, strided<[160, 1], offset: ?>, #sram>) outs(%es : memref<128x160xf32, strided<[160, 1], offset: ?>, #sram>)
  }
  return %y, %e : memref<4x128x128xf32, #acc>, memref<4x128x160xf32, #sram>
}

// -----

#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>

// A loop with a collective keeps its place: every chip must issue
// collectives in one order.
// CHECK-LABEL: func.func @collective_not_fused
// CHECK: scf.for
// CHECK-NEXT: nova.matmul
// CHECK-NEXT: }
// CHECK-NEXT: scf.for
// CHECK-NEXT: nova.all_reduce
func.func @collective_not_fused(%p: memref<4x1024xf32, #hbm>, %r: memref<4x1024xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %xt = memref.alloc() : memref<128x320xf32, #sram>
  %wt = memref.alloc() : memref<320x128xf32, #sram>
  %y = memref.alloc() : memref<128x128xf32, #acc>
  scf.for %i = %c0 to %c4 step %c1 {
    nova.matmul ins(%xt, %wt : memref<128x320xf32, #sram>, memref<320x128xf32, #sram>) outs(%y : memref<128x128xf32, #acc>)
  }
  scf.for %k = %c0 to %c4 step %c1 {
    %t = nova.all_reduce <sum> ins(%p : memref<4x1024xf32, #hbm>) outs(%r : memref<4x1024xf32, #hbm>) groups [[0, 1]]
    nova.wait %t
  }
  return
}

// -----

#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>

// Both loops are bound on the matrix unit, but the second is balanced: its
// exp epilogue takes as long as its matmul (128 cycles a tile each), so
// the first loop's matmuls fill its matrix unit's gaps: fused (the first
// loop's 4 x 320 cycles against 4 x 128: 2 of its iterations, each beside
// 2 of the second's).
// CHECK-LABEL: func.func @balanced_loop_fused
// CHECK: scf.for
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x320xf32, #nova.memory_space<sram>>
// CHECK: scf.for
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x128xf32, #nova.memory_space<sram>>
// CHECK: nova.elementwise <exp>
// CHECK: }
// CHECK-NEXT: }
// CHECK: scf.for %{{.*}} = %{{.*}} to %c4
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x320xf32, #nova.memory_space<sram>>
func.func @balanced_loop_fused() -> (memref<4x128x128xf32, #acc>, memref<4x128x128xf32, #sram>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %xt = memref.alloc() : memref<128x320xf32, #sram>
  %wt = memref.alloc() : memref<320x128xf32, #sram>
  %y = memref.alloc() : memref<4x128x128xf32, #acc>
  scf.for %i = %c0 to %c4 step %c1 {
    %ys = memref.subview %y[%i, 0, 0] [1, 128, 128] [1, 1, 1] : memref<4x128x128xf32, #acc> to memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>
    nova.matmul ins(%xt, %wt : memref<128x320xf32, #sram>, memref<320x128xf32, #sram>) outs(%ys : memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>)
  }
  %a = memref.alloc() : memref<128x128xf32, #sram>
  %e = memref.alloc() : memref<4x128x128xf32, #sram>
  scf.for %k = %c0 to %c4 step %c1 {
    %acc = memref.alloc() : memref<128x128xf32, #acc>
    nova.matmul ins(%a, %a : memref<128x128xf32, #sram>, memref<128x128xf32, #sram>) outs(%acc : memref<128x128xf32, #acc>)
    %es = memref.subview %e[%k, 0, 0] [1, 128, 128] [1, 1, 1] : memref<4x128x128xf32, #sram> to memref<128x128xf32, strided<[128, 1], offset: ?>, #sram>
    nova.elementwise <exp> ins(%acc : memref<128x128xf32, #acc>) outs(%es : memref<128x128xf32, strided<[128, 1], offset: ?>, #sram>)
  }
  return %y, %e : memref<4x128x128xf32, #acc>, memref<4x128x128xf32, #sram>
}

// -----

#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>

// The same with an epilogue of half the matmul's length (64 x 128
// elements): both loops are bound on the matrix unit, nothing to fill.
// CHECK-LABEL: func.func @unbalanced_matmul_loops_not_fused
// CHECK: scf.for
// CHECK-NEXT: memref.subview
// CHECK-NEXT: nova.matmul
// CHECK-NEXT: }
func.func @unbalanced_matmul_loops_not_fused() -> (memref<4x128x128xf32, #acc>, memref<4x64x128xf32, #sram>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %xt = memref.alloc() : memref<128x320xf32, #sram>
  %wt = memref.alloc() : memref<320x128xf32, #sram>
  %y = memref.alloc() : memref<4x128x128xf32, #acc>
  scf.for %i = %c0 to %c4 step %c1 {
    %ys = memref.subview %y[%i, 0, 0] [1, 128, 128] [1, 1, 1] : memref<4x128x128xf32, #acc> to memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>
    nova.matmul ins(%xt, %wt : memref<128x320xf32, #sram>, memref<320x128xf32, #sram>) outs(%ys : memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>)
  }
  %a = memref.alloc() : memref<128x128xf32, #sram>
  %e = memref.alloc() : memref<4x64x128xf32, #sram>
  scf.for %k = %c0 to %c4 step %c1 {
    %acc = memref.alloc() : memref<128x128xf32, #acc>
    nova.matmul ins(%a, %a : memref<128x128xf32, #sram>, memref<128x128xf32, #sram>) outs(%acc : memref<128x128xf32, #acc>)
    %half = memref.subview %acc[0, 0] [64, 128] [1, 1] : memref<128x128xf32, #acc> to memref<64x128xf32, strided<[128, 1]>, #acc>
    %es = memref.subview %e[%k, 0, 0] [1, 64, 128] [1, 1, 1] : memref<4x64x128xf32, #sram> to memref<64x128xf32, strided<[128, 1], offset: ?>, #sram>
    nova.elementwise <exp> ins(%half : memref<64x128xf32, strided<[128, 1]>, #acc>) outs(%es : memref<64x128xf32, strided<[128, 1], offset: ?>, #sram>)
  }
  return %y, %e : memref<4x128x128xf32, #acc>, memref<4x64x128xf32, #sram>
}

// -----

#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>

// A DMA-bound loop (a bias gradient: a tile loaded and summed over rows)
// beside a matmul loop of about its length (4 x 320 cycles each): fused,
// its loads beside the matmuls.
// CHECK-LABEL: func.func @dma_bound_loop_fused
// CHECK: scf.for
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.addi
// CHECK-NEXT: memref.subview
// CHECK-NEXT: nova.matmul
// CHECK: nova.dma_start
// CHECK: nova.reduce <sum>
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @dma_bound_loop_fused(%dy: memref<4x32x128xf32, #hbm>) -> (memref<4x128x128xf32, #acc>, memref<4x1x128xf32, #sram>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %xt = memref.alloc() : memref<128x320xf32, #sram>
  %wt = memref.alloc() : memref<320x128xf32, #sram>
  %y = memref.alloc() : memref<4x128x128xf32, #acc>
  scf.for %i = %c0 to %c4 step %c1 {
    %ys = memref.subview %y[%i, 0, 0] [1, 128, 128] [1, 1, 1] : memref<4x128x128xf32, #acc> to memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>
    nova.matmul ins(%xt, %wt : memref<128x320xf32, #sram>, memref<320x128xf32, #sram>) outs(%ys : memref<128x128xf32, strided<[128, 1], offset: ?>, #acc>)
  }
  %db = memref.alloc() : memref<4x1x128xf32, #sram>
  scf.for %k = %c0 to %c4 step %c1 {
    %src = memref.subview %dy[%k, 0, 0] [1, 32, 128] [1, 1, 1] : memref<4x32x128xf32, #hbm> to memref<32x128xf32, strided<[128, 1], offset: ?>, #hbm>
    %t = memref.alloc() : memref<32x128xf32, #sram>
    %tok = nova.dma_start %src, %t : memref<32x128xf32, strided<[128, 1], offset: ?>, #hbm> -> memref<32x128xf32, #sram>
    nova.wait %tok
    %out = memref.subview %db[%k, 0, 0] [1, 1, 128] [1, 1, 1] : memref<4x1x128xf32, #sram> to memref<1x128xf32, strided<[128, 1], offset: ?>, #sram>
    nova.reduce <sum> ins(%t : memref<32x128xf32, #sram>) outs(%out : memref<1x128xf32, strided<[128, 1], offset: ?>, #sram>) dim 0
  }
  return %y, %db : memref<4x128x128xf32, #acc>, memref<4x1x128xf32, #sram>
}
