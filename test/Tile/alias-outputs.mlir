// RUN: nova-opt %s --nova-alias-outputs -split-input-file -verify-diagnostics | FileCheck %s

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>

// SGD: the update reads the donated parameter with the result's map and is
// its last user, so it reads and writes it through `outs`.
// CHECK-LABEL: func.func @sgd_in_place
// CHECK-SAME: (%[[P:.*]]: tensor<8xf32> {nova.aliasing_output = 0 : i64}, %[[G:.*]]: tensor<8xf32>, %[[LR:.*]]: tensor<f32>)
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[G]], %[[LR]] : tensor<8xf32>, tensor<f32>) outs(%[[P]] : tensor<8xf32>)
// CHECK: ^bb0(%[[IG:.*]]: f32, %[[ILR:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK: %[[STEP:.*]] = arith.mulf %[[ILR]], %[[IG]]
// CHECK: arith.subf %[[OUT]], %[[STEP]]
// CHECK: return %[[R]]
func.func @sgd_in_place(%p: tensor<8xf32> {nova.aliasing_output = 0 : i64}, %g: tensor<8xf32>,
                        %lr: tensor<f32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%p, %g, %lr : tensor<8xf32>, tensor<8xf32>, tensor<f32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %l: f32, %o: f32):
    %s = arith.mulf %l, %b : f32
    %d = arith.subf %a, %s : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Momentum then parameter (AdamW's order): each result is written over its
// own argument; the parameter's update reads the new momentum, not the old.
// CHECK-LABEL: func.func @two_donated
// CHECK-SAME: (%[[P:[^:]*]]: tensor<8xf32> {nova.aliasing_output = 1 : i64}, %[[M:[^:]*]]: tensor<8xf32> {nova.aliasing_output = 0 : i64}, %[[G:[^:]*]]: tensor<8xf32>)
// CHECK: %[[NM:.*]] = linalg.generic {{.*}} ins(%[[G]] : tensor<8xf32>) outs(%[[M]] : tensor<8xf32>)
// CHECK: %[[NP:.*]] = linalg.generic {{.*}} ins(%[[NM]] : tensor<8xf32>) outs(%[[P]] : tensor<8xf32>)
// CHECK: return %[[NM]], %[[NP]]
func.func @two_donated(%p: tensor<8xf32> {nova.aliasing_output = 1 : i64},
                       %m: tensor<8xf32> {nova.aliasing_output = 0 : i64},
                       %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %nm = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %g : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.addf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  %np = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %nm : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  return %nm, %np : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// Read through a transpose: tile i of the result is not tile i of the
// argument, so nothing changes and nova-plan-memory copies the result in.
// CHECK-LABEL: func.func @transposed_read_is_copied
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x4xf32>) outs(%{{.*}} : tensor<4x4xf32>)
func.func @transposed_read_is_copied(%p: tensor<4x4xf32> {nova.aliasing_output = 0 : i64}) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  // expected-remark @+1 {{result 0 is copied into argument 0: its generic reads the argument with another indexing map}}
  %r = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.negf %a : f32
    linalg.yield %d : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// The argument is read after the update: writing it early would corrupt the read.
// CHECK-LABEL: func.func @read_after_update_is_copied
func.func @read_after_update_is_copied(%p: tensor<8xf32> {nova.aliasing_output = 0 : i64})
    -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  // expected-remark @+1 {{result 0 is copied into argument 0: the argument is read after the generic}}
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.negf %a : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %a, %a : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  return %r, %s : tensor<8xf32>, tensor<8xf32>
}

// -----

// A donated argument returned unchanged is already in place.
// CHECK-LABEL: func.func @returned_as_is
// CHECK: return %arg0
func.func @returned_as_is(%p: tensor<8xf32> {nova.aliasing_output = 0 : i64}) -> tensor<8xf32> {
  return %p : tensor<8xf32>
}

// -----

// expected-error @+1 {{argument 0: 'nova.aliasing_output' must be a result index in [0, 1), got 3 : i64}}
func.func @out_of_range(%p: tensor<8xf32> {nova.aliasing_output = 3 : i64}) -> tensor<8xf32> {
  return %p : tensor<8xf32>
}

// -----

// expected-error @+1 {{argument 0 of type 'tensor<8xf32>' is donated to result 0 of type 'tensor<4xf32>'}}
func.func @type_mismatch(%p: tensor<8xf32> {nova.aliasing_output = 0 : i64}, %q: tensor<4xf32>) -> tensor<4xf32> {
  return %q : tensor<4xf32>
}

// -----

// expected-error @+1 {{arguments 0 and 1 are both donated to result 0}}
func.func @two_donors(%p: tensor<8xf32> {nova.aliasing_output = 0 : i64},
                      %q: tensor<8xf32> {nova.aliasing_output = 0 : i64}) -> tensor<8xf32> {
  return %p : tensor<8xf32>
}
