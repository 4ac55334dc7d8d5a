// RUN: nova-opt %s --nova-demote-f64 -split-input-file -verify-diagnostics | FileCheck %s

// torch-mlir's LayerNorm var_mean: extf to f64, reduce in f64, truncf back.
// CHECK-LABEL: func.func @var_mean_f64
// CHECK-NOT: f64
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: linalg.yield %{{.*}} : f32
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}"reduction"
// CHECK-SAME: outs(%{{.*}} : tensor<4x1xf32>)
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: return %{{.*}} : tensor<4x1xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0, 0)>
func.func @var_mean_f64(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %zero = arith.constant 0.0 : f64
  %n = arith.constant 8.0 : f64
  %e = tensor.empty() : tensor<4x8xf64>
  %ext = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf64>) {
  ^bb0(%in: f32, %out: f64):
    %d = arith.extf %in : f32 to f64
    linalg.yield %d : f64
  } -> tensor<4x8xf64>
  %e1 = tensor.empty() : tensor<4x1xf64>
  %init = linalg.fill ins(%zero : f64) outs(%e1 : tensor<4x1xf64>) -> tensor<4x1xf64>
  %sum = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]}
      ins(%ext : tensor<4x8xf64>) outs(%init : tensor<4x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %a = arith.addf %in, %out : f64
    linalg.yield %a : f64
  } -> tensor<4x1xf64>
  %e2 = tensor.empty() : tensor<4x1xf32>
  %mean = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<4x1xf64>) outs(%e2 : tensor<4x1xf32>) {
  ^bb0(%in: f64, %out: f32):
    %q = arith.divf %in, %n : f64
    %t = arith.truncf %q : f64 to f32
    linalg.yield %t : f32
  } -> tensor<4x1xf32>
  return %mean : tensor<4x1xf32>
}

// -----

// A dense f64 constant becomes a dense f32 constant; a truncf of an f64
// scalar constant inside a payload disappears.
// CHECK-LABEL: func.func @dense_and_scalar_constants
// CHECK: arith.constant dense<[1.000000e+00, 2.500000e-01]> : tensor<2xf32>
// CHECK: arith.constant 9.99999974E-6 : f32
// CHECK-NOT: arith.truncf
func.func @dense_and_scalar_constants(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = arith.constant dense<[1.0, 0.25]> : tensor<2xf64>
  %eps = arith.constant 1.0e-05 : f64
  %e = tensor.empty() : tensor<2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x, %c : tensor<2xf32>, tensor<2xf64>) outs(%e : tensor<2xf32>) {
  ^bb0(%in: f32, %w: f64, %out: f32):
    %t = arith.truncf %eps : f64 to f32
    %tw = arith.truncf %w : f64 to f32
    %a = arith.addf %in, %t : f32
    %m = arith.mulf %a, %tw : f32
    linalg.yield %m : f32
  } -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @negative_already_f32
// CHECK: arith.extf %{{.*}} : f16 to f32
func.func @negative_already_f32(%x: f16) -> f32 {
  %r = arith.extf %x : f16 to f32
  return %r : f32
}

// -----

// expected-error @+1 {{function signature holds f64; nova-demote-f64 only demotes values inside function bodies}}
func.func @negative_f64_signature(%x: tensor<4xf64>) -> tensor<4xf64> {
  return %x : tensor<4xf64>
}

// -----

func.func @negative_bitcast(%x: i64) -> f32 {
  // expected-error @+1 {{cannot demote a bitcast of f64 to f32}}
  %f = arith.bitcast %x : i64 to f64
  %t = arith.truncf %f : f64 to f32
  return %t : f32
}
