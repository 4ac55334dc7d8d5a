// RUN: nova-opt %s --nova-forward-copies -split-input-file | FileCheck %s

!a = memref<64x128xbf16, #nova.memory_space<sram>>
!b = memref<128x128xbf16, #nova.memory_space<sram>>
!acc = memref<64x128xf32, #nova.memory_space<acc>>
!t = memref<64x128xf32, #nova.memory_space<sram>>
!row = memref<1x128xf32, #nova.memory_space<sram>>
!h = memref<64x128xf32, #nova.memory_space<hbm>>

// A matmul's bias epilogue: the add reads the accumulator (no drain copy)
// and writes the staged output (no copy into it).
// CHECK-LABEL: func.func @matmul_bias_epilogue
// CHECK-SAME: (%[[A:.*]]: memref<64x128xbf16, {{.*}}>, %[[B:.*]]: memref<128x128xbf16, {{.*}}>, %[[BIAS:.*]]: memref<1x128xf32, {{.*}}>, %[[OUT:.*]]: memref<64x128xf32, #nova.memory_space<hbm>>)
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<acc>>
// CHECK: %[[ST:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: nova.matmul ins(%[[A]], %[[B]] : {{.*}}) outs(%[[ACC]] : {{.*}})
// CHECK-NOT: <copy>
// CHECK: nova.elementwise <add> ins(%[[ACC]], %[[BIAS]] : memref<64x128xf32, #nova.memory_space<acc>>, memref<1x128xf32, #nova.memory_space<sram>>) outs(%[[ST]] : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK-NOT: <copy>
// CHECK: nova.dma_start %[[ST]], %[[OUT]]
func.func @matmul_bias_epilogue(%a: !a, %b: !b, %bias: !row, %out: !h) {
  %acc = memref.alloc() : !acc
  %st = memref.alloc() : !t
  nova.matmul ins(%a, %b : !a, !b) outs(%acc : !acc)
  %d = memref.alloc() : !t
  nova.elementwise <copy> ins(%acc : !acc) outs(%d : !t)
  %s = memref.alloc() : !t
  nova.elementwise <add> ins(%d, %bias : !t, !row) outs(%s : !t)
  nova.elementwise <copy> ins(%s : !t) outs(%st : !t)
  %tok = nova.dma_start %st, %out : !t -> !h
  nova.wait %tok
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!tb = memref<64x128xbf16, #nova.memory_space<sram>>

// A copy that rounds an f32 op's result to bf16: the op writes the bf16
// tile (the unit rounds its f32 result to the output's type).
// CHECK-LABEL: func.func @rounding_copy
// CHECK-NOT: memref.alloc
// CHECK: nova.elementwise <exp> ins(%arg0 : memref<64x128xf32, #nova.memory_space<sram>>) outs(%arg1 : memref<64x128xbf16, #nova.memory_space<sram>>)
// CHECK-NOT: <copy>
func.func @rounding_copy(%x: !t, %y: !tb) {
  %e = memref.alloc() : !t
  nova.elementwise <exp> ins(%x : !t) outs(%e : !t)
  nova.elementwise <copy> ins(%e : !t) outs(%y : !tb)
  return
}

// -----

!i = memref<64x128xi32, #nova.memory_space<sram>>
!t = memref<64x128xf32, #nova.memory_space<sram>>
!h = memref<64x128xf16, #nova.memory_space<sram>>
!tb = memref<64x128xbf16, #nova.memory_space<sram>>
!col = memref<64x1xf32, #nova.memory_space<sram>>
!colb = memref<64x1xbf16, #nova.memory_space<sram>>

// Roundings that stay: an integer converted to f32 then to bf16 is rounded
// twice, which one conversion would not do; an f16 result rounded to bf16
// is too; a reduction writes its input's type.
// CHECK-LABEL: func.func @negative_rounding_copies
// CHECK-COUNT-3: nova.elementwise <copy>
// CHECK: nova.reduce
// CHECK: nova.elementwise <copy>
func.func @negative_rounding_copies(%n: !i, %x: !t, %a: !tb, %b: !tb, %c: !colb) {
  %w = memref.alloc() : !t
  nova.elementwise <copy> ins(%n : !i) outs(%w : !t)
  nova.elementwise <copy> ins(%w : !t) outs(%a : !tb)
  %e = memref.alloc() : !h
  nova.elementwise <exp> ins(%x : !t) outs(%e : !h)
  nova.elementwise <copy> ins(%e : !h) outs(%b : !tb)
  %r = memref.alloc() : !col
  nova.reduce <sum> ins(%x : !t) outs(%r : !col) dim 1
  nova.elementwise <copy> ins(%r : !col) outs(%c : !colb)
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>

// The source is overwritten before the copy's reader runs: the reader must
// read the copy.
// CHECK-LABEL: func.func @negative_source_overwritten
// CHECK: nova.elementwise <copy> ins(%[[X:.*]] : {{.*}}) outs(%[[D:.*]] : {{.*}})
// CHECK: nova.fill 0.000000e+00 outs(%[[X]]
// CHECK: nova.elementwise <exp> ins(%[[D]] :
func.func @negative_source_overwritten(%x: !t, %y: !t) {
  %d = memref.alloc() : !t
  nova.elementwise <copy> ins(%x : !t) outs(%d : !t)
  nova.fill 0.0 outs(%x : !t)
  nova.elementwise <exp> ins(%d : !t) outs(%y : !t)
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!h = memref<64x128xf32, #nova.memory_space<hbm>>

// A DMA reads the copy: it stays (only vector-unit readers are redirected).
// CHECK-LABEL: func.func @negative_dma_reader
// CHECK: nova.elementwise <copy>
// CHECK: nova.dma_start
func.func @negative_dma_reader(%x: !t, %out: !h) {
  %d = memref.alloc() : !t
  nova.elementwise <copy> ins(%x : !t) outs(%d : !t)
  %tok = nova.dma_start %d, %out : !t -> !h
  nova.wait %tok
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!h = memref<64x128xf32, #nova.memory_space<hbm>>

// The destination's old value is read (sent to HBM) between the producer
// and the copy: the producer must not write it early.
// CHECK-LABEL: func.func @negative_destination_read_between
// CHECK: nova.elementwise <exp> ins(%{{.*}}) outs(%[[E:.*]] : memref
// CHECK: nova.dma_start %[[Y:.*]], %{{.*}} :
// CHECK: nova.elementwise <copy> ins(%[[E]] : {{.*}}) outs(%[[Y]] :
func.func @negative_destination_read_between(%x: !t, %y: !t, %out: !h) {
  %e = memref.alloc() : !t
  nova.elementwise <exp> ins(%x : !t) outs(%e : !t)
  %tok = nova.dma_start %y, %out : !t -> !h
  nova.wait %tok
  nova.elementwise <copy> ins(%e : !t) outs(%y : !t)
  return
}

// -----

!s = memref<64x64xf32, #nova.memory_space<sram>>

// The producer reads the destination through a transposed view: writing it
// in place would overwrite elements still to be read.
// CHECK-LABEL: func.func @negative_producer_reads_other_view
// CHECK: nova.elementwise <add> ins(%{{.*}}, %{{.*}}) outs(%[[E:.*]] : memref
// CHECK: nova.elementwise <copy> ins(%[[E]]
func.func @negative_producer_reads_other_view(%x: !s, %y: !s) {
  %yt = memref.transpose %y (d0, d1) -> (d1, d0) : !s to memref<64x64xf32, strided<[1, 64]>, #nova.memory_space<sram>>
  %e = memref.alloc() : !s
  nova.elementwise <add> ins(%x, %yt : !s, memref<64x64xf32, strided<[1, 64]>, #nova.memory_space<sram>>) outs(%e : !s)
  nova.elementwise <copy> ins(%e : !s) outs(%y : !s)
  return
}

// -----

!s = memref<64x64xf32, #nova.memory_space<sram>>

// An in-place update (the destination read element for element): the
// producer writes it directly.
// CHECK-LABEL: func.func @in_place_update
// CHECK-SAME: (%[[X:.*]]: memref<64x64xf32, {{.*}}>, %[[Y:.*]]: memref<64x64xf32, {{.*}}>)
// CHECK: nova.elementwise <sub> ins(%[[Y]], %[[X]] : {{.*}}) outs(%[[Y]] :
// CHECK-NOT: <copy>
func.func @in_place_update(%x: !s, %y: !s) {
  %e = memref.alloc() : !s
  nova.elementwise <sub> ins(%y, %x : !s, !s) outs(%e : !s)
  nova.elementwise <copy> ins(%e : !s) outs(%y : !s)
  return
}

// -----

!a = memref<64x128xbf16, #nova.memory_space<sram>>
!b = memref<128x128xbf16, #nova.memory_space<sram>>
!acc = memref<64x128xf32, #nova.memory_space<acc>>
!t = memref<64x128xf32, #nova.memory_space<sram>>
!tb = memref<64x128xbf16, #nova.memory_space<sram>>
!row = memref<1x128xf32, #nova.memory_space<sram>>
!hrow = memref<1x128xf32, #nova.memory_space<hbm>>

// The bias is loaded between the drain and the add (as convert-linalg-to-nova
// stages it): its DMA and wait do not touch the accumulator, so the add
// still reads it directly, and writes the bf16 result itself.
// CHECK-LABEL: func.func @matmul_bias_loaded_between
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<acc>>
// CHECK: nova.matmul
// CHECK-NOT: <copy>
// CHECK: nova.wait
// CHECK: nova.elementwise <add> ins(%[[ACC]], %{{.*}} : memref<64x128xf32, #nova.memory_space<acc>>, memref<1x128xf32, #nova.memory_space<sram>>) outs(%arg3 : memref<64x128xbf16, #nova.memory_space<sram>>)
// CHECK-NOT: <copy>
func.func @matmul_bias_loaded_between(%a: !a, %b: !b, %hbias: !hrow, %y: !tb) {
  %acc = memref.alloc() : !acc
  nova.matmul ins(%a, %b : !a, !b) outs(%acc : !acc)
  %d = memref.alloc() : !t
  nova.elementwise <copy> ins(%acc : !acc) outs(%d : !t)
  %bias = memref.alloc() : !row
  %tok = nova.dma_start %hbias, %bias : !hrow -> !row
  nova.wait %tok
  %s = memref.alloc() : !t
  nova.elementwise <add> ins(%d, %bias : !t, !row) outs(%s : !t)
  nova.elementwise <copy> ins(%s : !t) outs(%y : !tb)
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!h = memref<64x128xf32, #nova.memory_space<hbm>>

// A DMA into the copy's source between the copy and its reader (completed by
// the wait): the reader must still read the copy.
// CHECK-LABEL: func.func @negative_source_loaded_between
// CHECK: nova.elementwise <copy> ins(%[[X:.*]] : {{.*}}) outs(%[[D:.*]] : {{.*}})
// CHECK: nova.dma_start %{{.*}}, %[[X]]
// CHECK: nova.elementwise <exp> ins(%[[D]] :
func.func @negative_source_loaded_between(%x: !t, %in: !h, %y: !t) {
  %d = memref.alloc() : !t
  nova.elementwise <copy> ins(%x : !t) outs(%d : !t)
  %tok = nova.dma_start %in, %x : !h -> !t
  nova.wait %tok
  nova.elementwise <exp> ins(%d : !t) outs(%y : !t)
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!h = memref<256x128xf32, #nova.memory_space<hbm>>
!v = memref<64x128xf32, strided<[128, 1], offset: ?>, #nova.memory_space<hbm>>

// AdamW's joined loop: the new moment is stored and read back by the
// parameter's update, and the gradient is loaded twice. Both reloads go:
// the update reads the stored tile and the first gradient tile.
// CHECK-LABEL: func.func @reloads_in_an_optimizer_loop
// CHECK: scf.for
// CHECK: %[[G:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: nova.dma_start %{{.*}}, %[[G]]
// CHECK: %[[M:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: nova.dma_start %{{.*}}, %[[M]]
// CHECK: nova.elementwise <add> ins(%[[M]], %[[G]] : {{.*}}) outs(%[[M]] : {{.*}})
// CHECK: nova.dma_start %[[M]], %{{.*}} : memref<64x128xf32, #nova.memory_space<sram>> -> memref<64x128xf32, strided<[128, 1], offset: ?>, #nova.memory_space<hbm>>
// CHECK-NOT: nova.dma_start %{{.*}}, %{{.*}} : memref<64x128xf32, strided<[128, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: nova.elementwise <mul> ins(%[[M]], %[[G]] : {{.*}})
// CHECK: return
func.func @reloads_in_an_optimizer_loop(%grad: !h, %moment: !h, %param: !h) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c256 step %c64 {
    %gv = memref.subview %grad[%i, 0] [64, 128] [1, 1] : !h to !v
    %mv = memref.subview %moment[%i, 0] [64, 128] [1, 1] : !h to !v
    %pv = memref.subview %param[%i, 0] [64, 128] [1, 1] : !h to !v
    %g = memref.alloc() : !t
    %t0 = nova.dma_start %gv, %g : !v -> !t
    nova.wait %t0
    %m = memref.alloc() : !t
    %t1 = nova.dma_start %mv, %m : !v -> !t
    nova.wait %t1
    nova.elementwise <add> ins(%m, %g : !t, !t) outs(%m : !t)
    %t2 = nova.dma_start %m, %mv : !t -> !v
    nova.wait %t2
    %m2 = memref.alloc() : !t
    %t3 = nova.dma_start %mv, %m2 : !v -> !t
    nova.wait %t3
    %g2 = memref.alloc() : !t
    %t4 = nova.dma_start %gv, %g2 : !v -> !t
    nova.wait %t4
    %u = memref.alloc() : !t
    nova.elementwise <mul> ins(%m2, %g2 : !t, !t) outs(%u : !t)
    %t5 = nova.dma_start %u, %pv : !t -> !v
    nova.wait %t5
  }
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!h = memref<64x128xf32, #nova.memory_space<hbm>>

// The buffer is written between the two loads (another view of it, a
// store): the second load reads the new data and stays.
// CHECK-LABEL: func.func @negative_reload_after_a_write
// CHECK-COUNT-2: nova.dma_start %{{.*}}, %{{.*}} : memref<64x128xf32, #nova.memory_space<hbm>> -> memref<64x128xf32, #nova.memory_space<sram>>
func.func @negative_reload_after_a_write(%x: !h, %y: !t, %out: !t) {
  %a = memref.alloc() : !t
  %t0 = nova.dma_start %x, %a : !h -> !t
  nova.wait %t0
  %c = memref.cast %x : !h to memref<64x128xf32, #nova.memory_space<hbm>>
  %t1 = nova.dma_start %y, %c : !t -> memref<64x128xf32, #nova.memory_space<hbm>>
  nova.wait %t1
  %b = memref.alloc() : !t
  %t2 = nova.dma_start %x, %b : !h -> !t
  nova.wait %t2
  nova.elementwise <add> ins(%a, %b : !t, !t) outs(%out : !t)
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!h = memref<64x128xf32, #nova.memory_space<hbm>>

// The first tile is changed in place before the reloaded one is read: the
// reload keeps the HBM data and stays. So does a reload written in place.
// CHECK-LABEL: func.func @negative_first_tile_changed
// CHECK-COUNT-2: nova.dma_start %{{.*}}, %{{.*}} : memref<64x128xf32, #nova.memory_space<hbm>> -> memref<64x128xf32, #nova.memory_space<sram>>
// CHECK-LABEL: func.func @negative_reload_written_in_place
// CHECK-COUNT-2: nova.dma_start %{{.*}}, %{{.*}} : memref<64x128xf32, #nova.memory_space<hbm>> -> memref<64x128xf32, #nova.memory_space<sram>>
func.func @negative_first_tile_changed(%x: !h, %out: !t) {
  %a = memref.alloc() : !t
  %t0 = nova.dma_start %x, %a : !h -> !t
  nova.wait %t0
  nova.elementwise <exp> ins(%a : !t) outs(%a : !t)
  %b = memref.alloc() : !t
  %t1 = nova.dma_start %x, %b : !h -> !t
  nova.wait %t1
  nova.elementwise <add> ins(%a, %b : !t, !t) outs(%out : !t)
  return
}
func.func @negative_reload_written_in_place(%x: !h, %out: !t) {
  %a = memref.alloc() : !t
  %t0 = nova.dma_start %x, %a : !h -> !t
  nova.wait %t0
  %b = memref.alloc() : !t
  %t1 = nova.dma_start %x, %b : !h -> !t
  nova.wait %t1
  nova.elementwise <exp> ins(%b : !t) outs(%b : !t)
  nova.elementwise <add> ins(%a, %b : !t, !t) outs(%out : !t)
  return
}

// -----

!n = memref<64x128xbf16, #nova.memory_space<sram>>
!w = memref<64x128xf32, #nova.memory_space<sram>>

// One op between a widening of each bf16 input and a rounding of its result
// (a generic of one bf16 op: convert-linalg-to-nova computes in f32): the
// vector unit computes in f32 and rounds to the output's type whatever the
// tiles' types, so the op on the bf16 tiles writes the same bits. Three
// passes become one.
// CHECK-LABEL: func.func @narrow_binary
// CHECK-NOT: nova.elementwise <copy>
// CHECK: nova.elementwise <mul> ins(%arg0, %arg1 : memref<64x128xbf16, #nova.memory_space<sram>>, memref<64x128xbf16, #nova.memory_space<sram>>) outs(%arg2 : memref<64x128xbf16, #nova.memory_space<sram>>)
// CHECK-NOT: nova.elementwise
func.func @narrow_binary(%x: !n, %y: !n, %out: !n) {
  %wx = memref.alloc() : !w
  nova.elementwise <copy> ins(%x : !n) outs(%wx : !w)
  %wy = memref.alloc() : !w
  nova.elementwise <copy> ins(%y : !n) outs(%wy : !w)
  %r = memref.alloc() : !w
  nova.elementwise <mul> ins(%wx, %wy : !w, !w) outs(%r : !w)
  nova.elementwise <copy> ins(%r : !w) outs(%out : !n)
  return
}

// -----

!n = memref<64x128xbf16, #nova.memory_space<sram>>
!w = memref<64x128xf32, #nova.memory_space<sram>>

// A widening that other ops read stays; the scalar op reads the bf16 tile
// (the immediate is rounded to f32 either way).
// CHECK-LABEL: func.func @narrow_scalar_shared_widening
// CHECK: nova.elementwise <copy> ins(%arg0 : {{.*}}) outs(%[[W:.*]] : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <mul> scalar(5.000000e-01) ins(%arg0 : memref<64x128xbf16, #nova.memory_space<sram>>) outs(%arg1 : memref<64x128xbf16, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <tanh> ins(%[[W]] :
func.func @narrow_scalar_shared_widening(%x: !n, %half: !n, %t: !w) {
  %wx = memref.alloc() : !w
  nova.elementwise <copy> ins(%x : !n) outs(%wx : !w)
  %r = memref.alloc() : !w
  nova.elementwise <mul> scalar(5.000000e-01) ins(%wx : !w) outs(%r : !w)
  nova.elementwise <copy> ins(%r : !w) outs(%half : !n)
  nova.elementwise <tanh> ins(%wx : !w) outs(%t : !w)
  return
}

// -----

!n = memref<64x128xbf16, #nova.memory_space<sram>>
!w = memref<64x128xf32, #nova.memory_space<sram>>

// An f32 input that is no widening: the op keeps reading the widened copy
// (narrow wants every input narrow) but writes the bf16 result itself.
// CHECK-LABEL: func.func @narrow_f32_input
// CHECK: nova.elementwise <copy>
// CHECK: nova.elementwise <add> ins(%{{.*}}, %arg1 : memref<64x128xf32, {{.*}}>, memref<64x128xf32, {{.*}}>) outs(%arg2 : memref<64x128xbf16, {{.*}}>)
// CHECK-NOT: <copy>
func.func @narrow_f32_input(%x: !n, %y: !w, %out: !n) {
  %wx = memref.alloc() : !w
  nova.elementwise <copy> ins(%x : !n) outs(%wx : !w)
  %r = memref.alloc() : !w
  nova.elementwise <add> ins(%wx, %y : !w, !w) outs(%r : !w)
  nova.elementwise <copy> ins(%r : !w) outs(%out : !n)
  return
}

// -----

!n = memref<64x128xbf16, #nova.memory_space<sram>>
!w = memref<64x128xf32, #nova.memory_space<sram>>

// The bf16 source changes between its widening and the op: the op must
// read the widened copy (it still writes the bf16 result itself).
// CHECK-LABEL: func.func @negative_narrow_source_written_between
// CHECK: nova.elementwise <copy> ins(%arg0 : {{.*}}) outs(%[[W:.*]] :
// CHECK: nova.fill
// CHECK: nova.elementwise <exp> ins(%[[W]] : {{.*}}) outs(%arg1 :
// CHECK-NOT: <copy>
func.func @negative_narrow_source_written_between(%x: !n, %out: !n) {
  %wx = memref.alloc() : !w
  nova.elementwise <copy> ins(%x : !n) outs(%wx : !w)
  nova.fill 0.0 outs(%x : !n)
  %r = memref.alloc() : !w
  nova.elementwise <exp> ins(%wx : !w) outs(%r : !w)
  nova.elementwise <copy> ins(%r : !w) outs(%out : !n)
  return
}

// -----

!n = memref<64x128xbf16, #nova.memory_space<sram>>
!w = memref<64x128xf32, #nova.memory_space<sram>>

// The f32 result is read in f32 too (unrounded): it stays.
// CHECK-LABEL: func.func @negative_narrow_result_read_in_f32
// CHECK: nova.elementwise <exp> ins(%{{.*}} : memref<64x128xf32
// CHECK: nova.elementwise <copy>
// CHECK: nova.elementwise <add>
func.func @negative_narrow_result_read_in_f32(%x: !n, %out: !n, %sum: !w) {
  %wx = memref.alloc() : !w
  nova.elementwise <copy> ins(%x : !n) outs(%wx : !w)
  %r = memref.alloc() : !w
  nova.elementwise <exp> ins(%wx : !w) outs(%r : !w)
  nova.elementwise <copy> ins(%r : !w) outs(%out : !n)
  nova.elementwise <add> ins(%r, %r : !w, !w) outs(%sum : !w)
  return
}

// -----

!n = memref<64x128xbf16, #nova.memory_space<sram>>
!w = memref<64x128xf32, #nova.memory_space<sram>>
!row = memref<1x128xf32, #nova.memory_space<sram>>

// A bias gradient: dY loaded in bf16, widened, summed over rows in f32. The
// reduction reads the bf16 tile itself (exactly the widened values).
// CHECK-LABEL: func.func @widening_into_a_reduction
// CHECK-NOT: <copy>
// CHECK: nova.reduce <sum> ins(%arg0 : memref<64x128xbf16, #nova.memory_space<sram>>) outs(%arg1 : memref<1x128xf32, #nova.memory_space<sram>>) dim 0
func.func @widening_into_a_reduction(%dy: !n, %db: !row) {
  %w = memref.alloc() : !w
  nova.elementwise <copy> ins(%dy : !n) outs(%w : !w)
  nova.reduce <sum> ins(%w : !w) outs(%db : !row) dim 0
  return
}

// -----

!n = memref<64x128xbf16, #nova.memory_space<sram>>
!w = memref<64x128xf32, #nova.memory_space<sram>>
!row = memref<1x128xf32, #nova.memory_space<sram>>

// A widening that an elementwise op reads too stays (narrow() or the
// op's own pairs want the f32 tile).
// CHECK-LABEL: func.func @negative_widening_read_by_elementwise
// CHECK: nova.elementwise <copy>
// CHECK: nova.reduce <sum> ins(%{{.*}} : memref<64x128xf32
func.func @negative_widening_read_by_elementwise(%dy: !n, %db: !row, %o: !w) {
  %w = memref.alloc() : !w
  nova.elementwise <copy> ins(%dy : !n) outs(%w : !w)
  nova.reduce <sum> ins(%w : !w) outs(%db : !row) dim 0
  nova.elementwise <exp> ins(%w : !w) outs(%o : !w)
  return
}
