// RUN: nova-opt %s -split-input-file --convert-shard-to-nova | FileCheck %s

// Groups of a 2x2 grid along axis 1: the devices of one row.
// CHECK-NOT: shard.grid
// CHECK-LABEL: func.func @all_reduce_sum_axis1
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK: %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<8x16xf32> to memref<8x16xf32, #nova.memory_space<hbm>>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<8x16xf32, #nova.memory_space<hbm>>
// CHECK: %[[T:.*]] = nova.all_reduce <sum> ins(%[[IN]] : {{.*}}) outs(%[[OUT]] : {{.*}}) groups {{\[}}[0, 1], [2, 3]]
// CHECK: nova.wait %[[T]]
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[R]]
shard.grid @grid(shape = 2x2)
func.func @all_reduce_sum_axis1(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = shard.all_reduce %x on @grid grid_axes = [1] : tensor<8x16xf32> -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// Along axis 0: the devices of one column; max maps to max.
// CHECK-LABEL: func.func @all_reduce_max_axis0
// CHECK: nova.all_reduce <max> {{.*}} groups {{\[}}[0, 2], [1, 3]]
shard.grid @grid(shape = 2x2)
func.func @all_reduce_max_axis0(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = shard.all_reduce %x on @grid grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// Both axes, listed minor first: the in-group order follows grid_axes.
// CHECK-LABEL: func.func @all_reduce_both_axes
// CHECK: nova.all_reduce <sum> {{.*}} groups {{\[}}[0, 2, 1, 3]]
shard.grid @grid(shape = 2x2)
func.func @all_reduce_both_axes(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = shard.all_reduce %x on @grid grid_axes = [1, 0] : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @all_gather_dim1
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<8x32xf32, #nova.memory_space<hbm>>
// CHECK: nova.all_gather ins({{.*}} : memref<8x16xf32, #nova.memory_space<hbm>>) outs(%[[OUT]] : {{.*}}) dim 1 groups {{\[}}[0, 1]]
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable : memref<8x32xf32, #nova.memory_space<hbm>> to tensor<8x32xf32>
shard.grid @grid(shape = 2)
func.func @all_gather_dim1(%x: tensor<8x16xf32>) -> tensor<8x32xf32> {
  %r = shard.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<8x16xf32> -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_scatter_dim0
// CHECK: nova.reduce_scatter <sum> ins({{.*}} : memref<16x8xf32, #nova.memory_space<hbm>>) outs({{.*}} : memref<4x8xf32, #nova.memory_space<hbm>>) dim 0 groups {{\[}}[0, 1, 2, 3]]
shard.grid @grid(shape = 4)
func.func @reduce_scatter_dim0(%x: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %r = shard.reduce_scatter %x on @grid grid_axes = [0] scatter_axis = 0 : tensor<16x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @all_to_all
// CHECK: nova.all_to_all ins({{.*}} : memref<8x16xf32, #nova.memory_space<hbm>>) outs({{.*}} : memref<4x32xf32, #nova.memory_space<hbm>>) split_dim 0 concat_dim 1 groups {{\[}}[0, 1]]
shard.grid @grid(shape = 2)
func.func @all_to_all(%x: tensor<8x16xf32>) -> tensor<4x32xf32> {
  %r = shard.all_to_all %x on @grid grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<8x16xf32> -> tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}

// -----

// all_slice on the second axis of a 2x4 grid: chip id -> coordinate along
// axis 1 ((id / 1) % 4) -> offset of this chip's 2 columns, one DMA out of
// the replicated buffer.
// CHECK-LABEL: func.func @all_slice_axis1
// CHECK: %[[ID:.*]] = nova.chip_id
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[Q:.*]] = arith.divui %[[ID]], %[[C1]] : index
// CHECK: %[[COORD:.*]] = arith.remui %[[Q]], %[[C4]] : index
// CHECK: %[[G:.*]] = arith.addi %{{.*}}, %[[COORD]] : index
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[OFF:.*]] = arith.muli %[[G]], %[[C2]] : index
// CHECK: %[[IN:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<4x8xf32> to memref<4x8xf32, #nova.memory_space<hbm>>
// CHECK: %[[SUB:.*]] = memref.subview %[[IN]][0, %[[OFF]]] [4, 2] [1, 1]
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<4x2xf32, #nova.memory_space<hbm>>
// CHECK: %[[T:.*]] = nova.dma_start %[[SUB]], %[[OUT]]
// CHECK: nova.wait %[[T]]
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
shard.grid @grid(shape = 2x4)
func.func @all_slice_axis1(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  %r = shard.all_slice %x on @grid grid_axes = [1] slice_axis = 1 : tensor<4x8xf32> -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

// A program without shard ops is left alone.
// CHECK-LABEL: func.func @negative_no_shard_ops
// CHECK: arith.addf
// CHECK-NOT: nova.
func.func @negative_no_shard_ops(%a: f32) -> f32 {
  %r = arith.addf %a, %a : f32
  return %r : f32
}

// -----

// Integer sums (a data-parallel loss counting its labels) lower as floats do.
// CHECK-LABEL: func.func @all_reduce_i64
// CHECK: nova.all_reduce <sum> ins(%{{.*}} : memref<1xi64, #nova.memory_space<hbm>>) outs(%{{.*}} : memref<1xi64, #nova.memory_space<hbm>>) groups {{\[}}[0, 1]]
shard.grid @grid(shape = 2)
func.func @all_reduce_i64(%x: tensor<1xi64>) -> tensor<1xi64> {
  %r = shard.all_reduce %x on @grid grid_axes = [0] : tensor<1xi64> -> tensor<1xi64>
  return %r : tensor<1xi64>
}

// -----

// The chunks of one all-reduce (nova-split-all-reduces): each writes its rows
// of one buffer, which is the concatenation; nothing is copied afterwards.
// CHECK-LABEL: func.func @all_reduce_chunks_concatenated
// CHECK-SAME: (%[[A:.*]]: tensor<4x16xf32>, %[[B:.*]]: tensor<2x16xf32>)
// CHECK: %[[WHOLE:.*]] = memref.alloc() : memref<6x16xf32, #nova.memory_space<hbm>>
// CHECK: %[[ROWS0:.*]] = memref.subview %[[WHOLE]][0, 0] [4, 16] [1, 1]
// CHECK: %[[IN0:.*]] = bufferization.to_buffer %[[A]] read_only
// CHECK: %[[T0:.*]] = nova.all_reduce <sum> ins(%[[IN0]] : {{.*}}) outs(%[[ROWS0]] : memref<4x16xf32, strided<[16, 1]>, #nova.memory_space<hbm>>) groups {{\[}}[0, 1]]
// CHECK: nova.wait %[[T0]]
// CHECK: arith.addf
// CHECK: %[[ROWS1:.*]] = memref.subview %[[WHOLE]][4, 0] [2, 16] [1, 1]
// CHECK: nova.all_reduce <sum> ins({{.*}}) outs(%[[ROWS1]] : memref<2x16xf32, strided<[16, 1], offset: 64>, #nova.memory_space<hbm>>)
// CHECK-NOT: tensor.concat
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[WHOLE]] restrict writable
// CHECK: return %[[R]]
shard.grid @g(shape = 2)
func.func @all_reduce_chunks_concatenated(%a: tensor<4x16xf32>, %b: tensor<2x16xf32>) -> tensor<6x16xf32> {
  %ra = shard.all_reduce %a on @g grid_axes = [0] : tensor<4x16xf32> -> tensor<4x16xf32>
  %e = tensor.empty() : tensor<2x16xf32>
  %b2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<2x16xf32>) outs(%e : tensor<2x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %d = arith.addf %i, %i : f32
    linalg.yield %d : f32
  } -> tensor<2x16xf32>
  %rb = shard.all_reduce %b2 on @g grid_axes = [0] : tensor<2x16xf32> -> tensor<2x16xf32>
  %c = tensor.concat dim(0) %ra, %rb : (tensor<4x16xf32>, tensor<2x16xf32>) -> tensor<6x16xf32>
  return %c : tensor<6x16xf32>
}

// -----

// A concatenation with an operand that is not an all-reduce's result, or one
// used elsewhere too: each all-reduce gets its own buffer, the concat stays.
// CHECK-LABEL: func.func @negative_concat_of_mixed
// CHECK: memref.alloc() : memref<4x16xf32
// CHECK: nova.all_reduce
// CHECK: tensor.concat dim(0)
shard.grid @g(shape = 2)
func.func @negative_concat_of_mixed(%a: tensor<4x16xf32>, %b: tensor<2x16xf32>) -> tensor<6x16xf32> {
  %ra = shard.all_reduce %a on @g grid_axes = [0] : tensor<4x16xf32> -> tensor<4x16xf32>
  %c = tensor.concat dim(0) %ra, %b : (tensor<4x16xf32>, tensor<2x16xf32>) -> tensor<6x16xf32>
  return %c : tensor<6x16xf32>
}
