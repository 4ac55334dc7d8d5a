// RUN: nova-opt %s --nova-fuse-vector-pairs -split-input-file | FileCheck %s

!t = memref<64x128xf32, #nova.memory_space<sram>>
!s = memref<1x1xf32, #nova.memory_space<sram>>

// AdamW's first moment, m + h * (g - m): the sub and the mul (whose operands
// swap: the broadcast h comes first) are one pair; the add is left alone (a
// pair is not a stage of another).
// CHECK-LABEL: func.func @adam_moment
// CHECK-SAME: (%[[G:.*]]: memref<64x128xf32, {{.*}}>, %[[M:.*]]: memref<64x128xf32, {{.*}}>, %[[H:.*]]: memref<1x1xf32, {{.*}}>, %[[Y:.*]]: memref<64x128xf32, {{.*}}>)
// CHECK-NEXT: %[[E:.*]] = memref.alloc()
// CHECK-NEXT: nova.elementwise_pair <sub> then <mul> ins(%[[G]], %[[M]], %[[H]] : memref<64x128xf32, {{.*}}>, memref<64x128xf32, {{.*}}>, memref<1x1xf32, {{.*}}>) outs(%[[E]] : {{.*}})
// CHECK-NEXT: nova.elementwise <add> ins(%[[M]], %[[E]] : {{.*}}) outs(%[[Y]] : {{.*}})
// CHECK-NEXT: return
func.func @adam_moment(%g: !t, %m: !t, %h: !s, %y: !t) {
  %d = memref.alloc() : !t
  nova.elementwise <sub> ins(%g, %m : !t, !t) outs(%d : !t)
  %e = memref.alloc() : !t
  nova.elementwise <mul> ins(%h, %d : !s, !t) outs(%e : !t)
  nova.elementwise <add> ins(%m, %e : !t, !t) outs(%y : !t)
  return
}

// -----

!t = memref<64x128xbf16, #nova.memory_space<sram>>

// Immediates on both stages: (x * 0.5) + 1.0.
// CHECK-LABEL: func.func @two_immediates
// CHECK-NEXT: nova.elementwise_pair <mul> scalar(5.000000e-01) then <add> scalar(1.000000e+00) ins(%{{.*}} : memref<64x128xbf16, {{.*}}>) outs(%{{.*}} : {{.*}})
// CHECK-NEXT: return
func.func @two_immediates(%x: !t, %y: !t) {
  %t = memref.alloc() : !t
  nova.elementwise <mul> scalar(5.000000e-01) ins(%x : !t) outs(%t : !t)
  nova.elementwise <add> scalar(1.000000e+00) ins(%t : !t) outs(%y : !t)
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!r = memref<64x1xf32, #nova.memory_space<sram>>

// LayerNorm's (x - mean) * rstd: per-row operands are not full-rate.
// CHECK-LABEL: func.func @per_row_operands
// CHECK-NEXT: nova.elementwise_pair <sub> then <mul> ins(%arg0, %arg1, %arg2 : memref<64x128xf32, {{.*}}>, memref<64x1xf32, {{.*}}>, memref<64x1xf32, {{.*}}>) outs(%arg3 : {{.*}})
func.func @per_row_operands(%x: !t, %mean: !r, %rstd: !r, %y: !t) {
  %t = memref.alloc() : !t
  nova.elementwise <sub> ins(%x, %mean : !t, !r) outs(%t : !t)
  nova.elementwise <mul> ins(%t, %rstd : !t, !r) outs(%y : !t)
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!h = memref<64x128xf32, #nova.memory_space<hbm>>

// CHECK-LABEL: func.func @left_alone
// Three full-rate operands: (x + a) * b.
// CHECK: nova.elementwise <add>
// CHECK-NEXT: nova.elementwise <mul>
// The intermediate read twice.
// CHECK: nova.elementwise <add>
// CHECK-NEXT: nova.elementwise <mul>
// CHECK-NEXT: nova.elementwise <mul>
// The intermediate is the subtrahend of a sub (no reversed kinds).
// CHECK: nova.elementwise <mul>
// CHECK-NEXT: nova.elementwise <sub>
// x is overwritten (by a DMA) between the two ops.
// CHECK: nova.elementwise <mul>
// CHECK-NEXT: nova.dma_start
// CHECK-NEXT: nova.elementwise <add>
// A transcendental first stage: not a pair stage.
// CHECK: nova.elementwise <exp>
// CHECK-NEXT: nova.elementwise <add>
// CHECK-NOT: elementwise_pair
func.func @left_alone(%x: !t, %a: !t, %b: !t, %y: !t, %z: !t, %src: !h) {
  %t0 = memref.alloc() : !t
  nova.elementwise <add> ins(%x, %a : !t, !t) outs(%t0 : !t)
  nova.elementwise <mul> ins(%t0, %b : !t, !t) outs(%y : !t)
  %t1 = memref.alloc() : !t
  nova.elementwise <add> scalar(1.000000e+00) ins(%x : !t) outs(%t1 : !t)
  nova.elementwise <mul> ins(%t1, %a : !t, !t) outs(%y : !t)
  nova.elementwise <mul> ins(%t1, %b : !t, !t) outs(%z : !t)
  %t2 = memref.alloc() : !t
  nova.elementwise <mul> scalar(2.000000e+00) ins(%x : !t) outs(%t2 : !t)
  nova.elementwise <sub> ins(%a, %t2 : !t, !t) outs(%y : !t)
  %t3 = memref.alloc() : !t
  nova.elementwise <mul> scalar(2.000000e+00) ins(%x : !t) outs(%t3 : !t)
  %tok = nova.dma_start %src, %x : !h -> !t
  nova.elementwise <add> scalar(1.000000e+00) ins(%t3 : !t) outs(%y : !t)
  nova.wait %tok
  %t4 = memref.alloc() : !t
  nova.elementwise <exp> ins(%x : !t) outs(%t4 : !t)
  nova.elementwise <add> scalar(1.000000e+00) ins(%t4 : !t) outs(%y : !t)
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!tb = memref<64x128xbf16, #nova.memory_space<sram>>

// CHECK-LABEL: func.func @types_and_views
// A copy (a rounding to f32) is not a stage.
// CHECK: nova.elementwise <mul>
// CHECK-NEXT: nova.elementwise <copy>
// The output a shifted view of the input: left (x's elements are read
// after y's are written).
// CHECK: nova.elementwise <mul>
// CHECK-NEXT: nova.elementwise <add>
// In place (y is x): fused.
// CHECK: nova.elementwise_pair <mul> scalar(2.000000e+00) then <add> scalar(1.000000e+00) ins(%[[X:.*]] : {{.*}}) outs(%[[X]] : {{.*}})
func.func @types_and_views(%x: !t, %xb: !tb, %big: memref<128x128xf32, #nova.memory_space<sram>>) {
  %t0 = memref.alloc() : !tb
  nova.elementwise <mul> scalar(2.000000e+00) ins(%xb : !tb) outs(%t0 : !tb)
  nova.elementwise <copy> ins(%t0 : !tb) outs(%x : !t)
  %lo = memref.subview %big[0, 0] [64, 128] [1, 1] : memref<128x128xf32, #nova.memory_space<sram>> to memref<64x128xf32, strided<[128, 1]>, #nova.memory_space<sram>>
  %hi = memref.subview %big[1, 0] [64, 128] [1, 1] : memref<128x128xf32, #nova.memory_space<sram>> to memref<64x128xf32, strided<[128, 1], offset: 128>, #nova.memory_space<sram>>
  %t1 = memref.alloc() : !t
  nova.elementwise <mul> scalar(2.000000e+00) ins(%lo : memref<64x128xf32, strided<[128, 1]>, #nova.memory_space<sram>>) outs(%t1 : !t)
  nova.elementwise <add> scalar(1.000000e+00) ins(%t1 : !t) outs(%hi : memref<64x128xf32, strided<[128, 1], offset: 128>, #nova.memory_space<sram>>)
  %t2 = memref.alloc() : !t
  nova.elementwise <mul> scalar(2.000000e+00) ins(%x : !t) outs(%t2 : !t)
  nova.elementwise <add> scalar(1.000000e+00) ins(%t2 : !t) outs(%x : !t)
  return
}

// -----

!t = memref<64x128xf32, #nova.memory_space<sram>>
!tb = memref<64x128xbf16, #nova.memory_space<sram>>
!col = memref<64x1xf32, #nova.memory_space<sram>>

// The second op writes a narrower float than the inputs and %t: fused, the
// intermediate rounded to f32 (the inputs' type) as %t was.
// CHECK-LABEL: func.func @narrower_output
// CHECK-NEXT: nova.elementwise_pair <sub> then <mul> scalar(2.000000e+00) ins(%arg0, %arg1 : memref<64x128xf32, {{.*}}>, memref<64x1xf32, {{.*}}>) outs(%arg2 : memref<64x128xbf16, {{.*}}>)
// An intermediate of bf16 between f32 inputs would round where the pair
// does not: left.
// CHECK: nova.elementwise <sub>
// CHECK-NEXT: nova.elementwise <mul>
func.func @narrower_output(%x: !t, %m: !col, %y: !tb) {
  %t0 = memref.alloc() : !t
  nova.elementwise <sub> ins(%x, %m : !t, !col) outs(%t0 : !t)
  nova.elementwise <mul> scalar(2.000000e+00) ins(%t0 : !t) outs(%y : !tb)
  %t1 = memref.alloc() : !tb
  nova.elementwise <sub> ins(%x, %m : !t, !col) outs(%t1 : !tb)
  nova.elementwise <mul> scalar(2.000000e+00) ins(%t1 : !tb) outs(%y : !tb)
  return
}
