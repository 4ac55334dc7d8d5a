// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(nova-tile{max-rows=512}),canonicalize,nova-bufferize,canonicalize,cse)' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Function boundaries and full-size tensors land in HBM; the matmul tile
// created inside the tile loop (the fused fill's destination) is an SRAM
// buffer, so the epilogue reads it on chip instead of from HBM.
// CHECK-LABEL: func.func @matmul_bias_places_buffers
// CHECK-SAME: (%[[A:.*]]: memref<64x96xf32, #nova.memory_space<hbm>>, %[[B:.*]]: memref<96x256xf32, #nova.memory_space<hbm>>, %[[BIAS:.*]]: memref<256xf32, #nova.memory_space<hbm>>) -> memref<64x256xf32, #nova.memory_space<hbm>>
// CHECK: %[[OUT:.*]] = memref.alloc() {{.*}} : memref<64x256xf32, #nova.memory_space<hbm>>
// CHECK: scf.for
// CHECK: %[[TILE:.*]] = memref.alloc() {{.*}} : memref<64x128xf32, #nova.memory_space<sram>>
// CHECK: linalg.fill {{.*}} outs(%[[TILE]] : memref<64x128xf32, #nova.memory_space<sram>>)
// CHECK: linalg.matmul ins(%[[A]], %{{.*}} : memref<64x96xf32, #nova.memory_space<hbm>>, memref<96x128xf32, strided<[256, 1], offset: ?>, #nova.memory_space<hbm>>) outs(%[[TILE]]
// CHECK: %[[DST:.*]] = memref.subview %[[OUT]]
// CHECK: linalg.generic {{.*}} ins(%[[TILE]], %{{.*}} : memref<64x128xf32, #nova.memory_space<sram>>, {{.*}}) outs(%[[DST]]
// CHECK: return %[[OUT]]
func.func @matmul_bias_places_buffers(%a: tensor<64x96xf32>, %b: tensor<96x256xf32>, %bias: tensor<256xf32>) -> tensor<64x256xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x256xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<64x256xf32>) -> tensor<64x256xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x96xf32>, tensor<96x256xf32>) outs(%f : tensor<64x256xf32>) -> tensor<64x256xf32>
  %g = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %bias : tensor<64x256xf32>, tensor<256xf32>) outs(%e : tensor<64x256xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x256xf32>
  return %g : tensor<64x256xf32>
}

// CHECK-LABEL: func.func @negative_no_loops_stays_in_hbm
// CHECK: memref.alloc() {{.*}} : memref<8x8xf32, #nova.memory_space<hbm>>
// CHECK-NOT: #nova.memory_space<sram>
func.func @negative_no_loops_stays_in_hbm(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  %r = linalg.copy ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// A weight cast to bf16 and zero-padded (nova-pad-matmul's operand of the
// 50257-word LM head, here 1000 -> 1024 rows), read again after the padding
// (the backward's dX): the cast's tile loop writes its slice of the padded
// buffer, and the later reader reads that slice; no unpadded buffer is
// allocated and copied over. The zero strip, inserted off the origin, keeps
// its own buffer.
// CHECK-LABEL: func.func @padding_computed_in_place
// CHECK: %[[WIDE:.*]] = memref.alloc() {{.*}} : memref<1024x256xbf16, #nova.memory_space<hbm>>
// CHECK: %[[STRIP:.*]] = memref.alloc() {{.*}} : memref<24x256xbf16, #nova.memory_space<hbm>>
// CHECK-NOT: memref<1000x256xbf16, #nova.memory_space<hbm>>
// CHECK: %[[MAIN:.*]] = memref.subview %[[WIDE]][0, 0] [1000, 256] [1, 1]
// CHECK: scf.for
// CHECK: memref.subview %[[MAIN]]
// CHECK: linalg.generic
// CHECK-NOT: memref<1000x256xbf16, #nova.memory_space<hbm>>
// CHECK: return
func.func @padding_computed_in_place(%w: tensor<1000x256xf32>) -> (tensor<1024x256xf32>, tensor<1000x256xf32>) {
  %zero = arith.constant 0.0 : bf16
  %e0 = tensor.empty() : tensor<1000x256xbf16>
  %wide0 = tensor.empty() : tensor<1024x256xbf16>
  %strip0 = tensor.empty() : tensor<24x256xbf16>
  %strip = linalg.fill ins(%zero : bf16) outs(%strip0 : tensor<24x256xbf16>) -> tensor<24x256xbf16>
  %wide1 = tensor.insert_slice %strip into %wide0[1000, 0] [24, 256] [1, 1] : tensor<24x256xbf16> into tensor<1024x256xbf16>
  %wb = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<1000x256xf32>) outs(%e0 : tensor<1000x256xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1000x256xbf16>
  %wide = tensor.insert_slice %wb into %wide1[0, 0] [1000, 256] [1, 1] : tensor<1000x256xbf16> into tensor<1024x256xbf16>
  %e1 = tensor.empty() : tensor<1024x256xf32>
  %up = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wide : tensor<1024x256xbf16>) outs(%e1 : tensor<1024x256xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %t = arith.extf %a : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<1024x256xf32>
  %e2 = tensor.empty() : tensor<1000x256xf32>
  %later = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wb : tensor<1000x256xbf16>) outs(%e2 : tensor<1000x256xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %t = arith.extf %a : bf16 to f32
    linalg.yield %t : f32
  } -> tensor<1000x256xf32>
  return %up, %later : tensor<1024x256xf32>, tensor<1000x256xf32>
}
