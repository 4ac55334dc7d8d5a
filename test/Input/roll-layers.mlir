// RUN: nova-opt %s --nova-roll-layers=min-ops=2 -split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Three layers x = x + (x @ w_k + b_k): one loop over three layers, the
// weights and biases read from stacked arguments at the layer's slot.
// CHECK-LABEL: func.func @three_layers
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x16xf32>
// CHECK-SAME: %[[WS:[a-z0-9]+]]: tensor<3x16x16xf32> {nova.stack_of = array<i64: 0, 2, 4>}
// CHECK-SAME: %[[BS:[a-z0-9]+]]: tensor<3x16xf32> {nova.stack_of = array<i64: 1, 3, 5>}
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[R:.*]] = scf.for %[[L:.*]] = %[[C0]] to %[[C3]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[X]]) -> (tensor<8x16xf32>)
// CHECK:   %[[WSL:.*]] = tensor.extract_slice %[[WS]][%[[L]], 0, 0] [1, 16, 16] [1, 1, 1] : tensor<3x16x16xf32> to tensor<1x16x16xf32>
// CHECK:   %[[W:.*]] = tensor.collapse_shape %[[WSL]] {{\[\[}}0, 1], [2]] : tensor<1x16x16xf32> into tensor<16x16xf32>
// CHECK:   %[[BSL:.*]] = tensor.extract_slice %[[BS]][%[[L]], 0] [1, 16] [1, 1]
// CHECK:   %[[B:.*]] = tensor.collapse_shape %[[BSL]] {{\[\[}}0, 1]] : tensor<1x16xf32> into tensor<16xf32>
// CHECK:   %[[MM:.*]] = linalg.matmul ins(%[[ACC]], %[[W]] : {{.*}})
// CHECK:   %[[Y:.*]] = linalg.generic {{.*}} ins(%[[MM]], %[[B]], %[[ACC]] : {{.*}}) outs(%[[ACC]] : tensor<8x16xf32>)
// CHECK:   scf.yield %[[Y]] : tensor<8x16xf32>
// CHECK: } {nova.layers}
// CHECK-NOT: linalg.matmul
// CHECK: return %[[R]]
func.func @three_layers(%w0: tensor<16x16xf32>, %b0: tensor<16xf32>,
                        %w1: tensor<16x16xf32>, %b1: tensor<16xf32>,
                        %w2: tensor<16x16xf32>, %b2: tensor<16xf32>,
                        %x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %x1 = linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m0, %b0, %x : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %r: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %r : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  %m1 = linalg.matmul ins(%x1, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %x2 = linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m1, %b1, %x1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %r: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %r : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  %m2 = linalg.matmul ins(%x2, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  %x3 = linalg.generic {indexing_maps = [#id, #row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m2, %b2, %x2 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %r: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %t = arith.addf %s, %r : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32>
  return %x3 : tensor<8x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The zero accumulator CSE shares between layers sits inside the first
// layer; it is made again inside the loop, so that every iteration fills an
// accumulator of its own. An op after the layers (the head) stays after the
// loop and reads its result.
// CHECK-LABEL: func.func @shared_fill_and_head
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<4x4xf32>)
// CHECK:   %[[E:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:   %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<4x4xf32>)
// CHECK:   linalg.matmul ins(%[[ACC]], %{{.*}} : {{.*}}) outs(%[[Z]] : tensor<4x4xf32>)
// CHECK:   math.tanh
// CHECK: } {nova.layers}
// CHECK: linalg.matmul
// CHECK-NOT: linalg.matmul
func.func @shared_fill_and_head(%x: tensor<4x4xf32>, %w0: tensor<4x4xf32>, %w1: tensor<4x4xf32>,
                                %head: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m0 : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%y0, %w1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m1 : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<4x4xf32>
  %h = linalg.matmul ins(%y1, %head : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %h : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Layers of different widths are not copies of one another: nothing rolls.
// CHECK-LABEL: func.func @negative_different_shapes
// CHECK-NOT: scf.for
// CHECK: linalg.matmul {{.*}} tensor<4x8xf32>
// CHECK: linalg.matmul {{.*}} tensor<4x4xf32>
func.func @negative_different_shapes(%x: tensor<4x4xf32>, %w0: tensor<4x8xf32>, %w1: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x8xf32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<4x4xf32>, tensor<4x8xf32>) outs(%z0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m0 : tensor<4x8xf32>) outs(%e0 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  %e1 = tensor.empty() : tensor<4x4xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%y0, %w1 : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z1 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m1 : tensor<4x4xf32>) outs(%e1 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<4x4xf32>
  return %y1 : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The same ops, but the third layer also adds the first layer's product
// (a connection two layers back): the regions whose data flow matches are
// (add, matmul) pairs over two layers, each carrying two values; the first
// matmul stays before the loop and the last add, which reads it, after.
// CHECK-LABEL: func.func @partial_skip_two_back
// CHECK-SAME: %{{.*}}: tensor<2x4x4xf32> {nova.stack_of = array<i64: 2, 3>}
// CHECK: %[[M0:.*]] = linalg.matmul ins(%arg0, %arg1 :
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[R:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %[[C2]] step %{{.*}} iter_args(%{{.*}} = %[[M0]], %{{.*}} = %arg0)
// CHECK: } {nova.layers}
// CHECK: linalg.add ins(%[[R]]#0, %[[M0]] :
func.func @partial_skip_two_back(%x: tensor<4x4xf32>, %w0: tensor<4x4xf32>, %w1: tensor<4x4xf32>,
                                 %w2: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y0 = linalg.add ins(%m0, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%y0, %w1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y1 = linalg.add ins(%m1, %y0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m2 = linalg.matmul ins(%y1, %w2 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y2 = linalg.add ins(%m2, %m0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y2 : tensor<4x4xf32>
}

// -----

// A training step's donated state (nova.aliasing_output) is left alone.
// CHECK-LABEL: func.func @negative_donated
// CHECK-NOT: scf.for
func.func @negative_donated(%x: tensor<4x4xf32>, %w0: tensor<4x4xf32> {nova.aliasing_output = 0 : i64},
                            %w1: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y0 = linalg.add ins(%m0, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%y0, %w1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y1 = linalg.add ins(%m1, %y0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y1 : tensor<4x4xf32>
}

// -----

// The same weight in every layer (shared, not per layer) rolls too: it is
// read as it is, no stack.
// CHECK-LABEL: func.func @shared_weight
// CHECK-NOT: nova.stack_of
// CHECK: scf.for
// CHECK: linalg.matmul ins(%{{.*}}, %arg1 :
func.func @shared_weight(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m0 = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y0 = linalg.add ins(%m0, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%y0, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y1 = linalg.add ins(%m1, %y0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y1 : tensor<4x4xf32>
}

// -----

// Named per-layer weights (nova.name) roll: the stack is named after its
// members with a `*` for the layer's path component (h.9 and h.10 differ in
// a whole component, not in a digit).
// CHECK-LABEL: func.func @named_layers
// CHECK-SAME: {nova.name = "h.*.mlp.weight", nova.stack_of = array<i64: 1, 2>}
// CHECK: scf.for
func.func @named_layers(%x: tensor<4x4xf32>, %w0: tensor<4x4xf32> {nova.name = "h.9.mlp.weight"},
                        %w1: tensor<4x4xf32> {nova.name = "h.10.mlp.weight"}) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y0 = linalg.add ins(%m0, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%y0, %w1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y1 = linalg.add ins(%m1, %y0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y1 : tensor<4x4xf32>
}
