// A 2048^3 matmul tiles into 1024-row strips of A and 128-column strips of
// B. The A strip does not change across the column loop: tiling leaves its
// view inside that loop, loop-invariant code motion moves the view out and
// nova-hoist-invariant-loads its load, so each A strip is loaded once, not
// once per column tile (32 loads). The row loop (two strips) is double
// buffered: strip 1 is prefetched while strip 0 is used, and the last
// iteration, which has nothing to prefetch, is peeled (two loads: each
// strip once; a clamped prefetch used to load strip 1 a second time).
// RUN: nova-opt %s --nova-lower-to-tiles="target=nova-t1" --nova-tiles-to-isa | FileCheck %s

// CHECK-LABEL: func.func @matmul
// CHECK-COUNT-2: nova_isa.dma_copy {{.*}}tile<hbm, f32, [1024, 2048], [2048, 1]> -> {{.*}}tile<sram, f32, [1024, 2048]
// CHECK-NOT: tile<hbm, f32, [1024, 2048]
// CHECK: return
func.func @matmul(%a: tensor<2048x2048xf32>, %b: tensor<2048x2048xf32>) -> tensor<2048x2048xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x2048xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  %r = linalg.matmul ins(%a, %b : tensor<2048x2048xf32>, tensor<2048x2048xf32>) outs(%f : tensor<2048x2048xf32>) -> tensor<2048x2048xf32>
  return %r : tensor<2048x2048xf32>
}
