// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(convert-linalg-to-nova))' -verify-diagnostics | FileCheck %s

!x = memref<2x256x64xf32, #nova.memory_space<hbm>>
!l = memref<2x256xf32, #nova.memory_space<hbm>>

// Causal f32, T = 256 (two blocks of 128): the causal bias once, then a loop
// whose iterations take both batches as one stream of pairs: batch 0's loads
// and row terms (q scaled, delta = rowsum(dO * out), lse as a column), then
// its (key block, query block) pairs (0, 0), (0, 1), (1, 1) in straight-line
// code: the scores and dP of a pair are issued ahead of its vector work; the
// diagonal pairs add the bias; P = exp(S - lse), dS = P (dP - delta); dK^T
// (first: it waits for dS, the vector unit's last result, which covers P),
// dV^T and dQ^T accumulate in the accumulator. Batch 1's loads follow
// batch 0's first pairs, its scores run ahead across the batch boundary, and
// the gradients are transposed out of the accumulator some pairs after their
// last matmuls (here, at the end of the iteration).
// CHECK-LABEL: func.func @causal_f32
// CHECK: nova.iota
// CHECK: nova.elementwise <cmp_gt>
// CHECK: nova.elementwise <mul> scalar(-9.9999999999999997E+37)
// CHECK: memref.alloc() : memref<64x256xf32, #nova.memory_space<acc>>
// CHECK: scf.for
// CHECK: nova.dma_start
// CHECK: nova.elementwise <mul> scalar(1.250000e-01)
// CHECK: nova.reduce <sum> ins(%{{.*}} : memref<256x64xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<256x1xf32, #nova.memory_space<sram>>) dim 1
// CHECK: nova.transpose ins(%{{.*}} : memref<1x256xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<256x1xf32, #nova.memory_space<sram>>)
// Three pairs' S and dP ahead.
// CHECK-COUNT-6: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x64xf32, strided<[64, 1]{{.*}}>, memref<64x128xf32, strided<[1, 64]{{.*}}>) outs(%{{.*}} : memref<128x128xf32, #nova.memory_space<acc>>){{$}}
// Pair (0, 0): the diagonal.
// CHECK: nova.elementwise <add>
// CHECK: nova.elementwise <sub>
// CHECK: nova.elementwise <exp>
// CHECK: nova.elementwise <sub>
// CHECK: nova.elementwise <mul>
// dK^T and dV^T (64 rows streaming, dS or P stationary), dQ^T into its columns.
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<64x128xf32, strided<[1, 64]{{.*}}>, memref<128x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<acc>>){{$}}
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<64x128xf32, strided<[1, 64]{{.*}}>, memref<128x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<acc>>){{$}}
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<64x128xf32, strided<[1, 64]{{.*}}>, memref<128x128xf32, strided<[1, 128]>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xf32, strided<[256, 1]>, #nova.memory_space<acc>>){{$}}
// Pair (0, 1): no bias; its gradients accumulate onto key block 0's.
// CHECK-NOT: nova.elementwise <add>
// CHECK: nova.elementwise <sub>
// CHECK: nova.elementwise <exp>
// CHECK: nova.matmul {{.*}} accumulate
// CHECK: nova.matmul {{.*}} accumulate
// Pair (1, 1)'s vector work, batch 1's loads, pair (1, 1)'s gradients, then
// batch 1's row terms and its first three pairs' S and dP.
// CHECK: nova.elementwise <add>
// CHECK: nova.elementwise <mul>
// CHECK-NOT: nova.transpose
// CHECK: nova.dma_start
// CHECK: nova.matmul
// CHECK-NOT: nova.transpose
// CHECK: nova.elementwise <mul> scalar(1.250000e-01)
// CHECK: nova.reduce <sum>
// CHECK: nova.transpose ins(%{{.*}} : memref<1x256xf32, #nova.memory_space<sram>>)
// CHECK-COUNT-6: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x64xf32, strided<[64, 1]{{.*}}>, memref<64x128xf32, strided<[1, 64]{{.*}}>) outs(%{{.*}} : memref<128x128xf32, #nova.memory_space<acc>>){{$}}
// Batch 1's pairs, then (due after the last pair) batch 0's dK and dV per
// key block and its dQ = scale * (dQ^T)^T, then batch 1's.
// CHECK: nova.elementwise <add>
// CHECK: nova.transpose ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<acc>>)
// CHECK: nova.dma_start
// CHECK: nova.transpose ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<acc>>)
// CHECK: nova.dma_start
// CHECK: nova.elementwise <mul> scalar(1.250000e-01) ins(%{{.*}} : memref<64x256xf32, #nova.memory_space<acc>>)
// CHECK: nova.transpose
// CHECK: nova.dma_start
// CHECK: nova.elementwise <mul> scalar(1.250000e-01) ins(%{{.*}} : memref<64x256xf32, #nova.memory_space<acc>>)
// CHECK: nova.transpose
// CHECK: nova.dma_start
// CHECK-NOT: nova.attention_backward
// CHECK: return
func.func @causal_f32(%q: !x, %k: !x, %v: !x, %o: !x, %g: !x, %lse: !l, %dq: !x, %dk: !x, %dv: !x) {
  nova.attention_backward ins(%q, %k, %v, %o, %g, %lse : !x, !x, !x, !x, !x, !l) outs(%dq, %dk, %dv : !x, !x, !x) scale 1.250000e-01 causal
  return
}

// -----

!x = memref<1x128x64xbf16, #nova.memory_space<hbm>>
!f = memref<1x128x64xf32, #nova.memory_space<hbm>>
!l = memref<1x128xf32, #nova.memory_space<hbm>>

// bf16: -lse and -delta ride on the score matmuls as two extra columns each
// (the bf16 rounding and the remainder) against columns of ones in k and v,
// so the vector unit only exponentiates, rounds P to bf16 for dV and
// multiplies dS into bf16 (float types mix: no rounding copy of dS, the
// remainder's subtraction reads the bf16 rounding and writes bf16, dO * O
// reads dO as loaded); every matmul reads bf16.
// CHECK-LABEL: func.func @bf16
// CHECK: nova.fill 1.000000e+00 outs(%{{.*}} : memref<1x128x2xbf16, strided<[8448, 66, 1], offset: 64>, #nova.memory_space<sram>>)
// CHECK: nova.fill 1.000000e+00 outs(%{{.*}} : memref<1x128x2xbf16, strided<[8448, 66, 1], offset: 64>, #nova.memory_space<sram>>)
// CHECK: scf.for
// CHECK: nova.elementwise <mul> scalar(-1.000000e+00)
// CHECK: nova.elementwise <copy> ins(%{{.*}} : memref<128x1xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x1xbf16, strided<[66, 1], offset: 64>, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <sub> ins(%{{.*}}, %{{.*}} : memref<128x1xf32, #nova.memory_space<sram>>, memref<128x1xbf16, strided<[66, 1], offset: 64>, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x1xbf16, strided<[66, 1], offset: 65>, #nova.memory_space<sram>>)
// CHECK-NOT: nova.elementwise <copy> ins(%{{.*}} : memref<1x128x64xbf16
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x66xbf16, strided<[66, 1]>, #nova.memory_space<sram>>, memref<66x128xbf16, strided<[1, 66]>, #nova.memory_space<sram>>)
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x66xbf16, strided<[66, 1]>, #nova.memory_space<sram>>, memref<66x128xbf16, strided<[1, 66]>, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <exp> ins(%{{.*}} : memref<128x128xf32, #nova.memory_space<acc>>)
// CHECK: nova.elementwise <copy> ins(%{{.*}} : memref<128x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x128xbf16, #nova.memory_space<sram>>)
// CHECK-NEXT: nova.elementwise <mul> ins(%{{.*}}, %{{.*}} : memref<128x128xf32, #nova.memory_space<acc>>, memref<128x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x128xbf16, #nova.memory_space<sram>>)
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<64x128xbf16, strided<[1, 66]>, #nova.memory_space<sram>>, memref<128x128xbf16, #nova.memory_space<sram>>)
// CHECK: return
func.func @bf16(%q: !x, %k: !x, %v: !x, %o: !x, %g: !x, %lse: !l, %dq: !f, %dk: !f, %dv: !f) {
  nova.attention_backward ins(%q, %k, %v, %o, %g, %lse : !x, !x, !x, !x, !x, !l) outs(%dq, %dk, %dv : !f, !f, !f) scale 1.250000e-01
  return
}

// -----

!x = memref<1x16384x64xf32, #nova.memory_space<hbm>>
!l = memref<1x16384xf32, #nova.memory_space<hbm>>

// dQ^T of one batch (64 x 16384 f32, 4 MiB) does not fit the accumulator.
func.func @too_long(%q: !x, %lse: !l) {
  // expected-error @+2 {{one batch needs}}
  // expected-error @+1 {{failed to lower to nova}}
  nova.attention_backward ins(%q, %q, %q, %q, %q, %lse : !x, !x, !x, !x, !x, !l) outs(%q, %q, %q : !x, !x, !x) scale 1.250000e-01 causal
  return
}

// -----
!x = memref<1x128x64xbf16, #nova.memory_space<hbm>>
!f = memref<1x128x64xf32, #nova.memory_space<hbm>>
!l = memref<1x128xf32, #nova.memory_space<hbm>>
!m = memref<1x128x128xi1, #nova.memory_space<hbm>>

// bf16 with dropout: -lse and -delta still ride on the score matmuls (dP -
// delta does not depend on the mask: V carries keep_scale, its ones columns
// do not), and -delta is kept as an f32 column: a dropped entry's term. The
// vector unit exponentiates, drops P for dV (a select writing bf16: no
// undropped copy of P, no rounding copy), takes dP - delta where kept and
// -delta where dropped (one select), multiplies by P into bf16 dS.
// CHECK-LABEL: func.func @bf16_dropout
// CHECK: nova.fill 1.000000e+00 outs(%{{.*}} : memref<1x128x2xbf16, strided<[8448, 66, 1], offset: 64>, #nova.memory_space<sram>>)
// CHECK: nova.fill 1.000000e+00 outs(%{{.*}} : memref<1x128x2xbf16, strided<[8448, 66, 1], offset: 64>, #nova.memory_space<sram>>)
// CHECK: scf.for
// CHECK: nova.elementwise <mul> scalar(1.1111111{{[0-9]*}}) ins(%{{.*}} : memref<1x128x64xbf16, strided<[8448, 66, 1]>, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <mul> scalar(-1.000000e+00)
// CHECK: nova.elementwise <mul> scalar(-1.000000e+00) ins(%[[DELTA:.*]] : memref<128x1xf32, #nova.memory_space<sram>>) outs(%[[NEGDELTA:[^ ]*]] : memref<128x1xf32, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <copy> ins(%[[NEGDELTA]] : memref<128x1xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x1xbf16, strided<[66, 1], offset: 64>, #nova.memory_space<sram>>)
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x66xbf16, strided<[66, 1]>, #nova.memory_space<sram>>, memref<66x128xbf16, strided<[1, 66]>, #nova.memory_space<sram>>)
// CHECK: nova.matmul ins(%{{.*}}, %{{.*}} : memref<128x66xbf16, strided<[66, 1]>, #nova.memory_space<sram>>, memref<66x128xbf16, strided<[1, 66]>, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <exp> ins(%{{.*}} : memref<128x128xf32, #nova.memory_space<acc>>) outs(%[[P:[^ ]*]] : memref<128x128xf32, #nova.memory_space<sram>>)
// CHECK-NEXT: nova.elementwise <select> ins(%[[KEEP:[^ ]*]], %[[P]], %{{.*}} : memref<128x128xi1, #nova.memory_space<sram>>, memref<128x128xf32, #nova.memory_space<sram>>, memref<1x1xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x128xbf16, #nova.memory_space<sram>>)
// CHECK-NEXT: memref.subview %[[NEGDELTA]][0, 0] [128, 1] [1, 1]
// CHECK-NEXT: nova.elementwise <select> ins(%[[KEEP]], %{{.*}}, %{{.*}} : memref<128x128xi1, #nova.memory_space<sram>>, memref<128x128xf32, #nova.memory_space<acc>>, memref<128x1xf32, strided<[1, 1]>, #nova.memory_space<sram>>)
// CHECK-NEXT: nova.elementwise <mul> ins(%{{.*}}, %[[P]] : memref<128x128xf32, #nova.memory_space<sram>>, memref<128x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<128x128xbf16, #nova.memory_space<sram>>)
// CHECK-NOT: nova.elementwise <copy> ins(%{{.*}} : memref<128x128xf32
// CHECK-NOT: nova.elementwise <sub> ins(%{{.*}} : memref<128x128xf32
// CHECK: return
func.func @bf16_dropout(%q: !x, %k: !x, %v: !x, %o: !x, %g: !x, %lse: !l, %keep: !m, %dq: !f, %dk: !f, %dv: !f) {
  nova.attention_backward ins(%q, %k, %v, %o, %g, %lse : !x, !x, !x, !x, !x, !l) outs(%dq, %dk, %dv : !f, !f, !f) scale 1.250000e-01 dropout(%keep : !m) keep_scale 1.1111111111111112
  return
}

// -----

!x = memref<1x128x64xf32, #nova.memory_space<hbm>>
!l = memref<1x128xf32, #nova.memory_space<hbm>>
!m = memref<1x128x128xi1, #nova.memory_space<hbm>>

// f32 with dropout: no augmented columns (the matrix unit is the busier
// engine in f32): P = exp(S - lse) and keep dP - delta on the vector unit.
// CHECK-LABEL: func.func @f32_dropout
// CHECK-NOT: memref<128x66xf32
// CHECK: nova.elementwise <sub> ins(%{{.*}}, %{{.*}} : memref<128x128xf32, #nova.memory_space<acc>>, memref<128x1xf32, strided<[1, 1]>, #nova.memory_space<sram>>)
// CHECK-NEXT: nova.elementwise <exp>
// CHECK-NEXT: nova.elementwise <select> ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<128x128xi1, #nova.memory_space<sram>>, memref<128x128xf32, #nova.memory_space<sram>>, memref<1x1xf32, #nova.memory_space<sram>>)
// CHECK-NEXT: nova.elementwise <select> ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<128x128xi1, #nova.memory_space<sram>>, memref<128x128xf32, #nova.memory_space<acc>>, memref<1x1xf32, #nova.memory_space<sram>>)
// CHECK-NEXT: memref.subview
// CHECK-NEXT: nova.elementwise <sub>
// CHECK: return
func.func @f32_dropout(%q: !x, %k: !x, %v: !x, %o: !x, %g: !x, %lse: !l, %keep: !m) {
  nova.attention_backward ins(%q, %k, %v, %o, %g, %lse : !x, !x, !x, !x, !x, !l) outs(%q, %k, %v : !x, !x, !x) scale 1.250000e-01 dropout(%keep : !m) keep_scale 1.1111111111111112
  return
}
