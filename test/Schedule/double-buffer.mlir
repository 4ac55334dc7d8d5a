// RUN: nova-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(nova-double-buffer))' | FileCheck %s
// RUN: nova-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(nova-double-buffer,canonicalize))' | FileCheck %s --check-prefix=STATIC

// After canonicalization the two copies address fixed halves of the buffer.
// STATIC-LABEL: func.func @prefetch_row_tiles
// STATIC-DAG: %[[Z:.*]] = arith.constant 0 : index
// STATIC-DAG: %[[H:.*]] = arith.constant 32768 : index
// STATIC: scf.for
// STATIC: memref.view %{{.*}}[%[[Z]]][]
// STATIC: memref.view %{{.*}}[%[[H]]][]
// STATIC: memref.view %{{.*}}[%[[H]]][]
// STATIC: memref.view %{{.*}}[%[[Z]]][]

// The input tile of iteration i+1 is loaded into the other slot of a 2x
// buffer while iteration i computes; the loop carries the token of the
// prefetch and the original wait now waits for it.

// CHECK-LABEL: func.func @prefetch_row_tiles
// CHECK-SAME: (%[[A:.*]]: memref<256x128xf32, #nova.memory_space<hbm>>, %[[OUT:.*]]: memref<256x128xf32, #nova.memory_space<hbm>>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[DB:.*]] = memref.alloc() {alignment = 64 : i64} : memref<65536xi8, #nova.memory_space<sram>>
// CHECK: %[[SRC0:.*]] = memref.subview %[[A]][%[[C0]], 0] [64, 128] [1, 1]
// CHECK: %[[SLOT0:.*]] = memref.view %[[DB]][%{{.*}}][] : memref<65536xi8, #nova.memory_space<sram>> to memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: %[[T0:.*]] = nova.dma_start %[[SRC0]], %[[SLOT0]]
// Unrolled by two, so that each copy uses a fixed slot: copy 0 computes on
// the current slot while the next tile fills the other one, then copy 1 the
// other way round; the token of the pending prefetch is carried around.
// CHECK: %[[LAST:.*]] = scf.for %[[I:.*]] = %[[C0]] to %[[C256]] step %{{.*}} iter_args(%[[T:.*]] = %[[T0]]) -> (!nova.token) {
// CHECK:   %[[CUR0:.*]] = memref.view %[[DB]][%{{.*}}][] : memref<65536xi8, #nova.memory_space<sram>> to memref<64x128xf32, #nova.memory_space<sram>>
// CHECK:   %[[NEXT0:.*]] = memref.view %[[DB]][%{{.*}}][]
// CHECK:   %[[TN0:.*]] = nova.dma_start %{{.*}}, %[[NEXT0]]
// CHECK:   nova.wait %[[T]]
// CHECK:   nova.elementwise <exp> ins(%[[CUR0]] : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK:   %[[CUR1:.*]] = memref.view %[[DB]][%{{.*}}][]
// CHECK:   %[[NEXT1:.*]] = memref.view %[[DB]][%{{.*}}][]
// CHECK:   %[[TN1:.*]] = nova.dma_start %{{.*}}, %[[NEXT1]]
// CHECK:   nova.wait %[[TN0]]
// CHECK:   nova.elementwise <exp> ins(%[[CUR1]] : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK:   scf.yield %[[TN1]] : !nova.token
// CHECK: }
// CHECK: nova.wait %[[LAST]]
// CHECK-NOT: memref.alloc() : memref<64x128xf32, #nova.memory_space<sram>>
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
func.func @prefetch_row_tiles(%a: memref<256x128xf32, #hbm>, %out: memref<256x128xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c64 {
    %src = memref.subview %a[%i, 0] [64, 128] [1, 1] : memref<256x128xf32, #hbm> to memref<64x128xf32, strided<[128, 1], offset: ?>, #hbm>
    %buf = memref.alloc() : memref<64x128xf32, #sram>
    %t = nova.dma_start %src, %buf : memref<64x128xf32, strided<[128, 1], offset: ?>, #hbm> -> memref<64x128xf32, #sram>
    nova.wait %t
    %res = memref.alloc() : memref<64x128xf32, #sram>
    nova.elementwise <exp> ins(%buf : memref<64x128xf32, #sram>) outs(%res : memref<64x128xf32, #sram>)
    %dst = memref.subview %out[%i, 0] [64, 128] [1, 1] : memref<256x128xf32, #hbm> to memref<64x128xf32, strided<[128, 1], offset: ?>, #hbm>
    %t2 = nova.dma_start %res, %dst : memref<64x128xf32, #sram> -> memref<64x128xf32, strided<[128, 1], offset: ?>, #hbm>
    nova.wait %t2
  }
  return
}

// -----

// Both operand strips of a matmul over K are prefetched, and so is a tile
// whose offset is computed from the induction variable by an arith op (the op
// is cloned for the prologue and the next iteration); a tile whose source does
// not depend on the induction variable is loaded as before. Slot sizes are
// rounded up to 64 bytes (3 x f32 = 12 -> 64).

// CHECK-LABEL: func.func @two_inputs_and_invariant
// CHECK-SAME: %[[V:[^:]*]]: memref<12xf32, #nova.memory_space<hbm>>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-COUNT-2: memref.alloc() {alignment = 64 : i64} : memref<2048xi8, #nova.memory_space<sram>>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<128xi8, #nova.memory_space<sram>>
// CHECK: %[[K0:.*]] = arith.divui %[[C0]], %[[C4]] : index
// CHECK: memref.subview %[[V]][%[[K0]]] [3] [1]
// The invariant tile is a buffer of the body: it gets two slots too.
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<2048xi8, #nova.memory_space<sram>>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (!nova.token, !nova.token, !nova.token) {
// CHECK:   %[[NI:.*]] = arith.select
// CHECK:   nova.dma_start %{{.*}}, %{{.*}} : memref<16x16xf32, #nova.memory_space<hbm>> -> memref<16x16xf32, #nova.memory_space<sram>>
// CHECK:   %[[KN:.*]] = arith.divui %[[NI]], %[[C4]] : index
// CHECK:   memref.subview %[[V]][%[[KN]]] [3] [1]
// CHECK:   nova.matmul
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}} : !nova.token, !nova.token, !nova.token
// CHECK: nova.wait %{{.*}}#0, %{{.*}}#1, %{{.*}}#2
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>
func.func @two_inputs_and_invariant(%a: memref<16x64xf32, #hbm>, %b: memref<64x16xf32, #hbm>,
                                    %bias: memref<16x16xf32, #hbm>, %v: memref<12xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %acc = memref.alloc() : memref<16x16xf32, #acc>
  nova.fill 0.0 outs(%acc : memref<16x16xf32, #acc>)
  scf.for %k = %c0 to %c64 step %c16 {
    %sa = memref.subview %a[0, %k] [16, 16] [1, 1] : memref<16x64xf32, #hbm> to memref<16x16xf32, strided<[64, 1], offset: ?>, #hbm>
    %la = memref.alloc() : memref<16x16xf32, #sram>
    %ta = nova.dma_start %sa, %la : memref<16x16xf32, strided<[64, 1], offset: ?>, #hbm> -> memref<16x16xf32, #sram>
    nova.wait %ta
    %sb = memref.subview %b[%k, 0] [16, 16] [1, 1] : memref<64x16xf32, #hbm> to memref<16x16xf32, strided<[16, 1], offset: ?>, #hbm>
    %lb = memref.alloc() : memref<16x16xf32, #sram>
    %tb = nova.dma_start %sb, %lb : memref<16x16xf32, strided<[16, 1], offset: ?>, #hbm> -> memref<16x16xf32, #sram>
    nova.wait %tb
    %inv = memref.alloc() : memref<16x16xf32, #sram>
    %ti = nova.dma_start %bias, %inv : memref<16x16xf32, #hbm> -> memref<16x16xf32, #sram>
    nova.wait %ti
    %kk = arith.divui %k, %c4 : index
    %sv = memref.subview %v[%kk] [3] [1] : memref<12xf32, #hbm> to memref<3xf32, strided<[1], offset: ?>, #hbm>
    %lv = memref.alloc() : memref<3xf32, #sram>
    %tv = nova.dma_start %sv, %lv : memref<3xf32, strided<[1], offset: ?>, #hbm> -> memref<3xf32, #sram>
    nova.wait %tv
    nova.matmul ins(%la, %lb : memref<16x16xf32, #sram>, memref<16x16xf32, #sram>) outs(%acc : memref<16x16xf32, #acc>) accumulate
    nova.elementwise <add> ins(%inv, %inv : memref<16x16xf32, #sram>, memref<16x16xf32, #sram>) outs(%inv : memref<16x16xf32, #sram>)
    nova.elementwise <exp> ins(%lv : memref<3xf32, #sram>) outs(%lv : memref<3xf32, #sram>)
  }
  return
}

// -----

// The source does not depend on the induction variable: nothing to prefetch.

// CHECK-LABEL: func.func @negative_invariant_source
// CHECK-NOT: memref.view
// CHECK: scf.for
// CHECK:   %[[BUF:.*]] = memref.alloc() : memref<32xf32, #nova.memory_space<sram>>
// CHECK:   %[[T:.*]] = nova.dma_start %{{.*}}, %[[BUF]]
// CHECK:   nova.wait %[[T]]
// CHECK-NOT: iter_args
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
func.func @negative_invariant_source(%w: memref<32xf32, #hbm>, %out: memref<4x32xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %buf = memref.alloc() : memref<32xf32, #sram>
    %t = nova.dma_start %w, %buf : memref<32xf32, #hbm> -> memref<32xf32, #sram>
    nova.wait %t
    %dst = memref.subview %out[%i, 0] [1, 32] [1, 1] : memref<4x32xf32, #hbm> to memref<32xf32, strided<[1], offset: ?>, #hbm>
    %t2 = nova.dma_start %buf, %dst : memref<32xf32, #sram> -> memref<32xf32, strided<[1], offset: ?>, #hbm>
    nova.wait %t2
  }
  return
}

// -----

// The loop writes the buffer it reads (in place): reading the next tile early
// could miss nothing here, but the pass cannot tell, so it leaves it alone.

// CHECK-LABEL: func.func @negative_source_written_in_loop
// CHECK-NOT: memref.view
// CHECK: scf.for
// CHECK:   memref.alloc() : memref<32xf32, #nova.memory_space<sram>>
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
func.func @negative_source_written_in_loop(%x: memref<4x32xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %src = memref.subview %x[%i, 0] [1, 32] [1, 1] : memref<4x32xf32, #hbm> to memref<32xf32, strided<[1], offset: ?>, #hbm>
    %buf = memref.alloc() : memref<32xf32, #sram>
    %t = nova.dma_start %src, %buf : memref<32xf32, strided<[1], offset: ?>, #hbm> -> memref<32xf32, #sram>
    nova.wait %t
    nova.elementwise <exp> ins(%buf : memref<32xf32, #sram>) outs(%buf : memref<32xf32, #sram>)
    %t2 = nova.dma_start %buf, %src : memref<32xf32, #sram> -> memref<32xf32, strided<[1], offset: ?>, #hbm>
    nova.wait %t2
  }
  return
}

// -----

// A single iteration has nothing to overlap.

// CHECK-LABEL: func.func @negative_single_iteration
// CHECK-NOT: memref.view
// CHECK: scf.for
// CHECK:   memref.alloc() : memref<32xf32, #nova.memory_space<sram>>
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
func.func @negative_single_iteration(%x: memref<4x32xf32, #hbm>, %out: memref<32xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %src = memref.subview %x[%i, 0] [1, 32] [1, 1] : memref<4x32xf32, #hbm> to memref<32xf32, strided<[1], offset: ?>, #hbm>
    %buf = memref.alloc() : memref<32xf32, #sram>
    %t = nova.dma_start %src, %buf : memref<32xf32, strided<[1], offset: ?>, #hbm> -> memref<32xf32, #sram>
    nova.wait %t
    %t2 = nova.dma_start %buf, %out : memref<32xf32, #sram> -> memref<32xf32, #hbm>
    nova.wait %t2
  }
  return
}

// -----

// The body's own accumulator and output tile get two slots each, so the
// matmul of iteration i+1 does not wait for iteration i's drain and store;
// after unrolling and canonicalization each copy addresses its own half.

// CHECK-LABEL: func.func @local_buffers_two_slots
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<2048xi8, #nova.memory_space<acc>>
// CHECK-DAG: memref.alloc() {alignment = 64 : i64} : memref<2048xi8, #nova.memory_space<sram>>
// CHECK: scf.for
// CHECK-NOT: memref.alloc()
// CHECK: scf.yield
// STATIC-LABEL: func.func @local_buffers_two_slots
// STATIC: %[[ACC:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2048xi8, #nova.memory_space<acc>>
// STATIC: scf.for
// STATIC: memref.view %[[ACC]][%c0{{.*}}][] : memref<2048xi8, #nova.memory_space<acc>> to memref<16x16xf32, #nova.memory_space<acc>>
// STATIC: memref.view %[[ACC]][%c1024{{.*}}][] : memref<2048xi8, #nova.memory_space<acc>> to memref<16x16xf32, #nova.memory_space<acc>>
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
#acc = #nova.memory_space<acc>
func.func @local_buffers_two_slots(%a: memref<16x16xf32, #sram>, %w: memref<64x16xf32, #hbm>, %out: memref<16x64xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.for %n = %c0 to %c64 step %c16 {
    %sw = memref.subview %w[%n, 0] [16, 16] [1, 1] : memref<64x16xf32, #hbm> to memref<16x16xf32, strided<[16, 1], offset: ?>, #hbm>
    %lw = memref.alloc() : memref<16x16xf32, #sram>
    %tw = nova.dma_start %sw, %lw : memref<16x16xf32, strided<[16, 1], offset: ?>, #hbm> -> memref<16x16xf32, #sram>
    nova.wait %tw
    %acc = memref.alloc() : memref<16x16xf32, #acc>
    nova.matmul ins(%a, %lw : memref<16x16xf32, #sram>, memref<16x16xf32, #sram>) outs(%acc : memref<16x16xf32, #acc>)
    %o = memref.alloc() : memref<16x16xf32, #sram>
    nova.elementwise <copy> ins(%acc : memref<16x16xf32, #acc>) outs(%o : memref<16x16xf32, #sram>)
    %so = memref.subview %out[0, %n] [16, 16] [1, 1] : memref<16x64xf32, #hbm> to memref<16x16xf32, strided<[64, 1], offset: ?>, #hbm>
    %to = nova.dma_start %o, %so : memref<16x16xf32, #sram> -> memref<16x16xf32, strided<[64, 1], offset: ?>, #hbm>
    nova.wait %to
  }
  return
}

// -----

// A one-element tile read through a rank-reducing subview is not prefetched:
// its prologue copy at the lower bound would be an all-constant subview that
// MLIR's subview folder asserts on (and a prefetch gains nothing here).

// CHECK-LABEL: func.func @unit_rank_reducing_tile_not_prefetched
// CHECK-NOT: memref.alloc() {alignment = 64 : i64}
// CHECK: scf.for
// STATIC-LABEL: func.func @unit_rank_reducing_tile_not_prefetched
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
func.func @unit_rank_reducing_tile_not_prefetched(%x: memref<1x1x4x4xf32, strided<[64, 64, 4, 1]>, #hbm>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %s = memref.subview %x[0, 0, %i, 0] [1, 1, 1, 1] [1, 1, 1, 1] : memref<1x1x4x4xf32, strided<[64, 64, 4, 1]>, #hbm> to memref<1x1xf32, strided<[64, 64], offset: ?>, #hbm>
    %t = memref.alloc() : memref<1x1xf32, #sram>
    %d = nova.dma_start %s, %t : memref<1x1xf32, strided<[64, 64], offset: ?>, #hbm> -> memref<1x1xf32, #sram>
    nova.wait %d
    nova.elementwise <exp> ins(%t : memref<1x1xf32, #sram>) outs(%t : memref<1x1xf32, #sram>)
  }
  return
}

// -----

// Five iterations: the last has no tile to prefetch, so it is peeled after
// the loop without a prefetch (the loop runs to 256, unrolled by two) and
// each of the five input tiles is loaded exactly once (the prologue's, two
// per unrolled iteration); the peeled iteration waits for the token the loop
// returns. With an even trip count of four or more (@prefetch_row_tiles)
// the last prefetch is clamped instead, which adds no copy of the body.

// CHECK-LABEL: func.func @peel_last_iteration_odd_trips
// CHECK: scf.for
// CHECK: scf.yield
// CHECK: nova.elementwise <exp>
// STATIC-LABEL: func.func @peel_last_iteration_odd_trips
// STATIC-SAME: (%[[A:[^:]*]]: memref<320x128xf32, #nova.memory_space<hbm>>
// STATIC: nova.dma_start %{{.*}}
// STATIC: %[[LAST:.*]] = scf.for %{{.*}} = %{{.*}} to %c256{{.*}} step %c128{{.*}} iter_args
// STATIC: memref.subview %[[A]]
// STATIC: nova.dma_start
// STATIC: nova.elementwise <exp>
// STATIC: memref.subview %[[A]]
// STATIC: nova.dma_start
// STATIC: nova.elementwise <exp>
// STATIC: scf.yield
// STATIC-NOT: memref.subview %[[A]]
// STATIC: nova.wait %[[LAST]]
// STATIC-NEXT: memref.view
// STATIC-NEXT: nova.elementwise <exp>
// STATIC-NOT: memref.subview %[[A]]
// STATIC: return
#hbm = #nova.memory_space<hbm>
#sram = #nova.memory_space<sram>
func.func @peel_last_iteration_odd_trips(%a: memref<320x128xf32, #hbm>, %out: memref<320x128xf32, #hbm>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c320 = arith.constant 320 : index
  scf.for %i = %c0 to %c320 step %c64 {
    %src = memref.subview %a[%i, 0] [64, 128] [1, 1] : memref<320x128xf32, #hbm> to memref<64x128xf32, strided<[128, 1], offset: ?>, #hbm>
    %buf = memref.alloc() : memref<64x128xf32, #sram>
    %t = nova.dma_start %src, %buf : memref<64x128xf32, strided<[128, 1], offset: ?>, #hbm> -> memref<64x128xf32, #sram>
    nova.wait %t
    %res = memref.alloc() : memref<64x128xf32, #sram>
    nova.elementwise <exp> ins(%buf : memref<64x128xf32, #sram>) outs(%res : memref<64x128xf32, #sram>)
    %dst = memref.subview %out[%i, 0] [64, 128] [1, 1] : memref<320x128xf32, #hbm> to memref<64x128xf32, strided<[128, 1], offset: ?>, #hbm>
    %t2 = nova.dma_start %res, %dst : memref<64x128xf32, #sram> -> memref<64x128xf32, strided<[128, 1], offset: ?>, #hbm>
    nova.wait %t2
  }
  return
}
