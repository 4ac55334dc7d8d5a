// RUN: nova-opt %s --nova-verify-normal-form -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @normal_form
// CHECK: linalg.matmul
// CHECK: linalg.generic
func.func @normal_form(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %c: tensor<4x8xf32>, %m: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %mm = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%c : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %m : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %k: f32, %out: f32):
    %p = arith.cmpf une, %k, %zero : f32
    %s = arith.select %p, %zero, %in : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

func.func @negative_f64_tensor(%x: f64) -> tensor<4xf64> {
  // expected-error @+1 {{tensor of element type 'f64'; nova normal form holds f32, bf16, f16, i64, i32, i8 and i1 tensors}}
  %e = tensor.empty() : tensor<4xf64>
  // expected-error @+1 {{tensor of element type 'f64'; nova normal form holds f32, bf16, f16, i64, i32, i8 and i1 tensors}}
  %f = linalg.fill ins(%x : f64) outs(%e : tensor<4xf64>) -> tensor<4xf64>
  return %f : tensor<4xf64>
}

// -----

func.func @negative_i16_in_payload(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    // expected-error @+1 {{payload value of type 'i16'; payloads compute on f32, bf16, f16, i64, i32, i8, i1 and index}}
    %c = arith.index_cast %i : index to i16
    %f = arith.sitofp %c : i16 to f32
    %a = arith.addf %in, %f : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @negative_conv(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x2x2xf32>, %b: tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32> {
  // expected-error @+1 {{convolution left; run nova-decompose-conv}}
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<4x3x2x2xf32>) outs(%b : tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  return %y : tensor<1x4x5x5xf32>
}

// -----

func.func @negative_conv_3d(%x: tensor<1x3x4x6x6xf32>, %w: tensor<4x3x2x2x2xf32>, %b: tensor<1x4x3x5x5xf32>) -> tensor<1x4x3x5x5xf32> {
  // expected-error @+1 {{convolution 'linalg.conv_3d_ncdhw_fcdhw' has no lowering: nova-decompose-conv turns linalg.conv_2d_nchw_fchw, linalg.conv_2d_ngchw_gfchw, linalg.depthwise_conv_2d_nchw_chw and linalg.pooling_nchw_sum/max into loops over kernel taps}}
  %y = linalg.conv_3d_ncdhw_fcdhw {dilations = dense<1> : vector<3xi64>, strides = dense<1> : vector<3xi64>}
      ins(%x, %w : tensor<1x3x4x6x6xf32>, tensor<4x3x2x2x2xf32>) outs(%b : tensor<1x4x3x5x5xf32>) -> tensor<1x4x3x5x5xf32>
  return %y : tensor<1x4x3x5x5xf32>
}

// -----

func.func @negative_two_results(%x: tensor<4x8xf32>, %m: tensor<4xf32>, %n: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{linalg.generic has 2 results; nova normal form needs exactly one}}
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m, %n : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%in: f32, %a: f32, %b: f32):
    %s = arith.addf %in, %a : f32
    %t = arith.maximumf %in, %b : f32
    linalg.yield %s, %t : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+2 {{argument #0 is a zero-size tensor 'tensor<5x0xf32>'; nova does not compile tensors without elements}}
// expected-error @+1 {{argument #1 is a zero-size tensor 'tensor<0x10xf32>'}}
func.func @negative_zero_size_argument(%a: tensor<5x0xf32>, %b: tensor<0x10xf32>, %c: tensor<5x10xf32>) -> tensor<5x10xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<5x0xf32>, tensor<0x10xf32>) outs(%c : tensor<5x10xf32>) -> tensor<5x10xf32>
  return %r : tensor<5x10xf32>
}
