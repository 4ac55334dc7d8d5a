// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(convert-linalg-to-nova))' | FileCheck %s

!hbm_q = memref<2x256x64xf32, #nova.memory_space<hbm>>
!hbm_kt = memref<2x64x256xf32, #nova.memory_space<hbm>>

// Causal flash attention, T = 256 (two query and key blocks of 128). The
// diagonal blocks' mask is built once: bias = -1e38 above the diagonal and
// an identity, both in bf16. Each batch's queries (scaled), keys and values
// (with a column of ones) have their own DMAs, before the loop over batches.
// Query block 0 is one narrow unit: its masked scores accumulate onto
// eye @ bias, its P V writes the output. Query block 1 is one unit of two
// key blocks (the second masked): one [128, 256] softmax, two P V matmuls.
// A block's output is written after the next block's first softmax.
// CHECK-LABEL: func.func @causal
// CHECK: nova.iota
// CHECK: nova.elementwise <cmp_gt>
// CHECK: nova.elementwise <mul> scalar(-9.9999999999999997E+37)
// CHECK: nova.elementwise <cmp_eq>
// CHECK: nova.elementwise <copy> ins(%{{.*}} : memref<128x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x128xbf16, #nova.memory_space<sram>>)
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<1x256x64xf32, strided<[16384, 64, 1]>, #nova.memory_space<hbm>> -> memref<1x256x64xf32, strided<[16384, 64, 1]>, #nova.memory_space<sram>>
// CHECK: nova.elementwise <mul> scalar(1.250000e-01)
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<1x64x256xf32, strided<[16384, 256, 1]>, #nova.memory_space<hbm>> -> memref<1x64x256xf32, strided<[16384, 256, 1]>, #nova.memory_space<sram>>
// CHECK: nova.fill 1.000000e+00 outs(%{{.*}} : memref<1x256x1xf32, strided<[16640, 65, 1], offset: 64>, #nova.memory_space<sram>>)
// CHECK: scf.for
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x128xbf16, #nova.memory_space<sram>>, memref<128x128xbf16, #nova.memory_space<sram>>) outs(%[[S0:.*]] : memref<128x128xf32, strided<[256, 1]>, #nova.memory_space<acc>>)
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<sram>>, memref<64x128xf32, strided<[256, 1], offset: ?>, #nova.memory_space<sram>>) outs(%[[S0]] : memref<128x128xf32, strided<[256, 1]>, #nova.memory_space<acc>>) accumulate
// CHECK: nova.reduce <max>
// CHECK: nova.elementwise <exp>
// Query block 1's scores: key block 0, then key block 1 onto eye @ bias.
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x64xf32
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x128xbf16
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x64xf32{{.*}} accumulate
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<65x128xf32, strided<[1, 65], offset: ?>, #nova.memory_space<sram>>, memref<128x128xf32, strided<[1, 256]>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<65x128xf32, #nova.memory_space<acc>>){{$}}
// CHECK: nova.reduce <max> ins(%{{.*}} : memref<128x256xf32, strided<[256, 1]>, #nova.memory_space<acc>>)
// CHECK: nova.elementwise <exp> ins(%{{.*}} : memref<128x256xf32
// CHECK: nova.elementwise <recip>
// CHECK: nova.transpose
// CHECK: nova.dma_start
// CHECK-NOT: nova.elementwise <select>
// CHECK: return
func.func @causal(%q: !hbm_q, %kt: !hbm_kt, %v: !hbm_q, %o: !hbm_q) {
  nova.attention ins(%q, %kt, %v : !hbm_q, !hbm_kt, !hbm_q) outs(%o : !hbm_q) scale 1.250000e-01 causal
  return
}

// Without a mask every query block sees both key blocks as one unit (no
// mask: no iota, no bf16 matmul).
// CHECK-LABEL: func.func @full
// CHECK-NOT: nova.iota
// CHECK-NOT: bf16
// CHECK: nova.reduce <max> ins(%{{.*}} : memref<128x256xf32
// CHECK-NOT: bf16
// CHECK: return
func.func @full(%q: !hbm_q, %kt: !hbm_kt, %v: !hbm_q, %o: !hbm_q) {
  nova.attention ins(%q, %kt, %v : !hbm_q, !hbm_kt, !hbm_q) outs(%o : !hbm_q) scale 1.0
  return
}

// Keys as rows ([batch, keys, D], as torch lays them out): staged as they
// lie and read by the score matmul through a transposed view.
// CHECK-LABEL: func.func @key_rows
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<1x256x64xf32, strided<[16384, 64, 1]>, #nova.memory_space<hbm>> -> memref<1x256x64xf32, strided<[16384, 64, 1]>, #nova.memory_space<sram>>
// CHECK: memref.transpose
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x64xf32, strided<[64, 1], offset: ?>, #nova.memory_space<sram>>, memref<64x128xf32, strided<[1, 64], offset: ?>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x128xf32, strided<[256, 1]>, #nova.memory_space<acc>>) accumulate
func.func @key_rows(%q: !hbm_q, %k: !hbm_q, %v: !hbm_q, %o: !hbm_q) {
  nova.attention ins(%q, %k, %v : !hbm_q, !hbm_q, !hbm_q) outs(%o : !hbm_q) scale 1.250000e-01 key_rows causal
  return
}

// Sequence-major operands ([B, T, H, D], the heads interleaved in each row):
// all heads resident, each head's q, k and v is one strided DMA that reads
// it in place into a heads-first SRAM buffer; each head's output rows are
// written back in place (head h of batch b = n / H, n % H).
!seq = memref<2x128x3x64xf32, #nova.memory_space<hbm>>
// CHECK-LABEL: func.func @sequence_major
// CHECK-COUNT-2: nova.dma_start %{{.*}}, %{{.*}} : memref<1x1x128x64xf32, strided<[24576, 64, 192, 1]>, #nova.memory_space<hbm>> -> memref<1x1x128x64xf32, strided<[8192, 8192, 64, 1]>, #nova.memory_space<sram>>
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<1x1x128x64xf32, strided<[24576, 64, 192, 1]>, #nova.memory_space<hbm>> -> memref<1x1x128x64xf32, strided<[8320, 8320, 65, 1]>, #nova.memory_space<sram>>
// CHECK: arith.divui %{{.*}}, %{{.*}} : index
// CHECK: arith.remui %{{.*}}, %{{.*}} : index
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<1x1x128x64xf32, #nova.memory_space<sram>> -> memref<1x1x128x64xf32, strided<[24576, 64, 192, 1], offset: ?>, #nova.memory_space<hbm>>
func.func @sequence_major(%q: !seq, %k: !seq, %v: !seq, %o: !seq) {
  nova.attention ins(%q, %k, %v : !seq, !seq, !seq) outs(%o : !seq) scale 0.125 key_rows causal
  return
}

// Too long to keep every head on chip: one head at a time, read in place.
!long = memref<1x4096x4x64xf32, #nova.memory_space<hbm>>
// CHECK-LABEL: func.func @sequence_major_per_head
// CHECK: scf.for %[[N:.*]] =
// CHECK: arith.divui %[[N]]
// CHECK: arith.remui %[[N]]
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<1x1x4096x64xf32, strided<[1048576, 64, 256, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<1x1x4096x64xf32, strided<[262144, 262144, 64, 1]>, #nova.memory_space<sram>>
func.func @sequence_major_per_head(%q: !long, %k: !long, %v: !long, %o: !long) {
  nova.attention ins(%q, %k, %v : !long, !long, !long) outs(%o : !long) scale 0.125 key_rows causal
  return
}

// 96 short heads do not fit SRAM together: a loop over batches loads each
// batch's 12 heads (one strided DMA per head and operand) and chains them.
// Head 0's output is written after head 1's softmax (the vector unit does
// that softmax while the matrix unit finishes head 0's P V).
!b8 = memref<8x128x12x64xf32, #nova.memory_space<hbm>>
// CHECK-LABEL: func.func @sequence_major_chunks
// CHECK: scf.for
// CHECK-COUNT-2: nova.dma_start %{{.*}}, %{{.*}} : memref<1x1x128x64xf32, strided<[98304, 64, 768, 1], offset: ?>, #nova.memory_space<hbm>> -> memref<1x1x128x64xf32, strided<[8192, 8192, 64, 1]>, #nova.memory_space<sram>>
// CHECK: nova.reduce <max>
// CHECK: nova.reduce <max>
// CHECK: nova.elementwise <recip>
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<1x1x128x64xf32, #nova.memory_space<sram>> -> memref<1x1x128x64xf32, strided<[98304, 64, 768, 1], offset: ?>, #nova.memory_space<hbm>>
func.func @sequence_major_chunks(%q: !b8, %k: !b8, %v: !b8, %o: !b8) {
  nova.attention ins(%q, %k, %v : !b8, !b8, !b8) outs(%o : !b8) scale 0.125 key_rows causal
  return
}

// bf16 inputs: q and k staged in bf16 (the score matmuls at the bf16 rate),
// V widened once to f32 on chip (P and P V stay f32, as the vector unit
// writes one element type).
!bf = memref<1x256x64xbf16, #nova.memory_space<hbm>>
!o32 = memref<1x256x64xf32, #nova.memory_space<hbm>>
// CHECK-LABEL: func.func @bf16_inputs
// CHECK: nova.dma_start %{{.*}}, %{{.*}} : memref<1x256x64xbf16, strided<[16384, 64, 1]>, #nova.memory_space<hbm>> -> memref<1x256x64xbf16, strided<[16384, 64, 1]>, #nova.memory_space<sram>>
// CHECK: nova.elementwise <copy> ins(%{{.*}} : memref<1x256x64xbf16, strided<[16384, 64, 1]>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<1x256x64xf32, strided<[16640, 65, 1]>, #nova.memory_space<sram>>)
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x64xbf16, strided<[64, 1], offset: ?>, #nova.memory_space<sram>>, memref<64x128xbf16, strided<[1, 64], offset: ?>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x128xf32, strided<[256, 1]>, #nova.memory_space<acc>>) accumulate
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<65x128xf32
func.func @bf16_inputs(%q: !bf, %k: !bf, %v: !bf, %o: !o32) {
  nova.attention ins(%q, %k, %v : !bf, !bf, !bf) outs(%o : !o32) scale 1.250000e-01 key_rows causal
  return
}

!dq = memref<1x256x64xf32, #nova.memory_space<hbm>>
!dl = memref<1x256xf32, #nova.memory_space<hbm>>
!dm = memref<1x256x256xi1, #nova.memory_space<hbm>>

// Dropout: a unit's keep mask is loaded with its scores; after exp the
// dropped P is selected beside P, and P V takes two matmuls per key block:
// the ones row of [V 1]^T against the undropped P (the row sums l, which the
// softmax normalises by and lse logs) and V against the dropped P. The
// vector unit takes no row sum of P; 1 / l carries keep_scale.
// CHECK-LABEL: func.func @causal_dropout
// CHECK-NOT: nova.reduce <sum>
// CHECK: nova.elementwise <exp> ins(%{{.*}} : memref<128x128xf32, strided<[256, 1]>, #nova.memory_space<sram>>) outs(%[[P:[^ ]*]] :
// CHECK-NEXT: memref.subview
// CHECK-NEXT: memref.subview
// CHECK-NEXT: nova.elementwise <select> ins(%{{.*}}, %[[P]], %{{.*}} : memref<128x128xi1, strided<[256, 1]>, #nova.memory_space<sram>>, memref<128x128xf32, strided<[256, 1]>, #nova.memory_space<sram>>, memref<1x1xf32, #nova.memory_space<sram>>) outs(%[[D:[^ ]*]] :
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<1x128xf32, strided<[1, 65], offset: ?>, #nova.memory_space<sram>>, memref<128x128xf32, strided<[1, 256]>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<1x128xf32, strided<[128, 1], offset: 8192>, #nova.memory_space<acc>>)
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<64x128xf32, strided<[1, 65], offset: ?>, #nova.memory_space<sram>>, memref<128x128xf32, strided<[1, 256]>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xf32, strided<[128, 1]>, #nova.memory_space<acc>>)
// CHECK-NOT: nova.reduce <sum>
// CHECK: nova.elementwise <recip> ins(%{{.*}} : memref<1x128xf32, strided<[128, 1], offset: 8192>, #nova.memory_space<acc>>)
// CHECK-NEXT: nova.elementwise <mul> scalar(1.1111111111111112)
// CHECK: return
func.func @causal_dropout(%q: !dq, %k: !dq, %v: !dq, %o: !dq, %lse: !dl, %keep: !dm) {
  nova.attention_lse ins(%q, %k, %v : !dq, !dq, !dq) outs(%o, %lse : !dq, !dl) scale 1.250000e-01 key_rows causal dropout(%keep : !dm) keep_scale 1.1111111111111112
  return
}

// Without dropout one matmul per key block, [V 1]^T against P: its ones
// row sums P.
// CHECK-LABEL: func.func @causal_no_dropout
// CHECK-NOT: nova.elementwise <select>
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<65x128xf32, strided<[1, 65], offset: ?>, #nova.memory_space<sram>>, memref<128x128xf32, strided<[1, 256]>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<65x128xf32, #nova.memory_space<acc>>)
// CHECK-NOT: nova.matmul ins(%{{.*}}, %{{.*}} : memref<1x128xf32
// CHECK: return
func.func @causal_no_dropout(%q: !dq, %k: !dq, %v: !dq, %o: !dq, %lse: !dl) {
  nova.attention_lse ins(%q, %k, %v : !dq, !dq, !dq) outs(%o, %lse : !dq, !dl) scale 1.250000e-01 key_rows causal
  return
}
