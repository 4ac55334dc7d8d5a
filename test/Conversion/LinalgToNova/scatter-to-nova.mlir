// RUN: nova-opt %s --split-input-file --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(convert-linalg-to-nova))' | FileCheck %s

// One block of rows (the positions fit an eighth of SRAM): the positions
// DMAed on chip, then one accumulating scatter of the values, read in place
// from HBM, into the table.
// CHECK-LABEL: func.func @scatter_add_one_block
// CHECK-SAME: (%[[V:.*]]: memref<6x16xf32, #nova.memory_space<hbm>>, %[[P:.*]]: memref<6x16xi64, #nova.memory_space<hbm>>, %[[T:.*]]: memref<10x16xf32, #nova.memory_space<hbm>>)
// CHECK: %[[TILE:.*]] = memref.alloc() : memref<6x16xi64, #nova.memory_space<sram>>
// CHECK: %[[PV:.*]] = memref.subview %[[P]][0, 0] [6, 16] [1, 1]
// CHECK: %[[D:.*]] = nova.dma_start %[[PV]], %[[TILE]]
// CHECK: nova.wait %[[D]]
// CHECK: %[[VV:.*]] = memref.subview %[[V]][0, 0] [6, 16] [1, 1]
// CHECK: %[[S:.*]] = nova.scatter %[[VV]][%[[TILE]]] into %[[T]] accumulate
// CHECK: nova.wait %[[S]]
// CHECK-NOT: nova.scatter_add
func.func @scatter_add_one_block(%v: memref<6x16xf32, #nova.memory_space<hbm>>, %pos: memref<6x16xi64, #nova.memory_space<hbm>>, %table: memref<10x16xf32, #nova.memory_space<hbm>>) {
  nova.scatter_add ins(%v, %pos : memref<6x16xf32, #nova.memory_space<hbm>>, memref<6x16xi64, #nova.memory_space<hbm>>) outs(%table : memref<10x16xf32, #nova.memory_space<hbm>>)
  return
}

// -----

// 200 rows of 4096 positions (32 KiB each): blocks of 96 rows fill the
// eighth of SRAM, two of them in a loop, then a tail of 8.
// CHECK-LABEL: func.func @scatter_add_blocks_and_tail
// CHECK-SAME: (%[[V:.*]]: memref<200x4096xf32, #nova.memory_space<hbm>>, %[[P:.*]]: memref<200x4096xi64, #nova.memory_space<hbm>>, %[[T:.*]]: memref<64x4096xf32, #nova.memory_space<hbm>>)
// CHECK: %[[TILE:.*]] = memref.alloc() : memref<96x4096xi64, #nova.memory_space<sram>>
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:   %[[ROW:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK:   %[[PV:.*]] = memref.subview %[[P]][%[[ROW]], 0] [96, 4096] [1, 1]
// CHECK:   nova.dma_start %[[PV]], %[[TILE]]
// CHECK:   %[[VV:.*]] = memref.subview %[[V]][%[[ROW]], 0] [96, 4096] [1, 1]
// CHECK:   nova.scatter %[[VV]][%[[TILE]]] into %[[T]] accumulate
// CHECK: %[[TAIL:.*]] = memref.alloc() : memref<8x4096xi64, #nova.memory_space<sram>>
// CHECK: memref.subview %[[P]][192, 0] [8, 4096] [1, 1]
// CHECK: nova.scatter %{{.*}}[%[[TAIL]]] into %[[T]] accumulate
func.func @scatter_add_blocks_and_tail(%v: memref<200x4096xf32, #nova.memory_space<hbm>>, %pos: memref<200x4096xi64, #nova.memory_space<hbm>>, %table: memref<64x4096xf32, #nova.memory_space<hbm>>) {
  nova.scatter_add ins(%v, %pos : memref<200x4096xf32, #nova.memory_space<hbm>>, memref<200x4096xi64, #nova.memory_space<hbm>>) outs(%table : memref<64x4096xf32, #nova.memory_space<hbm>>)
  return
}

// -----

// Positions already in SRAM are scattered from in place.
// CHECK-LABEL: func.func @scatter_add_positions_on_chip
// CHECK-NOT: nova.dma_start
// CHECK: %[[PV:.*]] = memref.subview %{{.*}}[0, 0] [6, 16] [1, 1] : memref<6x16xi64, #nova.memory_space<sram>>
// CHECK: nova.scatter %{{.*}}[%[[PV]]] into %{{.*}} accumulate
func.func @scatter_add_positions_on_chip(%v: memref<6x16xf32, #nova.memory_space<hbm>>, %pos: memref<6x16xi64, #nova.memory_space<sram>>, %table: memref<10x16xf32, #nova.memory_space<hbm>>) {
  nova.scatter_add ins(%v, %pos : memref<6x16xf32, #nova.memory_space<hbm>>, memref<6x16xi64, #nova.memory_space<sram>>) outs(%table : memref<10x16xf32, #nova.memory_space<hbm>>)
  return
}
