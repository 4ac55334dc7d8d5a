// RUN: nova-opt %s | nova-opt | FileCheck %s
// RUN: nova-opt %s -mlir-print-op-generic | nova-opt | FileCheck %s

// Round trip of the collectives (all_reduce, all_gather, reduce_scatter, all_to_all, barrier) through the custom and the generic form.

!hbm = memref<64x128xf32, #nova.memory_space<hbm>>
!sram = memref<64x128xf32, #nova.memory_space<sram>>

// CHECK-LABEL: func.func @collectives_on_four_chips
// CHECK: %[[AR:.*]] = nova.all_reduce <sum> ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<hbm>>) outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<hbm>>) groups {{\[\[}}0, 1], [2, 3]]
// CHECK: nova.all_reduce <avg> {{.*}} groups {{\[\[}}0, 1, 2, 3]]
// CHECK: nova.all_gather ins(%{{.*}} : memref<16x128xf32, #nova.memory_space<hbm>>) outs(%{{.*}} : memref<64x128xf32, #nova.memory_space<hbm>>) dim 0 groups {{\[\[}}0, 1, 2, 3]]
// CHECK: nova.reduce_scatter <max> ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<hbm>>) outs(%{{.*}} : memref<64x64xf32, #nova.memory_space<hbm>>) dim 1 groups {{\[\[}}0, 2], [1, 3]]
// CHECK: nova.all_to_all ins(%{{.*}} : memref<64x128xf32, #nova.memory_space<hbm>>) outs(%{{.*}} : memref<16x512xf32, #nova.memory_space<hbm>>) split_dim 0 concat_dim 1 groups {{\[\[}}3, 2, 1, 0]]
// CHECK: nova.barrier groups {{\[\[}}0], [1], [2], [3]]
// CHECK: nova.wait %[[AR]]
func.func @collectives_on_four_chips(%x: !hbm, %y: !hbm,
                                     %s: memref<16x128xf32, #nova.memory_space<hbm>>,
                                     %h: memref<64x64xf32, #nova.memory_space<hbm>>,
                                     %w: memref<16x512xf32, #nova.memory_space<hbm>>) {
  %0 = nova.all_reduce <sum> ins(%x : !hbm) outs(%y : !hbm) groups [[0, 1], [2, 3]]
  %1 = nova.all_reduce <avg> ins(%x : !hbm) outs(%y : !hbm) groups [[0, 1, 2, 3]]
  %2 = nova.all_gather ins(%s : memref<16x128xf32, #nova.memory_space<hbm>>) outs(%y : !hbm) dim 0 groups [[0, 1, 2, 3]]
  %3 = nova.reduce_scatter <max> ins(%x : !hbm) outs(%h : memref<64x64xf32, #nova.memory_space<hbm>>) dim 1 groups [[0, 2], [1, 3]]
  %4 = nova.all_to_all ins(%x : !hbm) outs(%w : memref<16x512xf32, #nova.memory_space<hbm>>) split_dim 0 concat_dim 1 groups [[3, 2, 1, 0]]
  %5 = nova.barrier groups [[0], [1], [2], [3]]
  nova.wait %0, %1, %2, %3, %4, %5
  return
}
