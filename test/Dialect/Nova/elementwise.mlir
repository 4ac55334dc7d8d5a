// RUN: nova-opt %s | nova-opt | FileCheck %s
// RUN: nova-opt %s -mlir-print-op-generic | nova-opt | FileCheck %s

// Round trip of nova.elementwise through the custom and the generic form.

!hbm = memref<64x128xf32, #nova.memory_space<hbm>>
!sram = memref<64x128xf32, #nova.memory_space<sram>>

// CHECK-LABEL: func.func @elementwise_gelu_epilogue
// CHECK: nova.elementwise <add> ins(%{{.*}}, %{{.*}} : memref<64x128xf32, #nova.memory_space<acc>>, memref<1x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <mul> scalar(0.70710678118654757) ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <erf> ins(
// CHECK: nova.elementwise <add> scalar(1.000000e+00) ins(
// CHECK: nova.elementwise <mul> ins(
// CHECK: nova.elementwise <mul> scalar(5.000000e-01) ins(
func.func @elementwise_gelu_epilogue(%acc: memref<64x128xf32, #nova.memory_space<acc>>,
                                     %bias: memref<1x128xf32, #nova.memory_space<sram>>,
                                     %x: !sram, %t: !sram) {
  nova.elementwise <add> ins(%acc, %bias : memref<64x128xf32, #nova.memory_space<acc>>, memref<1x128xf32, #nova.memory_space<sram>>) outs(%x : !sram)
  nova.elementwise <mul> scalar(0.70710678118654757) ins(%x : !sram) outs(%t : !sram)
  nova.elementwise <erf> ins(%t : !sram) outs(%t : !sram)
  nova.elementwise <add> scalar(1.0) ins(%t : !sram) outs(%t : !sram)
  nova.elementwise <mul> ins(%x, %t : !sram, !sram) outs(%t : !sram)
  nova.elementwise <mul> scalar(0.5) ins(%t : !sram) outs(%t : !sram)
  return
}

// CHECK-LABEL: func.func @elementwise_all_kinds
// CHECK-COUNT-12: nova.elementwise <{{copy|neg|abs|exp|log|sqrt|rsqrt|recip|tanh|erf|sigmoid|relu}}> ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>) outs
// CHECK-COUNT-13: nova.elementwise <{{add|sub|mul|div|max|min|pow|cmp_eq|cmp_ne|cmp_lt|cmp_le|cmp_gt|cmp_ge}}> ins(%{{.*}}, %{{.*}} :
// CHECK: nova.elementwise <select> ins(%{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: nova.elementwise <copy> ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xbf16, #nova.memory_space<sram>>)
func.func @elementwise_all_kinds(%a: !sram, %b: !sram, %c: !sram, %o: !sram,
                                 %h: memref<64x128xbf16, #nova.memory_space<sram>>) {
  nova.elementwise <copy> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <neg> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <abs> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <exp> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <log> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <sqrt> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <rsqrt> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <recip> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <tanh> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <erf> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <sigmoid> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <relu> ins(%a : !sram) outs(%o : !sram)
  nova.elementwise <add> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <sub> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <mul> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <div> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <max> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <min> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <pow> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <cmp_eq> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <cmp_ne> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <cmp_lt> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <cmp_le> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <cmp_gt> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <cmp_ge> ins(%a, %b : !sram, !sram) outs(%o : !sram)
  nova.elementwise <select> ins(%c, %a, %b : !sram, !sram, !sram) outs(%o : !sram)
  nova.elementwise <copy> ins(%a : !sram) outs(%h : memref<64x128xbf16, #nova.memory_space<sram>>)
  return
}

// CHECK-LABEL: func.func @elementwise_pair
// CHECK: nova.elementwise_pair <sub> then <mul> ins(%{{.*}}, %{{.*}}, %{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x1xf32, #nova.memory_space<sram>>, memref<1x1xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK: nova.elementwise_pair <mul> scalar(5.000000e-01) then <add> ins(%{{.*}}, %{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK: nova.elementwise_pair <div> scalar(2.000000e+00) then <max> scalar(0.000000e+00) ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>)
func.func @elementwise_pair(%x: memref<64x128xf32, #nova.memory_space<sram>>, %r: memref<64x1xf32, #nova.memory_space<sram>>, %s: memref<1x1xf32, #nova.memory_space<sram>>, %y: memref<64x128xf32, #nova.memory_space<sram>>) {
  nova.elementwise_pair <sub> then <mul> ins(%x, %r, %s : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x1xf32, #nova.memory_space<sram>>, memref<1x1xf32, #nova.memory_space<sram>>) outs(%y : memref<64x128xf32, #nova.memory_space<sram>>)
  nova.elementwise_pair <mul> scalar(0.5) then <add> ins(%x, %y : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x128xf32, #nova.memory_space<sram>>) outs(%y : memref<64x128xf32, #nova.memory_space<sram>>)
  nova.elementwise_pair <div> scalar(2.0) then <max> scalar(0.0) ins(%x : memref<64x128xf32, #nova.memory_space<sram>>) outs(%y : memref<64x128xf32, #nova.memory_space<sram>>)
  return
}

// Float types mix: an f32 op may write bf16 (the unit rounds its f32
// result), a bf16 input may meet an f32 one, a pair may write a narrower
// type than its inputs.
// CHECK-LABEL: func.func @elementwise_float_types_mix
// CHECK: nova.elementwise <exp> ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xbf16, #nova.memory_space<sram>>)
// CHECK: nova.elementwise <add> ins(%{{.*}}, %{{.*}} : memref<64x128xf32, #nova.memory_space<acc>>, memref<1x128xbf16, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xbf16, #nova.memory_space<sram>>)
// CHECK: nova.elementwise_pair <sub> then <mul> scalar(5.000000e-01) ins(%{{.*}}, %{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x1xf32, #nova.memory_space<sram>>) outs(%{{.*}} : memref<64x128xbf16, #nova.memory_space<sram>>)
func.func @elementwise_float_types_mix(%x: memref<64x128xf32, #nova.memory_space<sram>>, %acc: memref<64x128xf32, #nova.memory_space<acc>>, %bias: memref<1x128xbf16, #nova.memory_space<sram>>, %r: memref<64x1xf32, #nova.memory_space<sram>>, %y: memref<64x128xbf16, #nova.memory_space<sram>>) {
  nova.elementwise <exp> ins(%x : memref<64x128xf32, #nova.memory_space<sram>>) outs(%y : memref<64x128xbf16, #nova.memory_space<sram>>)
  nova.elementwise <add> ins(%acc, %bias : memref<64x128xf32, #nova.memory_space<acc>>, memref<1x128xbf16, #nova.memory_space<sram>>) outs(%y : memref<64x128xbf16, #nova.memory_space<sram>>)
  nova.elementwise_pair <sub> then <mul> scalar(0.5) ins(%x, %r : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x1xf32, #nova.memory_space<sram>>) outs(%y : memref<64x128xbf16, #nova.memory_space<sram>>)
  return
}
