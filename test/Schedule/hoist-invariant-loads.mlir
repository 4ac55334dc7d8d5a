// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-hoist-invariant-loads))' | FileCheck %s

!hbm = memref<128x256xf32, #nova.memory_space<hbm>>

// The activation strip does not depend on the column tile: loaded once.
// CHECK-LABEL: func.func @matmul_strip_loaded_once
// CHECK: %[[A:.*]] = memref.alloc() : memref<16x128xf32, #nova.memory_space<sram>>
// CHECK: %[[T:.*]] = nova.dma_start %{{.*}}, %[[A]]
// CHECK: nova.wait %[[T]]
// CHECK: scf.for
// CHECK-NOT: nova.dma_start %{{.*}}, %[[A]]
// CHECK: nova.dma_start %{{.*}} : memref<128x64xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<128x64xf32, #nova.memory_space<sram>>
// CHECK: nova.matmul ins(%[[A]], %{{.*}}
func.func @matmul_strip_loaded_once(%x: memref<16x128xf32, #nova.memory_space<hbm>>, %w: !hbm,
                                    %acc: memref<16x64xf32, #nova.memory_space<acc>>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  scf.for %j = %c0 to %c256 step %c64 {
    %a = memref.alloc() : memref<16x128xf32, #nova.memory_space<sram>>
    %t0 = nova.dma_start %x, %a : memref<16x128xf32, #nova.memory_space<hbm>> -> memref<16x128xf32, #nova.memory_space<sram>>
    nova.wait %t0
    %wj = memref.subview %w[0, %j] [128, 64] [1, 1] : !hbm to memref<128x64xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>>
    %b = memref.alloc() : memref<128x64xf32, #nova.memory_space<sram>>
    %t1 = nova.dma_start %wj, %b : memref<128x64xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<128x64xf32, #nova.memory_space<sram>>
    nova.wait %t1
    nova.matmul ins(%a, %b : memref<16x128xf32, #nova.memory_space<sram>>, memref<128x64xf32, #nova.memory_space<sram>>) outs(%acc : memref<16x64xf32, #nova.memory_space<acc>>)
  }
  return
}

// The tile is written in the loop after its load: it must be reloaded.
// CHECK-LABEL: func.func @negative_tile_written_in_loop
// CHECK: scf.for
// CHECK: nova.dma_start
// CHECK: nova.elementwise <exp>
func.func @negative_tile_written_in_loop(%x: memref<16x128xf32, #nova.memory_space<hbm>>, %y: memref<16x128xf32, #nova.memory_space<hbm>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.alloc() : memref<16x128xf32, #nova.memory_space<sram>>
    %t0 = nova.dma_start %x, %a : memref<16x128xf32, #nova.memory_space<hbm>> -> memref<16x128xf32, #nova.memory_space<sram>>
    nova.wait %t0
    nova.elementwise <exp> ins(%a : memref<16x128xf32, #nova.memory_space<sram>>) outs(%a : memref<16x128xf32, #nova.memory_space<sram>>)
    %t1 = nova.dma_start %a, %y : memref<16x128xf32, #nova.memory_space<sram>> -> memref<16x128xf32, #nova.memory_space<hbm>>
    nova.wait %t1
  }
  return
}

// The source is written by the loop (an accumulation through HBM): reloaded.
// CHECK-LABEL: func.func @negative_source_written_in_loop
// CHECK: scf.for
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: nova.dma_start
func.func @negative_source_written_in_loop(%x: memref<16x128xf32, #nova.memory_space<hbm>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.alloc() : memref<16x128xf32, #nova.memory_space<sram>>
    %t0 = nova.dma_start %x, %a : memref<16x128xf32, #nova.memory_space<hbm>> -> memref<16x128xf32, #nova.memory_space<sram>>
    nova.wait %t0
    %b = memref.alloc() : memref<16x128xf32, #nova.memory_space<sram>>
    nova.elementwise <add> scalar(1.0) ins(%a : memref<16x128xf32, #nova.memory_space<sram>>) outs(%b : memref<16x128xf32, #nova.memory_space<sram>>)
    %t1 = nova.dma_start %b, %x : memref<16x128xf32, #nova.memory_space<sram>> -> memref<16x128xf32, #nova.memory_space<hbm>>
    nova.wait %t1
  }
  return
}

// The strip's view is computed inside the loop (tiling leaves it there) from
// values defined outside it: the view moves out with its load.
// CHECK-LABEL: func.func @view_inside_the_loop
// CHECK: %[[V:.*]] = memref.subview %{{.*}}[%{{.*}}, 0] [16, 128] [1, 1]
// CHECK: %[[A:.*]] = memref.alloc() : memref<16x128xf32, #nova.memory_space<sram>>
// CHECK: nova.dma_start %[[V]], %[[A]] :
// CHECK: scf.for
// CHECK-NOT: nova.dma_start %{{.*}}, %[[A]] :
// CHECK: return
func.func @view_inside_the_loop(%x: memref<64x128xf32, #nova.memory_space<hbm>>, %w: !hbm,
                                %acc: memref<16x64xf32, #nova.memory_space<acc>>, %row: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  scf.for %j = %c0 to %c256 step %c64 {
    %xs = memref.subview %x[%row, 0] [16, 128] [1, 1] : memref<64x128xf32, #nova.memory_space<hbm>> to memref<16x128xf32, strided<[128, 1], offset: ?>, #nova.memory_space<hbm>>
    %a = memref.alloc() : memref<16x128xf32, #nova.memory_space<sram>>
    %t0 = nova.dma_start %xs, %a : memref<16x128xf32, strided<[128, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<16x128xf32, #nova.memory_space<sram>>
    nova.wait %t0
    %wj = memref.subview %w[0, %j] [128, 64] [1, 1] : !hbm to memref<128x64xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>>
    %b = memref.alloc() : memref<128x64xf32, #nova.memory_space<sram>>
    %t1 = nova.dma_start %wj, %b : memref<128x64xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<128x64xf32, #nova.memory_space<sram>>
    nova.wait %t1
    nova.matmul ins(%a, %b : memref<16x128xf32, #nova.memory_space<sram>>, memref<128x64xf32, #nova.memory_space<sram>>) outs(%acc : memref<16x64xf32, #nova.memory_space<acc>>)
  }
  return
}

// A matmul's output tile in its loop over K panels: each panel loads it,
// adds its partial product and stores it back at the same place. It stays
// in SRAM for the whole loop instead: loaded before, stored after.
// CHECK-LABEL: func.func @output_tile_kept_across_k_panels
// CHECK: %[[C:.*]] = memref.subview %{{.*}}[%{{.*}}, 0] [16, 64] [1, 1]
// CHECK: %[[T:.*]] = memref.alloc() : memref<16x64xf32, #nova.memory_space<sram>>
// CHECK: %[[L:.*]] = nova.dma_start %[[C]], %[[T]]
// CHECK: nova.wait %[[L]]
// CHECK: scf.for
// CHECK-NOT: nova.dma_start %{{.*}}, %[[T]] :
// CHECK: nova.elementwise <add> ins(%[[T]], %{{.*}}) outs(%[[T]] :
// CHECK-NOT: nova.dma_start %[[T]],
// CHECK: }
// CHECK: %[[S:.*]] = nova.dma_start %[[T]], %[[C]]
// CHECK: nova.wait %[[S]]
func.func @output_tile_kept_across_k_panels(%x: memref<16x512xf32, #nova.memory_space<hbm>>, %y: memref<64x64xf32, #nova.memory_space<hbm>>,
                                            %acc: memref<16x64xf32, #nova.memory_space<acc>>, %row: index) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  scf.for %k = %c0 to %c512 step %c128 {
    %xs = memref.subview %x[0, %k] [16, 128] [1, 1] : memref<16x512xf32, #nova.memory_space<hbm>> to memref<16x128xf32, strided<[512, 1], offset: ?>, #nova.memory_space<hbm>>
    %a = memref.alloc() : memref<16x128xf32, #nova.memory_space<sram>>
    %t0 = nova.dma_start %xs, %a : memref<16x128xf32, strided<[512, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<16x128xf32, #nova.memory_space<sram>>
    nova.wait %t0
    %cs = memref.subview %y[%row, 0] [16, 64] [1, 1] : memref<64x64xf32, #nova.memory_space<hbm>> to memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>>
    %c = memref.alloc() : memref<16x64xf32, #nova.memory_space<sram>>
    %t1 = nova.dma_start %cs, %c : memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<16x64xf32, #nova.memory_space<sram>>
    nova.wait %t1
    nova.elementwise <add> ins(%c, %acc : memref<16x64xf32, #nova.memory_space<sram>>, memref<16x64xf32, #nova.memory_space<acc>>) outs(%c : memref<16x64xf32, #nova.memory_space<sram>>)
    %t2 = nova.dma_start %c, %cs : memref<16x64xf32, #nova.memory_space<sram>> -> memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>>
    nova.wait %t2
  }
  return
}

// The loop also reads the place through another view: the tile in HBM must
// stay current, so it is loaded and stored in every iteration.
// CHECK-LABEL: func.func @negative_place_read_elsewhere_in_loop
// CHECK: scf.for
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<16x64xf32, #nova.memory_space<sram>>
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<16x64xf32, #nova.memory_space<sram>> -> memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>>
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<64x64xf32, #nova.memory_space<hbm>> -> memref<64x64xf32, #nova.memory_space<sram>>
// CHECK: }
func.func @negative_place_read_elsewhere_in_loop(%y: memref<64x64xf32, #nova.memory_space<hbm>>,
                                                 %acc: memref<16x64xf32, #nova.memory_space<acc>>, %row: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %k = %c0 to %c4 step %c1 {
    %cs = memref.subview %y[%row, 0] [16, 64] [1, 1] : memref<64x64xf32, #nova.memory_space<hbm>> to memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>>
    %c = memref.alloc() : memref<16x64xf32, #nova.memory_space<sram>>
    %t1 = nova.dma_start %cs, %c : memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<16x64xf32, #nova.memory_space<sram>>
    nova.wait %t1
    nova.elementwise <add> ins(%c, %acc : memref<16x64xf32, #nova.memory_space<sram>>, memref<16x64xf32, #nova.memory_space<acc>>) outs(%c : memref<16x64xf32, #nova.memory_space<sram>>)
    %t2 = nova.dma_start %c, %cs : memref<16x64xf32, #nova.memory_space<sram>> -> memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>>
    nova.wait %t2
    %all = memref.alloc() : memref<64x64xf32, #nova.memory_space<sram>>
    %t3 = nova.dma_start %y, %all : memref<64x64xf32, #nova.memory_space<hbm>> -> memref<64x64xf32, #nova.memory_space<sram>>
    nova.wait %t3
  }
  return
}

// Each iteration updates another tile (the place depends on the induction
// variable): nothing to keep across iterations.
// CHECK-LABEL: func.func @negative_place_moves_with_the_loop
// CHECK: scf.for
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<16x64xf32, #nova.memory_space<sram>>
// CHECK: nova.elementwise <add>
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<16x64xf32, #nova.memory_space<sram>> -> memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>>
// CHECK: }
func.func @negative_place_moves_with_the_loop(%y: memref<64x64xf32, #nova.memory_space<hbm>>,
                                              %acc: memref<16x64xf32, #nova.memory_space<acc>>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.for %r = %c0 to %c64 step %c16 {
    %cs = memref.subview %y[%r, 0] [16, 64] [1, 1] : memref<64x64xf32, #nova.memory_space<hbm>> to memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>>
    %c = memref.alloc() : memref<16x64xf32, #nova.memory_space<sram>>
    %t1 = nova.dma_start %cs, %c : memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<16x64xf32, #nova.memory_space<sram>>
    nova.wait %t1
    nova.elementwise <add> ins(%c, %acc : memref<16x64xf32, #nova.memory_space<sram>>, memref<16x64xf32, #nova.memory_space<acc>>) outs(%c : memref<16x64xf32, #nova.memory_space<sram>>)
    %t2 = nova.dma_start %c, %cs : memref<16x64xf32, #nova.memory_space<sram>> -> memref<16x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<hbm>>
    nova.wait %t2
  }
  return
}

// Two loops reading one HBM operand whole (the parts of a loop that
// nova-interleave-loops split, or a linear's input and weight gradients
// reading its output gradient): the second hoisted load uses the first copy.
// CHECK-LABEL: func.func @split_loop_shares_hoisted_load
// CHECK: %[[A:.*]] = memref.alloc() : memref<256x128xbf16, #nova.memory_space<sram>>
// CHECK: nova.dma_start %{{.*}}, %[[A]] :
// CHECK: scf.for
// CHECK: nova.matmul ins(%[[A]],
// CHECK-NOT: nova.dma_start %arg0,
// CHECK: scf.for
// CHECK: nova.matmul ins(%[[A]],
func.func @split_loop_shares_hoisted_load(%dy: memref<256x128xbf16, #nova.memory_space<hbm>>,
                                          %w: memref<128x512xbf16, #nova.memory_space<hbm>>,
                                          %acc: memref<256x128xf32, #nova.memory_space<acc>>) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  scf.for %j = %c0 to %c256 step %c128 {
    %a = memref.alloc() : memref<256x128xbf16, #nova.memory_space<sram>>
    %t0 = nova.dma_start %dy, %a : memref<256x128xbf16, #nova.memory_space<hbm>> -> memref<256x128xbf16, #nova.memory_space<sram>>
    nova.wait %t0
    %wj = memref.subview %w[0, %j] [128, 128] [1, 1] : memref<128x512xbf16, #nova.memory_space<hbm>> to memref<128x128xbf16, strided<[512, 1], offset: ?>, #nova.memory_space<hbm>>
    %b = memref.alloc() : memref<128x128xbf16, #nova.memory_space<sram>>
    %t1 = nova.dma_start %wj, %b : memref<128x128xbf16, strided<[512, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<128x128xbf16, #nova.memory_space<sram>>
    nova.wait %t1
    nova.matmul ins(%a, %b : memref<256x128xbf16, #nova.memory_space<sram>>, memref<128x128xbf16, #nova.memory_space<sram>>) outs(%acc : memref<256x128xf32, #nova.memory_space<acc>>)
  }
  scf.for %j = %c256 to %c512 step %c128 {
    %a = memref.alloc() : memref<256x128xbf16, #nova.memory_space<sram>>
    %t0 = nova.dma_start %dy, %a : memref<256x128xbf16, #nova.memory_space<hbm>> -> memref<256x128xbf16, #nova.memory_space<sram>>
    nova.wait %t0
    %wj = memref.subview %w[0, %j] [128, 128] [1, 1] : memref<128x512xbf16, #nova.memory_space<hbm>> to memref<128x128xbf16, strided<[512, 1], offset: ?>, #nova.memory_space<hbm>>
    %b = memref.alloc() : memref<128x128xbf16, #nova.memory_space<sram>>
    %t1 = nova.dma_start %wj, %b : memref<128x128xbf16, strided<[512, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<128x128xbf16, #nova.memory_space<sram>>
    nova.wait %t1
    nova.matmul ins(%a, %b : memref<256x128xbf16, #nova.memory_space<sram>>, memref<128x128xbf16, #nova.memory_space<sram>>) outs(%acc : memref<256x128xf32, #nova.memory_space<acc>>)
  }
  return
}

// An op between the two loops writes the operand's buffer: reloaded.
// CHECK-LABEL: func.func @negative_source_written_between
// CHECK-COUNT-2: nova.dma_start %arg0, %{{.*}} : memref<256x128xbf16, #nova.memory_space<hbm>> -> memref<256x128xbf16, #nova.memory_space<sram>>
func.func @negative_source_written_between(%dy: memref<256x128xbf16, #nova.memory_space<hbm>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %o = memref.alloc() : memref<256x128xf32, #nova.memory_space<sram>>
  scf.for %j = %c0 to %c2 step %c1 {
    %a = memref.alloc() : memref<256x128xbf16, #nova.memory_space<sram>>
    %t0 = nova.dma_start %dy, %a : memref<256x128xbf16, #nova.memory_space<hbm>> -> memref<256x128xbf16, #nova.memory_space<sram>>
    nova.wait %t0
    nova.elementwise <copy> ins(%a : memref<256x128xbf16, #nova.memory_space<sram>>) outs(%o : memref<256x128xf32, #nova.memory_space<sram>>)
  }
  %z = memref.alloc() : memref<256x128xbf16, #nova.memory_space<sram>>
  nova.fill 0.000000e+00 outs(%z : memref<256x128xbf16, #nova.memory_space<sram>>)
  %tz = nova.dma_start %z, %dy : memref<256x128xbf16, #nova.memory_space<sram>> -> memref<256x128xbf16, #nova.memory_space<hbm>>
  nova.wait %tz
  scf.for %j = %c0 to %c2 step %c1 {
    %a = memref.alloc() : memref<256x128xbf16, #nova.memory_space<sram>>
    %t0 = nova.dma_start %dy, %a : memref<256x128xbf16, #nova.memory_space<hbm>> -> memref<256x128xbf16, #nova.memory_space<sram>>
    nova.wait %t0
    nova.elementwise <copy> ins(%a : memref<256x128xbf16, #nova.memory_space<sram>>) outs(%o : memref<256x128xf32, #nova.memory_space<sram>>)
  }
  return
}

// An op between the two loops does not use the first copy (it may need the
// SRAM the copy would keep): reloaded.
// CHECK-LABEL: func.func @negative_unrelated_op_between
// CHECK-COUNT-2: nova.dma_start %arg0, %{{.*}} : memref<256x128xbf16, #nova.memory_space<hbm>> -> memref<256x128xbf16, #nova.memory_space<sram>>
func.func @negative_unrelated_op_between(%dy: memref<256x128xbf16, #nova.memory_space<hbm>>,
                                         %x: memref<256x128xbf16, #nova.memory_space<hbm>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %o = memref.alloc() : memref<256x128xf32, #nova.memory_space<sram>>
  scf.for %j = %c0 to %c2 step %c1 {
    %a = memref.alloc() : memref<256x128xbf16, #nova.memory_space<sram>>
    %t0 = nova.dma_start %dy, %a : memref<256x128xbf16, #nova.memory_space<hbm>> -> memref<256x128xbf16, #nova.memory_space<sram>>
    nova.wait %t0
    nova.elementwise <copy> ins(%a : memref<256x128xbf16, #nova.memory_space<sram>>) outs(%o : memref<256x128xf32, #nova.memory_space<sram>>)
  }
  %b = memref.alloc() : memref<256x128xbf16, #nova.memory_space<sram>>
  %tb = nova.dma_start %x, %b : memref<256x128xbf16, #nova.memory_space<hbm>> -> memref<256x128xbf16, #nova.memory_space<sram>>
  nova.wait %tb
  nova.elementwise <copy> ins(%b : memref<256x128xbf16, #nova.memory_space<sram>>) outs(%o : memref<256x128xf32, #nova.memory_space<sram>>)
  scf.for %j = %c0 to %c2 step %c1 {
    %a = memref.alloc() : memref<256x128xbf16, #nova.memory_space<sram>>
    %t0 = nova.dma_start %dy, %a : memref<256x128xbf16, #nova.memory_space<hbm>> -> memref<256x128xbf16, #nova.memory_space<sram>>
    nova.wait %t0
    nova.elementwise <copy> ins(%a : memref<256x128xbf16, #nova.memory_space<sram>>) outs(%o : memref<256x128xf32, #nova.memory_space<sram>>)
  }
  return
}
