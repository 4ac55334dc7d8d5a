// RUN: not nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(convert-linalg-to-nova))' 2>&1 | FileCheck %s

// An op without a vector-unit equivalent is reported at its own location,
// which for an imported model is the PyTorch source line torch-mlir kept.
// CHECK: model.py:12:8: error: 'linalg.generic' op cannot be lowered to nova: 'math.atan' in its body has no nova lowering: 'math.atan' has no vector-unit form

#id = affine_map<(d0, d1) -> (d0, d1)>

func.func @negative_unsupported_body_op(%x: memref<8x8xf32, #nova.memory_space<sram>>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32, #nova.memory_space<sram>>) outs(%x : memref<8x8xf32, #nova.memory_space<sram>>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.atan %a : f32
    linalg.yield %s : f32
  } loc("model.py":12:8)
  return
}
