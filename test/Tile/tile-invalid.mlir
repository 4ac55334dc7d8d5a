// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=tiny},func.func(nova-tile))' -split-input-file -verify-diagnostics
// RUN: not nova-opt %s --pass-pipeline='builtin.module(func.func(nova-tile))' -split-input-file 2>&1 | FileCheck %s --check-prefix=NOTARGET

func.func @negative_dynamic_shape(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'linalg.copy' op has dynamic shapes, which nova-tile does not support}}
  %r = linalg.copy ins(%x : tensor<?x8xf32>) outs(%y : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}

// NOTARGET: error: nova-tile needs a #nova.target on the module; run --nova-attach-target first
