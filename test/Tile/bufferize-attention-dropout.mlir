// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},nova-bufferize,canonicalize,cse)' | FileCheck %s

// Two layers' dropout keep masks written into one tensor.empty (CSE merges
// identical inits). The fused kernels read their mask operand, so the second
// mask may not take the first one's buffer while the first layer's backward
// still reads it: two buffers, and the backward reads the first.
// CHECK-LABEL: func.func @two_masks_one_init
// CHECK-DAG: %[[A:.*]] = memref.alloc() {{.*}} : memref<8x4xi1, #nova.memory_space<hbm>>
// CHECK-DAG: %[[B:.*]] = memref.alloc() {{.*}} : memref<8x4xi1, #nova.memory_space<hbm>>
// CHECK: linalg.generic {{.*}} ins(%arg4 : {{.*}}) outs(%[[M0:.*]] : memref<8x4xi1
// CHECK: %[[K0:.*]] = memref.expand_shape %[[M0]]
// CHECK: nova.attention_lse {{.*}} dropout(%[[K0]] :
// CHECK-NOT: outs(%[[M0]] :
// CHECK: nova.attention_backward {{.*}} dropout(%[[K0]] :
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @two_masks_one_init(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %do: tensor<2x4x8xf32>,
                              %c0: tensor<8x4xi64>, %c1: tensor<8x4xi64>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %thr = arith.constant 7 : i64
  %e = tensor.empty() : tensor<8x4xi1>
  %m0 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c0 : tensor<8x4xi64>) outs(%e : tensor<8x4xi1>) {
  ^bb0(%c: i64, %o: i1):
    %b = arith.cmpi slt, %c, %thr : i64
    linalg.yield %b : i1
  } -> tensor<8x4xi1>
  %k0 = tensor.expand_shape %m0 [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xi1> into tensor<2x4x4xi1>
  %eo = tensor.empty() : tensor<2x4x8xf32>
  %el = tensor.empty() : tensor<2x4xf32>
  %o0:2 = nova.attention_lse ins(%q, %k, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
      outs(%eo, %el : tensor<2x4x8xf32>, tensor<2x4xf32>) scale 1.0 key_rows causal
      dropout(%k0 : tensor<2x4x4xi1>) keep_scale 1.25 -> tensor<2x4x8xf32>, tensor<2x4xf32>
  %m1 = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%c1 : tensor<8x4xi64>) outs(%e : tensor<8x4xi1>) {
  ^bb0(%c: i64, %o: i1):
    %b = arith.cmpi slt, %c, %thr : i64
    linalg.yield %b : i1
  } -> tensor<8x4xi1>
  %k1 = tensor.expand_shape %m1 [[0, 1], [2]] output_shape [2, 4, 4] : tensor<8x4xi1> into tensor<2x4x4xi1>
  %o1:2 = nova.attention_lse ins(%o0#0, %k, %v : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
      outs(%eo, %el : tensor<2x4x8xf32>, tensor<2x4xf32>) scale 1.0 key_rows causal
      dropout(%k1 : tensor<2x4x4xi1>) keep_scale 1.25 -> tensor<2x4x8xf32>, tensor<2x4xf32>
  %g:3 = nova.attention_backward ins(%q, %k, %v, %o0#0, %do, %o0#1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf32>)
      outs(%eo, %eo, %eo : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) scale 1.0 causal
      dropout(%k0 : tensor<2x4x4xi1>) keep_scale 1.25 -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
  return %o1#0, %g#0, %g#1, %g#2, %o0#0, %o1#0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}
