// nova-opt parses without verifying and runs nova-check-input first: input
// that upstream verifiers would assert on is an error at its location; valid
// input passes unchanged (and the verifier's own diagnostics still come out).
// RUN: nova-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @valid_reshape_and_transpose
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]]
// CHECK: linalg.transpose
func.func @valid_reshape_and_transpose(%a: tensor<4x8xf32>) -> (tensor<32xf32>, tensor<8x4xf32>) {
  %0 = tensor.collapse_shape %a [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %1 = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [1, 0]
  return %0, %1 : tensor<32xf32>, tensor<8x4xf32>
}

// -----

func.func @negative_reassociation_index(%a: tensor<4x8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{reassociation index 9223372036854775807 is not a dimension of the rank-2 type}}
  %0 = tensor.collapse_shape %a [[0, 9223372036854775807]] : tensor<4x8xf32> into tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

func.func @negative_expand_reassociation(%a: tensor<32xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{reassociation index 7 is not a dimension of the rank-2 type}}
  %0 = tensor.expand_shape %a [[0, 7]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @negative_transpose_permutation(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  // expected-error @+1 {{permutation entry 5 is not a dimension of the rank-2 operands}}
  %0 = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%e : tensor<8x4xf32>) permutation = [5, 0]
  return %0 : tensor<8x4xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @negative_split_axis(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{grid axis 2 is not an axis of the 1-D grid @g}}
  %s = shard.sharding @g split_axes = [[2]] : !shard.sharding
  %0 = shard.shard %a to %s : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// The verifier still runs after the checks.
func.func @negative_verifier_still_runs(%a: tensor<4x8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{expected dimension 0 of collapsed type to be static value of 32}}
  %0 = tensor.collapse_shape %a [[0, 1]] : tensor<4x8xf32> into tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

func.func @negative_conv_stride(%x: tensor<1x3x6x6xf32>, %w: tensor<4x3x2x2xf32>, %b: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @+1 {{strides must be positive, got -9223372036854775808}}
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<-9223372036854775808> : vector<2xi64>}
      ins(%x, %w : tensor<1x3x6x6xf32>, tensor<4x3x2x2xf32>) outs(%b : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %y : tensor<1x4x3x3xf32>
}

// -----

// Duplicate symbols are the verifier's to report (a symbol table would assert).
shard.grid @g(shape = 2)
// expected-error @+2 {{redefinition of symbol named 'g'}}
// expected-note @-2 {{see existing symbol definition here}}
shard.grid @g(shape = 2)

// -----

func.func @negative_pad_sentinel(%x: tensor<2x8xf32>, %c: f32) -> tensor<2x10xf32> {
  // expected-error @+1 {{has 1 dynamic paddings but 0 padding operands (-9223372036854775808 is the dynamic marker, not a padding)}}
  %p = tensor.pad %x low[0, 1] high[0, -9223372036854775808] {
  ^bb0(%i: index, %j: index):
    tensor.yield %c : f32
  } : tensor<2x8xf32> to tensor<2x10xf32>
  return %p : tensor<2x10xf32>
}

// -----

func.func @negative_pad_overflow(%x: tensor<2x8xf32>, %c: f32) -> tensor<2x10xf32> {
  // expected-error @+1 {{pads dimension 1 of size 8 by 1 and 9223372036854775807, which is not a valid size}}
  %p = tensor.pad %x low[0, 1] high[0, 9223372036854775807] {
  ^bb0(%i: index, %j: index):
    tensor.yield %c : f32
  } : tensor<2x8xf32> to tensor<2x10xf32>
  return %p : tensor<2x10xf32>
}
