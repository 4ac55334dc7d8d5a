// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=tiny},func.func(nova-tile))' -split-input-file -verify-diagnostics
// RUN: not nova-opt %s --pass-pipeline='builtin.module(func.func(nova-tile))' -split-input-file 2>&1 | FileCheck %s --check-prefix=NOTARGET

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#red2 = affine_map<(d0, d1) -> (d0, 0)>

// A reduction of 8192 floats cannot stay whole in the tiny target's 16 KiB
// of SRAM (it is double buffered): the error names the op and the numbers.
func.func @negative_reduction_too_long_for_sram(%x: tensor<4x8192xf32>) -> tensor<4x1xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  // expected-error @+1 {{'linalg.generic' op cannot be tiled to fit sram: its smallest tile needs 65544 bytes (double buffered) but target 'tiny' has 16384 bytes of sram}}
  %r = linalg.generic {indexing_maps = [#id2, #red2], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8192xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  return %r : tensor<4x1xf32>
}

// -----

func.func @negative_dynamic_shape(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'linalg.copy' op has dynamic shapes, which nova-tile does not support}}
  %r = linalg.copy ins(%x : tensor<?x8xf32>) outs(%y : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// NOTARGET: error: nova-tile needs a #nova.target on the module; run --nova-attach-target first
