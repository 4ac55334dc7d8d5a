// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(convert-linalg-to-nova))' -split-input-file -verify-diagnostics
// RUN: not nova-opt %s --pass-pipeline='builtin.module(func.func(convert-linalg-to-nova))' -split-input-file 2>&1 | FileCheck %s --check-prefix=NOTARGET

#id = affine_map<(d0, d1) -> (d0, d1)>

func.func @negative_i16_tile(%x: memref<8x8xi16, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'linalg.generic' op cannot be lowered to nova: an operand has element type i16; the vector unit holds f32, bf16, f16, i64, i32, i8 and i1}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xi16, #nova.memory_space<sram>>) outs(%x : memref<8x8xi16, #nova.memory_space<sram>>) {
  ^bb0(%a: i16, %o: i16):
    linalg.yield %a : i16
  }
  return
}

// -----

func.func @negative_still_on_tensors(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  // expected-error @+1 {{'linalg.copy' op cannot be lowered to nova: it still works on tensors (run nova-tile and nova-bufferize first)}}
  %r = linalg.copy ins(%x : tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

#skew = affine_map<(d0, d1) -> (d0 + d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// An access that is neither a projection nor a broadcast (a sliding window)
// has no tile form.
func.func @negative_non_projected_map(%a: memref<16xf32, #nova.memory_space<sram>>, %c: memref<8x8xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'linalg.generic' op cannot be lowered to nova: an indexing map is neither a projection nor a broadcast}}
  linalg.generic {indexing_maps = [#skew, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<16xf32, #nova.memory_space<sram>>) outs(%c : memref<8x8xf32, #nova.memory_space<sram>>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  return
}

// NOTARGET: error: convert-linalg-to-nova needs a #nova.target on the module; run --nova-attach-target first

// -----

func.func @negative_unsigned_compare(%x: memref<8xi64, #nova.memory_space<sram>>, %o: memref<8xi1, #nova.memory_space<sram>>) {
  %c = arith.constant 3 : i64
  // expected-error @+1 {{'linalg.generic' op cannot be lowered to nova: 'arith.cmpi' in its body has no nova lowering: an unsigned integer comparison (the vector unit compares signed)}}
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xi64, #nova.memory_space<sram>>) outs(%o : memref<8xi1, #nova.memory_space<sram>>) {
  ^bb0(%a: i64, %out: i1):
    %p = arith.cmpi ult, %a, %c : i64
    linalg.yield %p : i1
  }
  return
}

// -----

func.func @negative_assert_always_fails(%x: memref<8xf32, #nova.memory_space<sram>>) {
  %false = arith.constant false
  // expected-error @+1 {{'linalg.generic' op cannot be lowered to nova: its assertion always fails: index out of range}}
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%x : memref<8xf32, #nova.memory_space<sram>>) {
  ^bb0(%out: f32):
    cf.assert %false, "index out of range"
    linalg.yield %out : f32
  }
  return
}

// -----

// A matmul writing its result transposed has no matrix-unit lowering.
func.func @negative_matmul_transposed_result(%a: memref<16x64xf32, #nova.memory_space<sram>>, %b: memref<64x128xf32, #nova.memory_space<sram>>, %c: memref<128x16xf32, #nova.memory_space<sram>>) {
  // expected-error @+1 {{'linalg.matmul' op cannot be lowered to nova: its indexing maps are not C[m, n] += A[m, k] * B[k, n] with A and B each possibly read transposed}}
  linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                 affine_map<(d0, d1, d2) -> (d2, d1)>,
                                 affine_map<(d0, d1, d2) -> (d1, d0)>]
      ins(%a, %b : memref<16x64xf32, #nova.memory_space<sram>>, memref<64x128xf32, #nova.memory_space<sram>>)
      outs(%c : memref<128x16xf32, #nova.memory_space<sram>>)
  return
}
