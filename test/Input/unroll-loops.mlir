// RUN: nova-opt %s --nova-unroll-loops -split-input-file -verify-diagnostics | FileCheck %s
// RUN: not nova-opt %s --nova-unroll-loops=max-iterations=2 -split-input-file 2>&1 | FileCheck %s --check-prefix=LIMIT

// torch-mlir's det: one elimination step per row, the slices sized by the
// induction variable. Unrolled, every slice is static.
// CHECK-LABEL: func.func @elimination_rows
// CHECK-NOT: scf.for
// CHECK: tensor.extract_slice %{{.*}}[1, 0] [3, 4] [1, 1] : tensor<4x4xf32> to tensor<3x4xf32>
// CHECK: tensor.extract_slice %{{.*}}[2, 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
// CHECK: tensor.extract_slice %{{.*}}[3, 0] [1, 4] [1, 1] : tensor<4x4xf32> to tensor<1x4xf32>
// CHECK-NOT: tensor<?
// LIMIT: error: 'scf.for' with 3 iterations; nova unrolls loops of at most 2 (max-iterations)
func.func @elimination_rows(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %x) -> (tensor<4x4xf32>) {
    %next = arith.addi %i, %c1 : index
    %n = arith.subi %c3, %i : index
    %rows = tensor.extract_slice %a[%next, 0] [%n, 4] [1, 1] : tensor<4x4xf32> to tensor<?x4xf32>
    %e = tensor.empty(%n) : tensor<?x4xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        ins(%rows : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %m = arith.mulf %in, %in : f32
      linalg.yield %m : f32
    } -> tensor<?x4xf32>
    %u = tensor.insert_slice %s into %a[%next, 0] [%n, 4] [1, 1] : tensor<?x4xf32> into tensor<4x4xf32>
    scf.yield %u : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

// Nothing to unroll: the function is left as it is (not canonicalized).
// CHECK-LABEL: func.func @no_loops
// CHECK: %[[A:.*]] = arith.addf %arg0, %arg0
// CHECK: %[[B:.*]] = arith.addf %arg0, %arg0
// CHECK: return %[[A]], %[[B]]
func.func @no_loops(%x: f32) -> (f32, f32) {
  %a = arith.addf %x, %x : f32
  %b = arith.addf %x, %x : f32
  return %a, %b : f32, f32
}

// -----

func.func @negative_dynamic_trip_count(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.for' with a trip count that is not a constant; nova unrolls loops of constant trip count only}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    scf.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @negative_while(%x: i1) {
  // expected-error @+1 {{'scf.while' has no nova lowering; only scf.for loops of constant trip count are taken (unrolled)}}
  scf.while : () -> () {
    scf.condition(%x)
  } do {
    scf.yield
  }
  return
}
