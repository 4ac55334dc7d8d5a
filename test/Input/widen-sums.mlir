// RUN: nova-opt %s --split-input-file --nova-widen-sums | FileCheck %s

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A bias gradient under bf16 autocast as torch-mlir writes it: a sum over
// the tokens accumulated in bf16. It accumulates in f32 and is rounded once.
// CHECK-LABEL: func.func @bias_gradient
// CHECK-SAME: (%[[DY:.*]]: tensor<16x32xbf16>)
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<32xf32>)
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[DY]] : tensor<16x32xbf16>) outs(%{{.*}} : tensor<16x32xf32>)
// CHECK: arith.extf
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]} ins(%[[W]] : tensor<16x32xf32>) outs(%[[Z]] : tensor<32xf32>)
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<32xf32>) outs(%{{.*}} : tensor<32xbf16>)
// CHECK: arith.truncf
// CHECK: return %[[R]]
func.func @bias_gradient(%dy: tensor<16x32xbf16>) -> tensor<32xbf16> {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<32xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<32xbf16>) -> tensor<32xbf16>
  %s = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%dy : tensor<16x32xbf16>) outs(%z : tensor<32xbf16>) {
  ^bb0(%x: bf16, %acc: bf16):
    %a = arith.addf %x, %acc : bf16
    linalg.yield %a : bf16
  } -> tensor<32xbf16>
  return %s : tensor<32xbf16>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// An f32 sum, a bf16 max and a bf16 sum that does more than add are left alone.
// CHECK-LABEL: func.func @negative_others
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: return
func.func @negative_others(%x: tensor<16x32xf32>, %y: tensor<16x32xbf16>) -> (tensor<32xf32>, tensor<32xbf16>, tensor<32xbf16>) {
  %zero = arith.constant 0.0 : f32
  %zb = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  %s = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<16x32xf32>) outs(%z : tensor<32xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<32xf32>
  %eb = tensor.empty() : tensor<32xbf16>
  %zbf = linalg.fill ins(%zb : bf16) outs(%eb : tensor<32xbf16>) -> tensor<32xbf16>
  %m = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%y : tensor<16x32xbf16>) outs(%zbf : tensor<32xbf16>) {
  ^bb0(%a: bf16, %acc: bf16):
    %r = arith.maximumf %a, %acc : bf16
    linalg.yield %r : bf16
  } -> tensor<32xbf16>
  %sq = linalg.generic {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"]} ins(%y : tensor<16x32xbf16>) outs(%zbf : tensor<32xbf16>) {
  ^bb0(%a: bf16, %acc: bf16):
    %p = arith.mulf %a, %a : bf16
    %r = arith.addf %p, %acc : bf16
    linalg.yield %r : bf16
  } -> tensor<32xbf16>
  return %s, %m, %sq : tensor<32xf32>, tensor<32xbf16>, tensor<32xbf16>
}
