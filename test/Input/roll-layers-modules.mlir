// RUN: nova-opt %s --nova-roll-layers=min-ops=2 -split-input-file --mlir-print-debuginfo | FileCheck %s

// Layers whose ops ran in modules blocks.<k>.* (the frontend's `module:` name
// locations): the loop over layers is located at `layers:` and the module
// path of each layer, which nova-translate writes into the DEBUG entry of
// its ISA loop, so that the profile charges each iteration to its layer.
// CHECK-LABEL: func.func @named_layers
// CHECK: scf.for
// CHECK: } {nova.layers} loc(#[[LOOP:loc[0-9]+]])
// CHECK: #[[LOOP]] = loc("layers:blocks.0,blocks.1,blocks.2"

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @named_layers(%w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x16xf32>,
                        %x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("module:blocks.0.fc"("m.py":3:1))
  %x1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m0, %x : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %t = arith.addf %a, %r : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32> loc("module:blocks.0"("m.py":4:1))
  %m1 = linalg.matmul ins(%x1, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("module:blocks.1.fc"("m.py":3:1))
  %x2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m1, %x1 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %t = arith.addf %a, %r : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32> loc("module:blocks.1"("m.py":4:1))
  %m2 = linalg.matmul ins(%x2, %w2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("module:blocks.2.fc"("m.py":3:1))
  %x3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m2, %x2 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %t = arith.addf %a, %r : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32> loc("module:blocks.2"("m.py":4:1))
  return %x3 : tensor<8x16xf32>
}

// -----

// Regions that do not follow the modules the same way (layer 1's ops are in
// another module tree): the loop keeps the first op's location only.
// CHECK-LABEL: func.func @unnamed_layers
// CHECK: } {nova.layers} loc(#[[LOOP2:loc[0-9]*]])
// CHECK-NOT: layers:

#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @unnamed_layers(%w0: tensor<16x16xf32>, %w1: tensor<16x16xf32>,
                          %x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("module:blocks.0.fc"("m.py":3:1))
  %x1 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%m0, %x : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %t = arith.addf %a, %r : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32> loc("module:blocks.0"("m.py":4:1))
  %m1 = linalg.matmul ins(%x1, %w1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32> loc("module:blocks.1.fc"("m.py":3:1))
  %x2 = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%m1, %x1 : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %r: f32, %o: f32):
    %t = arith.addf %a, %r : f32
    linalg.yield %t : f32
  } -> tensor<8x16xf32> loc("module:head"("m.py":4:1))
  return %x2 : tensor<8x16xf32>
}
