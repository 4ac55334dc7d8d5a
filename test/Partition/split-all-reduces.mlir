// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-split-all-reduces{chunk-bytes=8192}))' -split-input-file | FileCheck %s
// RUN: nova-opt %s --pass-pipeline='builtin.module(func.func(nova-split-all-reduces{chunk-bytes=0}))' -split-input-file | FileCheck %s --check-prefix=OFF

// A 512 x 16 f32 matmul result (32 KiB) in 8 KiB chunks: 4 chunks of 128
// rows, each its own matmul and all-reduce, put back together in order.
// CHECK-LABEL: func.func @matmul_partial_sum
// CHECK-SAME: (%[[A:.*]]: tensor<512x16xf32>, %{{.*}}: tensor<16x16xf32>)
// CHECK: %[[A0:.*]] = tensor.extract_slice %[[A]][0, 0] [128, 16] [1, 1]
// CHECK: %[[M0:.*]] = linalg.matmul ins(%[[A0]], %{{.*}} : tensor<128x16xf32>, tensor<16x16xf32>)
// CHECK: %[[R0:.*]] = shard.all_reduce %[[M0]] on @g grid_axes = [0] : tensor<128x16xf32> -> tensor<128x16xf32>
// CHECK: tensor.extract_slice %[[A]][128, 0] [128, 16] [1, 1]
// CHECK: %[[R1:.*]] = shard.all_reduce
// CHECK: tensor.extract_slice %[[A]][256, 0] [128, 16] [1, 1]
// CHECK: %[[R2:.*]] = shard.all_reduce
// CHECK: tensor.extract_slice %[[A]][384, 0] [128, 16] [1, 1]
// CHECK: %[[R3:.*]] = shard.all_reduce
// CHECK-NOT: shard.all_reduce
// CHECK: %[[C:.*]] = tensor.concat dim(0) %[[R0]], %[[R1]], %[[R2]], %[[R3]] : {{.*}} -> tensor<512x16xf32>
// CHECK: return %[[C]]
// OFF-LABEL: func.func @matmul_partial_sum
// OFF: linalg.matmul {{.*}} -> tensor<512x16xf32>
// OFF: shard.all_reduce
// OFF-NOT: tensor.concat
shard.grid @g(shape = 2)
func.func @matmul_partial_sum(%a: tensor<512x16xf32>, %b: tensor<16x16xf32>) -> tensor<512x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<512x16xf32>) -> tensor<512x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<512x16xf32>, tensor<16x16xf32>) outs(%z : tensor<512x16xf32>) -> tensor<512x16xf32>
  %r = shard.all_reduce %m on @g grid_axes = [0] : tensor<512x16xf32> -> tensor<512x16xf32>
  return %r : tensor<512x16xf32>
}

// -----

// An embedding gradient: the one-hot (the token ids compared with each row's
// index, then cast) is fused into each chunk, so no chip holds the whole
// one-hot and the vector unit builds chunk i + 1 while chunk i flies.
// 300 rows x 16 f32 (18.75 KiB) in 8 KiB chunks: 3 chunks of 100 rows
// (too few rows to round to 128-row tiles).
// CHECK-LABEL: func.func @embedding_gradient
// CHECK-NOT: -> tensor<300x4xi1>
// CHECK: arith.cmpi eq
// CHECK: arith.uitofp
// CHECK: linalg.matmul {{.*}} -> tensor<100x16xf32>
// CHECK: shard.all_reduce {{.*}} : tensor<100x16xf32> -> tensor<100x16xf32>
// CHECK: arith.cmpi eq
// CHECK: arith.uitofp
// CHECK: linalg.matmul {{.*}} -> tensor<100x16xf32>
// CHECK: shard.all_reduce
// CHECK: arith.cmpi eq
// CHECK: arith.uitofp
// CHECK: linalg.matmul {{.*}} -> tensor<100x16xf32>
// CHECK: shard.all_reduce
// CHECK: tensor.concat dim(0)
// CHECK-NOT: -> tensor<300x4xf32>
shard.grid @g(shape = 2)
func.func @embedding_gradient(%ids: tensor<4xi64>, %rows: tensor<300xi64>, %g: tensor<4x16xf32>) -> tensor<300x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<300x4xi1>
  %eq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%ids, %rows : tensor<4xi64>, tensor<300xi64>) outs(%e : tensor<300x4xi1>) {
  ^bb0(%i: i64, %row: i64, %o: i1):
    %c = arith.cmpi eq, %i, %row : i64
    linalg.yield %c : i1
  } -> tensor<300x4xi1>
  %ef = tensor.empty() : tensor<300x4xf32>
  %onehot = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%eq : tensor<300x4xi1>) outs(%ef : tensor<300x4xf32>) {
  ^bb0(%i: i1, %o: f32):
    %f = arith.uitofp %i : i1 to f32
    linalg.yield %f : f32
  } -> tensor<300x4xf32>
  %eo = tensor.empty() : tensor<300x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%eo : tensor<300x16xf32>) -> tensor<300x16xf32>
  %m = linalg.matmul ins(%onehot, %g : tensor<300x4xf32>, tensor<4x16xf32>) outs(%z : tensor<300x16xf32>) -> tensor<300x16xf32>
  %r = shard.all_reduce %m on @g grid_axes = [0] : tensor<300x16xf32> -> tensor<300x16xf32>
  return %r : tensor<300x16xf32>
}

// -----

// The zero init is read elsewhere too (the tied weight's other gradient adds
// to it): each chunk still gets its own fill, so its matmul starts from a
// known zero accumulator.
// CHECK-LABEL: func.func @shared_zero_init
// CHECK: %[[Z:.*]] = linalg.fill {{.*}} -> tensor<512x16xf32>
// CHECK: %[[Z0:.*]] = linalg.fill {{.*}} -> tensor<128x16xf32>
// CHECK: linalg.matmul {{.*}} outs(%[[Z0]] : tensor<128x16xf32>)
// CHECK-COUNT-3: linalg.fill {{.*}} -> tensor<128x16xf32>
// CHECK: tensor.concat
// CHECK: return {{.*}}, %[[Z]]
shard.grid @g(shape = 2)
func.func @shared_zero_init(%a: tensor<512x16xf32>, %b: tensor<16x16xf32>) -> (tensor<512x16xf32>, tensor<512x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<512x16xf32>) -> tensor<512x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<512x16xf32>, tensor<16x16xf32>) outs(%z : tensor<512x16xf32>) -> tensor<512x16xf32>
  %r = shard.all_reduce %m on @g grid_axes = [0] : tensor<512x16xf32> -> tensor<512x16xf32>
  return %r, %z : tensor<512x16xf32>, tensor<512x16xf32>
}

// -----

// The partial sum is used again (returned beside its reduction): chunks would
// compute it twice, so it is reduced whole.
// CHECK-LABEL: func.func @negative_partial_used_twice
// CHECK: linalg.matmul {{.*}} -> tensor<512x16xf32>
// CHECK: shard.all_reduce {{.*}} : tensor<512x16xf32> -> tensor<512x16xf32>
// CHECK-NOT: tensor.concat
shard.grid @g(shape = 2)
func.func @negative_partial_used_twice(%a: tensor<512x16xf32>, %b: tensor<16x16xf32>) -> (tensor<512x16xf32>, tensor<512x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<512x16xf32>) -> tensor<512x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<512x16xf32>, tensor<16x16xf32>) outs(%z : tensor<512x16xf32>) -> tensor<512x16xf32>
  %r = shard.all_reduce %m on @g grid_axes = [0] : tensor<512x16xf32> -> tensor<512x16xf32>
  return %r, %m : tensor<512x16xf32>, tensor<512x16xf32>
}

// -----

// Within one chunk (a bucket's worth or less), or an argument with no
// producer to tile: left as it is.
// CHECK-LABEL: func.func @negative_small_or_no_producer
// CHECK: shard.all_reduce %{{.*}} : tensor<64x16xf32> -> tensor<64x16xf32>
// CHECK: shard.all_reduce %arg1 {{.*}} : tensor<512x16xf32> -> tensor<512x16xf32>
// CHECK-NOT: tensor.concat
shard.grid @g(shape = 2)
func.func @negative_small_or_no_producer(%a: tensor<64x16xf32>, %big: tensor<512x16xf32>) -> (tensor<64x16xf32>, tensor<512x16xf32>) {
  %e = tensor.empty() : tensor<64x16xf32>
  %n = linalg.negf ins(%a : tensor<64x16xf32>) outs(%e : tensor<64x16xf32>) -> tensor<64x16xf32>
  %r = shard.all_reduce %n on @g grid_axes = [0] : tensor<64x16xf32> -> tensor<64x16xf32>
  %s = shard.all_reduce %big on @g grid_axes = [0] : tensor<512x16xf32> -> tensor<512x16xf32>
  return %r, %s : tensor<64x16xf32>, tensor<512x16xf32>
}

// -----

// The one-hot of ids read out of the rows' iota (the frontend's
// bounds-checked embedding backward, before elementwise fusion): what
// nova-form-scatter turns into a DMA scatter-add. The matmul is not cut into
// row chunks (each a [rows x tokens] matmul); the gradient is reduced whole.
// CHECK-LABEL: func.func @negative_one_hot_for_the_scatter
// CHECK: linalg.matmul {{.*}} -> tensor<300x16xf32>
// CHECK: shard.all_reduce {{.*}} : tensor<300x16xf32> -> tensor<300x16xf32>
// CHECK-NOT: tensor.concat
shard.grid @g(shape = 2)
func.func @negative_one_hot_for_the_scatter(%raw: tensor<4xi64>, %g: tensor<4x16xf32>) -> tensor<300x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e300 = tensor.empty() : tensor<300xi64>
  %rows = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e300 : tensor<300xi64>) {
  ^bb0(%o: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<300xi64>
  %e4 = tensor.empty() : tensor<4xi64>
  %ids = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%raw : tensor<4xi64>) outs(%e4 : tensor<4xi64>) {
  ^bb0(%in: i64, %o: i64):
    %x = arith.index_cast %in : i64 to index
    %r = tensor.extract %rows[%x] : tensor<300xi64>
    linalg.yield %r : i64
  } -> tensor<4xi64>
  %e = tensor.empty() : tensor<300x4xi1>
  %eq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%ids, %rows : tensor<4xi64>, tensor<300xi64>) outs(%e : tensor<300x4xi1>) {
  ^bb0(%i: i64, %row: i64, %o: i1):
    %c = arith.cmpi eq, %i, %row : i64
    linalg.yield %c : i1
  } -> tensor<300x4xi1>
  %ef = tensor.empty() : tensor<300x4xf32>
  %onehot = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%eq : tensor<300x4xi1>) outs(%ef : tensor<300x4xf32>) {
  ^bb0(%i: i1, %o: f32):
    %f = arith.uitofp %i : i1 to f32
    linalg.yield %f : f32
  } -> tensor<300x4xf32>
  %eo = tensor.empty() : tensor<300x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%eo : tensor<300x16xf32>) -> tensor<300x16xf32>
  %m = linalg.matmul ins(%onehot, %g : tensor<300x4xf32>, tensor<4x16xf32>) outs(%z : tensor<300x16xf32>) -> tensor<300x16xf32>
  %r = shard.all_reduce %m on @g grid_axes = [0] : tensor<300x16xf32> -> tensor<300x16xf32>
  return %r : tensor<300x16xf32>
}
