// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(convert-linalg-to-nova))' -split-input-file | FileCheck %s

!hbm = memref<64x128xf32, #nova.memory_space<hbm>>

// HBM operands are DMA'd into SRAM; the zero fill of the SRAM destination is
// folded into a plain drain (copy) of the accumulator.
// CHECK-LABEL: func.func @matmul_hbm_operands_zero_filled_sram_dest
// CHECK-SAME: (%[[A:.*]]: memref<64x128xf32, #nova.memory_space<hbm>>, %[[B:.*]]: memref<128x128xf32, #nova.memory_space<hbm>>, %[[C:.*]]: memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK-NOT: linalg.fill
// CHECK: %[[SA:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: %[[T0:.*]] = nova.dma_start %[[A]], %[[SA]]
// CHECK: nova.wait %[[T0]]
// CHECK: %[[SB:.*]] = memref.alloc() : memref<128x128xf32, #nova.memory_space<sram>>
// CHECK: %[[T1:.*]] = nova.dma_start %[[B]], %[[SB]]
// CHECK: nova.wait %[[T1]]
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<acc>>
// CHECK: nova.matmul ins(%[[SA]], %[[SB]] : {{.*}}) outs(%[[ACC]] : memref<64x128xf32, #nova.memory_space<acc>>){{$}}
// CHECK: nova.elementwise <copy> ins(%[[ACC]] : {{.*}}) outs(%[[C]] : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK-NOT: linalg.
func.func @matmul_hbm_operands_zero_filled_sram_dest(%a: !hbm, %b: memref<128x128xf32, #nova.memory_space<hbm>>, %c: memref<64x128xf32, #nova.memory_space<sram>>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x128xf32, #nova.memory_space<sram>>)
  linalg.matmul ins(%a, %b : !hbm, memref<128x128xf32, #nova.memory_space<hbm>>) outs(%c : memref<64x128xf32, #nova.memory_space<sram>>)
  return
}

// A contraction longer than the matrix unit's 128 rows runs as a first
// matmul that overwrites the accumulator (no zero fill for the matrix unit
// to wait for) and a loop of accumulating ones over the other K chunks;
// without a zero fill the destination is read back and added to.
// CHECK-LABEL: func.func @matmul_k_chunks_accumulate_into_hbm
// CHECK: %[[ACC:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<acc>>
// CHECK-NOT: nova.fill
// CHECK: %[[A0:.*]] = memref.subview %{{.*}}[0, 0] [64, 128] [1, 1]
// CHECK: %[[B0:.*]] = memref.subview %{{.*}}[0, 0] [128, 128] [1, 1]
// CHECK: nova.matmul ins(%[[A0]], %[[B0]] : {{.*}}) outs(%[[ACC]] : {{.*}}){{$}}
// CHECK: scf.for %[[K:.*]] = %c128 to %{{.*}} step %{{.*}} {
// CHECK:   %[[AK:.*]] = memref.subview %{{.*}}[0, %[[K]]] [64, 128] [1, 1]
// CHECK:   %[[BK:.*]] = memref.subview %{{.*}}[%[[K]], 0] [128, 128] [1, 1]
// CHECK:   nova.matmul ins(%[[AK]], %[[BK]] : {{.*}}) outs(%[[ACC]] : {{.*}}) accumulate
// CHECK: }
// CHECK: nova.elementwise <add> ins(%[[OLD:.*]], %[[ACC]] : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x128xf32, #nova.memory_space<acc>>) outs(%[[OLD]]
// CHECK: nova.dma_start %[[OLD]], %{{.*}} : memref<64x128xf32, #nova.memory_space<sram>> -> memref<64x128xf32, #nova.memory_space<hbm>>
func.func @matmul_k_chunks_accumulate_into_hbm(%a: memref<64x512xf32, #nova.memory_space<hbm>>, %b: memref<512x128xf32, #nova.memory_space<hbm>>, %c: !hbm) {
  linalg.matmul ins(%a, %b : memref<64x512xf32, #nova.memory_space<hbm>>, memref<512x128xf32, #nova.memory_space<hbm>>) outs(%c : !hbm)
  return
}

// CHECK-LABEL: func.func @batch_matmul_single_batch
// CHECK: memref.collapse_shape
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<16x32xf32, #nova.memory_space<sram>>, memref<32x16xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<16x16xf32, #nova.memory_space<acc>>)
func.func @batch_matmul_single_batch(%a: memref<1x16x32xf32, #nova.memory_space<sram>>, %b: memref<1x32x16xf32, #nova.memory_space<sram>>, %c: memref<1x16x16xf32, #nova.memory_space<sram>>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<1x16x16xf32, #nova.memory_space<sram>>)
  linalg.batch_matmul ins(%a, %b : memref<1x16x32xf32, #nova.memory_space<sram>>, memref<1x32x16xf32, #nova.memory_space<sram>>) outs(%c : memref<1x16x16xf32, #nova.memory_space<sram>>)
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// One nova.elementwise per body op; the 1-D bias broadcasts as a 1xN view;
// constants become scalar operands; the last op writes the output tile,
// which is DMA'd back to HBM.
// CHECK-LABEL: func.func @bias_gelu_epilogue
// CHECK-SAME: (%[[X:.*]]: memref<64x128xf32, #nova.memory_space<sram>>, %[[BIAS:.*]]: memref<128xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>, %[[OUT:.*]]: memref<64x128xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>>)
// CHECK: %[[SB:.*]] = memref.alloc() : memref<128xf32, #nova.memory_space<sram>>
// CHECK: nova.dma_start %[[BIAS]], %[[SB]]
// CHECK: %[[ROW:.*]] = memref.expand_shape %[[SB]] {{\[\[}}0, 1]] output_shape [1, 128]
// CHECK: %[[SO:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: %[[S:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: nova.elementwise <add> ins(%[[X]], %[[ROW]] : memref<64x128xf32, #nova.memory_space<sram>>, memref<1x128xf32, #nova.memory_space<sram>>) outs(%[[S]]
// CHECK: nova.elementwise <mul> scalar(0.7071067{{[0-9]*}}) ins(%[[S]]
// CHECK: nova.elementwise <erf>
// CHECK: nova.elementwise <add> scalar(1.000000e+00)
// CHECK: nova.elementwise <mul> ins(%[[S]], %{{.*}} : {{.*}}) outs(%[[SO]]
// CHECK: nova.dma_start %[[SO]], %[[OUT]]
func.func @bias_gelu_epilogue(%x: memref<64x128xf32, #nova.memory_space<sram>>,
                              %bias: memref<128xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>,
                              %out: memref<64x128xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>>) {
  %rs2 = arith.constant 0.70710678118654757 : f32
  %one = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bias : memref<64x128xf32, #nova.memory_space<sram>>, memref<128xf32, strided<[1], offset: ?>, #nova.memory_space<hbm>>)
      outs(%out : memref<64x128xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.mulf %s, %rs2 : f32
    %e = math.erf %t : f32
    %p = arith.addf %e, %one : f32
    %r = arith.mulf %s, %p : f32
    linalg.yield %r : f32
  }
  return
}

// A constant on the left of a non-commutative op is rewritten: c - x as
// neg then add c, 1 / x as recip.
// CHECK-LABEL: func.func @scalar_on_the_left
// CHECK: nova.elementwise <neg>
// CHECK: nova.elementwise <add> scalar(2.000000e+00)
// CHECK: nova.elementwise <recip>
func.func @scalar_on_the_left(%x: memref<8x8xf32, #nova.memory_space<sram>>, %y: memref<8x8xf32, #nova.memory_space<sram>>) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32, #nova.memory_space<sram>>) outs(%y : memref<8x8xf32, #nova.memory_space<sram>>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.subf %two, %a : f32
    %r = arith.divf %one, %s : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#red3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>

// A sum after a zero fill reduces straight into the output; a max without
// a fill combines with the old output values.
// CHECK-LABEL: func.func @row_reductions
// CHECK-NOT: linalg.fill
// CHECK: nova.elementwise <mul> ins(%{{.*}}, %{{.*}} : memref<1x16x64xf32, #nova.memory_space<sram>>, memref<1x16x64xf32, #nova.memory_space<sram>>) outs(%[[SQ:.*]] : memref<1x16x64xf32
// CHECK: nova.reduce <sum> ins(%[[SQ]] : memref<1x16x64xf32, #nova.memory_space<sram>>) outs(%[[S:.*]] : memref<1x16x1xf32, #nova.memory_space<sram>>) dim 2
// CHECK-NOT: nova.elementwise <add>
// CHECK: nova.reduce <max> ins(%{{.*}} : memref<1x16x64xf32, #nova.memory_space<sram>>) outs(%[[M:.*]] : memref<1x16x1xf32, #nova.memory_space<sram>>) dim 2
// CHECK: nova.elementwise <max> ins(%[[OLD:.*]], %[[M]] : {{.*}}) outs(%[[OLD]]
func.func @row_reductions(%x: memref<1x16x64xf32, #nova.memory_space<sram>>,
                          %s: memref<1x16x1xf32, #nova.memory_space<sram>>,
                          %m: memref<1x16x1xf32, #nova.memory_space<sram>>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<1x16x1xf32, #nova.memory_space<sram>>)
  linalg.generic {indexing_maps = [#id3, #red3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<1x16x64xf32, #nova.memory_space<sram>>) outs(%s : memref<1x16x1xf32, #nova.memory_space<sram>>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %r = arith.addf %sq, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id3, #red3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<1x16x64xf32, #nova.memory_space<sram>>) outs(%m : memref<1x16x1xf32, #nova.memory_space<sram>>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @transpose_fill_and_copies
// CHECK: nova.dma_start
// CHECK: nova.transpose ins(%{{.*}} : memref<8x16xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<16x8xf32, #nova.memory_space<sram>>) permutation = [1, 0]
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<16x8xf32, #nova.memory_space<sram>> -> memref<16x8xf32, #nova.memory_space<hbm>>
// CHECK: nova.fill 0xFFF0000000000000 outs(%{{.*}} : memref<16x8xf32, #nova.memory_space<sram>>)
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<16x8xf32, #nova.memory_space<hbm>> -> memref<16x8xf32, #nova.memory_space<hbm>>
// CHECK-NOT: memref.copy
func.func @transpose_fill_and_copies(%x: memref<8x16xf32, #nova.memory_space<hbm>>, %y: memref<16x8xf32, #nova.memory_space<hbm>>, %z: memref<16x8xf32, #nova.memory_space<hbm>>) {
  %ninf = arith.constant 0xFF800000 : f32
  linalg.transpose ins(%x : memref<8x16xf32, #nova.memory_space<hbm>>) outs(%y : memref<16x8xf32, #nova.memory_space<hbm>>) permutation = [1, 0]
  linalg.fill ins(%ninf : f32) outs(%z : memref<16x8xf32, #nova.memory_space<hbm>>)
  memref.copy %y, %z : memref<16x8xf32, #nova.memory_space<hbm>> to memref<16x8xf32, #nova.memory_space<hbm>>
  memref.copy %z, %z : memref<16x8xf32, #nova.memory_space<hbm>> to memref<16x8xf32, #nova.memory_space<hbm>>
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// B read transposed (x @ W.T): the weight tile is DMA'd into SRAM as it
// lies in HBM (whole rows, no element-wise HBM bursts) and the matrix unit
// reads it through a transposed SRAM view; no transpose runs on chip.
// CHECK-LABEL: func.func @matmul_transposed_weight
// CHECK: %[[SW:.*]] = memref.alloc() : memref<128x64xf32, #nova.memory_space<sram>>
// CHECK: nova.dma_start %{{.*}}, %[[SW]] : memref<128x64xf32, #nova.memory_space<hbm>> -> memref<128x64xf32, #nova.memory_space<sram>>
// CHECK: %[[WT:.*]] = memref.transpose %[[SW]] (d0, d1) -> (d1, d0) : memref<128x64xf32, #nova.memory_space<sram>> to memref<64x128xf32, strided<[1, 64]>, #nova.memory_space<sram>>
// CHECK-NOT: nova.transpose
// CHECK: nova.matmul ins(%{{.*}}, %[[WT]] : memref<16x64xf32, #nova.memory_space<sram>>, memref<64x128xf32, strided<[1, 64]>, #nova.memory_space<sram>>)
func.func @matmul_transposed_weight(%x: memref<16x64xf32, #nova.memory_space<sram>>, %w: memref<128x64xf32, #nova.memory_space<hbm>>, %y: memref<16x128xf32, #nova.memory_space<sram>>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<16x128xf32, #nova.memory_space<sram>>)
  linalg.matmul indexing_maps = [#a, #b, #c]
      ins(%x, %w : memref<16x64xf32, #nova.memory_space<sram>>, memref<128x64xf32, #nova.memory_space<hbm>>)
      outs(%y : memref<16x128xf32, #nova.memory_space<sram>>)
  return
}

// -----

#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#bn = affine_map<(d0, d1, d2) -> (d2, d1)>
#cn = affine_map<(d0, d1, d2) -> (d0, d1)>

// A read transposed (a weight gradient dY.T @ X): dY's tile is DMA'd as its
// rows lie in HBM and the matrix unit reads it through a transposed view.
// CHECK-LABEL: func.func @matmul_transposed_lhs
// CHECK: %[[SA:.*]] = memref.alloc() : memref<64x16xf32, #nova.memory_space<sram>>
// CHECK: nova.dma_start %{{.*}}, %[[SA]] : memref<64x16xf32, #nova.memory_space<hbm>> -> memref<64x16xf32, #nova.memory_space<sram>>
// CHECK: %[[AT:.*]] = memref.transpose %[[SA]] (d0, d1) -> (d1, d0) : memref<64x16xf32, #nova.memory_space<sram>> to memref<16x64xf32, strided<[1, 16]>, #nova.memory_space<sram>>
// CHECK-NOT: nova.transpose
// CHECK: nova.matmul ins(%[[AT]], %{{.*}} : memref<16x64xf32, strided<[1, 16]>, #nova.memory_space<sram>>, memref<64x128xf32, #nova.memory_space<sram>>)
func.func @matmul_transposed_lhs(%dy: memref<64x16xf32, #nova.memory_space<hbm>>, %x: memref<64x128xf32, #nova.memory_space<sram>>, %y: memref<16x128xf32, #nova.memory_space<sram>>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<16x128xf32, #nova.memory_space<sram>>)
  linalg.matmul indexing_maps = [#at, #bn, #cn]
      ins(%dy, %x : memref<64x16xf32, #nova.memory_space<hbm>>, memref<64x128xf32, #nova.memory_space<sram>>)
      outs(%y : memref<16x128xf32, #nova.memory_space<sram>>)
  return
}

// -----

// An output block wider than the matrix unit's 128 columns (nova-tile's
// output-stationary tiles) is multiplied a column chunk at a time from the
// same staged operands, each chunk into its own accumulator; a chunk is
// drained after the next chunk's matmul is issued, so that the vector unit
// drains one accumulator while the matrix unit fills the other.
// CHECK-LABEL: func.func @matmul_wide_block_column_chunks
// CHECK: %[[SA:.*]] = memref.alloc() : memref<64x128xbf16, #nova.memory_space<sram>>
// CHECK: nova.dma_start %{{.*}}, %[[SA]]
// CHECK: %[[SB:.*]] = memref.alloc() : memref<128x384xbf16, #nova.memory_space<sram>>
// CHECK: nova.dma_start %{{.*}}, %[[SB]]
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<64x384xf32, #nova.memory_space<hbm>> -> memref<64x384xf32, #nova.memory_space<sram>>
// CHECK-NOT: nova.dma_start
// CHECK: %[[B0:.*]] = memref.subview %[[SB]][0, 0] [128, 128] [1, 1]
// CHECK: %[[ACC0:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<acc>>
// CHECK: nova.matmul ins(%[[SA]], %[[B0]] : {{.*}}) outs(%[[ACC0]] : {{.*}}){{$}}
// CHECK: %[[B1:.*]] = memref.subview %[[SB]][0, 128] [128, 128] [1, 1]
// CHECK: %[[ACC1:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<acc>>
// CHECK: nova.matmul ins(%[[SA]], %[[B1]] : {{.*}}) outs(%[[ACC1]] : {{.*}}){{$}}
// CHECK: %[[C0:.*]] = memref.subview %{{.*}}[0, 0] [64, 128] [1, 1]
// CHECK: nova.elementwise <add> ins(%[[C0]], %[[ACC0]] : {{.*}}) outs(%[[C0]]
// CHECK: %[[B2:.*]] = memref.subview %[[SB]][0, 256] [128, 128] [1, 1]
// CHECK: %[[ACC2:.*]] = memref.alloc() : memref<64x128xf32, #nova.memory_space<acc>>
// CHECK: nova.matmul ins(%[[SA]], %[[B2]] : {{.*}}) outs(%[[ACC2]] : {{.*}}){{$}}
// CHECK: %[[C1:.*]] = memref.subview %{{.*}}[0, 128] [64, 128] [1, 1]
// CHECK: nova.elementwise <add> ins(%[[C1]], %[[ACC1]] : {{.*}}) outs(%[[C1]]
// CHECK: %[[C2:.*]] = memref.subview %{{.*}}[0, 256] [64, 128] [1, 1]
// CHECK: nova.elementwise <add> ins(%[[C2]], %[[ACC2]] : {{.*}}) outs(%[[C2]]
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<64x384xf32, #nova.memory_space<sram>> -> memref<64x384xf32, #nova.memory_space<hbm>>
func.func @matmul_wide_block_column_chunks(%a: memref<64x128xbf16, #nova.memory_space<hbm>>, %b: memref<128x384xbf16, #nova.memory_space<hbm>>, %c: memref<64x384xf32, #nova.memory_space<hbm>>) {
  linalg.matmul ins(%a, %b : memref<64x128xbf16, #nova.memory_space<hbm>>, memref<128x384xbf16, #nova.memory_space<hbm>>) outs(%c : memref<64x384xf32, #nova.memory_space<hbm>>)
  return
}

// -----

// A float comparison converted to the type it compares in writes 0.0 / 1.0
// of that type itself: no i1 tile and no conversion pass. When it yields the
// conversion, the comparison writes the output.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @compare_as_float
// CHECK: nova.elementwise <cmp_eq> ins(%{{.*}}, %{{.*}} : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x1xf32, #nova.memory_space<sram>>) outs(%[[HIT:.*]] : memref<4x8xf32, #nova.memory_space<sram>>)
// CHECK-NOT: <copy>
// CHECK: nova.elementwise <mul> ins(%[[HIT]], %{{.*}}
// CHECK-NOT: <copy>
// CHECK: nova.elementwise <cmp_lt> ins(%{{.*}}, %{{.*}} : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x1xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<4x8xf32, #nova.memory_space<sram>>)
// CHECK-NOT: <copy>
// CHECK: return
func.func @compare_as_float(%a: memref<4x8xf32, #nova.memory_space<sram>>, %t: memref<4x1xf32, #nova.memory_space<sram>>, %o: memref<4x8xf32, #nova.memory_space<sram>>, %p: memref<4x8xf32, #nova.memory_space<sram>>) {
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %t : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x1xf32, #nova.memory_space<sram>>)
      outs(%o : memref<4x8xf32, #nova.memory_space<sram>>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %hit = arith.cmpf oeq, %x, %y : f32
    %f = arith.uitofp %hit : i1 to f32
    %m = arith.mulf %f, %x : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %t : memref<4x8xf32, #nova.memory_space<sram>>, memref<4x1xf32, #nova.memory_space<sram>>)
      outs(%p : memref<4x8xf32, #nova.memory_space<sram>>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %lt = arith.cmpf olt, %x, %y : f32
    %f = arith.uitofp %lt : i1 to f32
    linalg.yield %f : f32
  }
  return
}

// -----

// Not folded: a comparison with another reader keeps its i1 tile and the
// conversion; an integer comparison compares in i64 and writes i1.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @compare_kept_i1
// CHECK: nova.elementwise <cmp_lt> {{.*}}outs(%[[C:.*]] : memref<4x8xi1, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <copy> ins(%[[C]] : memref<4x8xi1, #nova.memory_space<sram>>) outs(%{{.*}} : memref<4x8xf32, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <select> ins(%[[C]]
// CHECK: nova.elementwise <cmp_lt> {{.*}}outs(%[[D:.*]] : memref<4x8xi1, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <copy> ins(%[[D]] : memref<4x8xi1, #nova.memory_space<sram>>)
func.func @compare_kept_i1(%a: memref<4x8xf32, #nova.memory_space<sram>>, %i: memref<4x8xi64, #nova.memory_space<sram>>, %o: memref<4x8xf32, #nova.memory_space<sram>>, %p: memref<4x8xf32, #nova.memory_space<sram>>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xf32, #nova.memory_space<sram>>)
      outs(%o : memref<4x8xf32, #nova.memory_space<sram>>) {
  ^bb0(%x: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %lt = arith.cmpf olt, %x, %zero : f32
    %f = arith.uitofp %lt : i1 to f32
    %s = arith.select %lt, %x, %f : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%i : memref<4x8xi64, #nova.memory_space<sram>>)
      outs(%p : memref<4x8xf32, #nova.memory_space<sram>>) {
  ^bb0(%x: i64, %out: f32):
    %zero = arith.constant 0 : i64
    %lt = arith.cmpi slt, %x, %zero : i64
    %f = arith.uitofp %lt : i1 to f32
    linalg.yield %f : f32
  }
  return
}
