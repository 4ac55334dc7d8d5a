// RUN: nova-opt %s --nova-erase-dead-generic-results -split-input-file -verify-diagnostics | FileCheck %s

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>

// torch's max-with-index (softmax): only the max is used.
// CHECK-LABEL: func.func @max_with_dead_index
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<4xf32>)
// CHECK-NOT: linalg.index
// CHECK-NOT: arith.select
// CHECK: arith.maximumf
// CHECK: linalg.yield %{{.*}} : f32
// CHECK: return %[[MAX]]
func.func @max_with_dead_index(%x: tensor<4x8xf32>, %m: tensor<4xf32>, %i: tensor<4xi64>) -> tensor<4xf32> {
  %r:2 = linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m, %i : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %max = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ki, %idx : i64
    linalg.yield %max, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @negative_single_result
// CHECK: linalg.generic
// CHECK: arith.addf
func.func @negative_single_result(%x: tensor<4x8xf32>, %m: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @negative_both_results_live(%x: tensor<4x8xf32>, %m: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xi64>) {
  // expected-error @+1 {{linalg.generic has 2 live results; nova normal form needs one result per generic}}
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m, %i : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %idx: i64):
    %k = linalg.index 1 : index
    %ki = arith.index_cast %k : index to i64
    %max = arith.maximumf %in, %out : f32
    %gt = arith.cmpf ogt, %in, %out : f32
    %sel = arith.select %gt, %ki, %idx : i64
    linalg.yield %max, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xi64>
}

// -----

// Both results live but independent: a sum over a window and the window's
// size, which depends only on its own loop index. The sum keeps the loops; the
// size becomes a parallel generic over its own dimension.
#x = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @independent_results_split
// CHECK:         %[[SUM:.+]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "reduction"]
// CHECK:           arith.addf
// CHECK:         %[[SIZE:.+]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel"]
// CHECK-SAME:      outs(
// CHECK:           linalg.index 0
// CHECK:           arith.sitofp
// CHECK:         return %[[SUM]], %[[SIZE]]
func.func @independent_results_split(%x: tensor<4x8xf32>, %s: tensor<4xf32>, %n: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = linalg.generic {indexing_maps = [#x, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%s, %n : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32, %size: f32):
    %i = linalg.index 0 : index
    %c1 = arith.constant 1 : index
    %w = arith.addi %i, %c1 : index
    %wi = arith.index_cast %w : index to i64
    %wf = arith.sitofp %wi : i64 to f32
    %sum = arith.addf %in, %acc : f32
    linalg.yield %sum, %wf : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
