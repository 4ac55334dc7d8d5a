// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(convert-linalg-to-nova))' | FileCheck %s

// A head split (rows of 64 bf16 = 128 bytes stay whole) from HBM to HBM: one
// DMA through a permuted view, no vector transpose and no SRAM tile.
// CHECK-LABEL: func.func @head_split_hbm
// CHECK-SAME: (%[[X:.*]]: memref<1x256x1x64xbf16, {{.*}}>, %[[Y:.*]]: memref<1x1x256x64xbf16, {{.*}}>)
// CHECK: %[[V:.*]] = memref.transpose %[[X]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// CHECK: %[[T:.*]] = nova.dma_start %[[V]], %[[Y]]
// CHECK: nova.wait %[[T]]
// CHECK-NOT: nova.transpose
// CHECK-NOT: memref.alloc
func.func @head_split_hbm(%x: memref<1x256x1x64xbf16, #nova.memory_space<hbm>>,
                          %y: memref<1x1x256x64xbf16, #nova.memory_space<hbm>>) {
  linalg.transpose ins(%x : memref<1x256x1x64xbf16, #nova.memory_space<hbm>>)
                   outs(%y : memref<1x1x256x64xbf16, #nova.memory_space<hbm>>) permutation = [0, 2, 1, 3]
  return
}

// -----

// Into an SRAM tile: the DMA writes the tile directly.
// CHECK-LABEL: func.func @head_split_into_sram
// CHECK: %[[V:.*]] = memref.transpose
// CHECK: nova.dma_start %[[V]], %{{.*}} : memref<16x8x32xf32, strided<[32, 512, 1]>, #nova.memory_space<hbm>> -> memref<16x8x32xf32, #nova.memory_space<sram>>
// CHECK-NOT: nova.transpose
func.func @head_split_into_sram(%x: memref<8x16x32xf32, #nova.memory_space<hbm>>,
                                %y: memref<16x8x32xf32, #nova.memory_space<sram>>) {
  linalg.transpose ins(%x : memref<8x16x32xf32, #nova.memory_space<hbm>>)
                   outs(%y : memref<16x8x32xf32, #nova.memory_space<sram>>) permutation = [1, 0, 2]
  return
}

// -----

// Rows shorter than an HBM burst (8 f32 = 32 bytes) would waste bandwidth by
// DMA: the vector unit transposes.
// CHECK-LABEL: func.func @short_rows_stay_vector
// CHECK: nova.dma_start
// CHECK: nova.transpose
func.func @short_rows_stay_vector(%x: memref<8x16x8xf32, #nova.memory_space<hbm>>,
                                  %y: memref<16x8x8xf32, #nova.memory_space<hbm>>) {
  linalg.transpose ins(%x : memref<8x16x8xf32, #nova.memory_space<hbm>>)
                   outs(%y : memref<16x8x8xf32, #nova.memory_space<hbm>>) permutation = [1, 0, 2]
  return
}

// -----

// The innermost dimension moves: elements, not rows, so the vector unit
// transposes an SRAM tile.
// CHECK-LABEL: func.func @matrix_transpose_stays_vector
// CHECK: nova.transpose
func.func @matrix_transpose_stays_vector(%x: memref<64x128xf32, #nova.memory_space<hbm>>,
                                         %y: memref<128x64xf32, #nova.memory_space<hbm>>) {
  linalg.transpose ins(%x : memref<64x128xf32, #nova.memory_space<hbm>>)
                   outs(%y : memref<128x64xf32, #nova.memory_space<hbm>>) permutation = [1, 0]
  return
}
