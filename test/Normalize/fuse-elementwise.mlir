// RUN: nova-opt %s --nova-fuse-elementwise -split-input-file | FileCheck %s

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// torch-mlir's Linear + GELU: bias add on the 2-D matmul result, GELU on the
// 3-D expanded tensor. One epilogue generic remains after the matmul.
// CHECK-LABEL: func.func @matmul_bias_gelu
// CHECK: %[[MM:.*]] = linalg.matmul
// CHECK: %[[EPI:.*]] = linalg.generic
// CHECK-SAME: ins(%[[MM]], %{{.*}} : tensor<4x8xf32>, tensor<8xf32>)
// CHECK: arith.addf
// CHECK: math.erf
// CHECK: linalg.yield
// CHECK-NOT: linalg.generic
// CHECK: tensor.expand_shape %[[EPI]]
func.func @matmul_bias_gelu(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %bias: tensor<8xf32>) -> tensor<2x2x8xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %sqrt2 = arith.constant 1.41421354 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %add = linalg.generic {indexing_maps = [#id2, #bias, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %bb: f32, %out: f32):
    %s = arith.addf %in, %bb : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %x = tensor.expand_shape %add [[0, 1], [2]] output_shape [2, 2, 8] : tensor<4x8xf32> into tensor<2x2x8xf32>
  %e3 = tensor.empty() : tensor<2x2x8xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x2x8xf32>) outs(%e3 : tensor<2x2x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %sqrt2 : f32
    %1 = math.erf %0 : f32
    %2 = arith.addf %1, %one : f32
    %3 = arith.mulf %2, %half : f32
    %4 = arith.mulf %in, %3 : f32
    linalg.yield %4 : f32
  } -> tensor<2x2x8xf32>
  return %g : tensor<2x2x8xf32>
}

// -----

// An elementwise producer fuses into a reduction consumer (x*x then sum).
// CHECK-LABEL: func.func @square_into_reduction
// CHECK: linalg.generic {{.*}}"reduction"
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
func.func @square_into_reduction(%x: tensor<4x8xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%sq : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The gotcha: a transpose feeding a named matmul must stay a transpose and
// the matmul must stay linalg.matmul.
// CHECK-LABEL: func.func @negative_transpose_into_matmul
// CHECK: linalg.transpose
// CHECK: linalg.matmul
// CHECK-NOT: linalg.generic
func.func @negative_transpose_into_matmul(%a: tensor<4x16xf32>, %w: tensor<8x16xf32>, %c: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<16x8xf32>
  %t = linalg.transpose ins(%w : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %mm = linalg.matmul ins(%a, %t : tensor<4x16xf32>, tensor<16x8xf32>) outs(%c : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %mm : tensor<4x8xf32>
}

// -----

// A producer with two uses is not duplicated into its consumers.
// CHECK-LABEL: func.func @negative_producer_two_uses
// CHECK-COUNT-3: linalg.generic
func.func @negative_producer_two_uses(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = math.exp %in : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%p : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.addf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// -----

// A gather whose payload holds torch-mlir's bounds checks fuses into its
// consumer, which keeps the checks; the leftover producer (side effects only,
// result unused) is erased.
// CHECK-LABEL: func.func @fused_gather_checks_not_left_behind
// CHECK-COUNT-1: linalg.generic
// CHECK: cf.assert %{{.*}}, "index must be smaller than dim size"
// CHECK: tensor.extract
// CHECK: arith.negf
// CHECK-NOT: linalg.generic
func.func @fused_gather_checks_not_left_behind(%x: tensor<2x8xf32>, %i: tensor<2x8xi64>) -> tensor<2x8xf32> {
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8xf32>) -> tensor<2x8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%i : tensor<2x8xi64>) outs(%f : tensor<2x8xf32>) {
  ^bb0(%in: i64, %out: f32):
    %r = linalg.index 0 : index
    %c = arith.index_cast %in : i64 to index
    %ok = arith.cmpi slt, %c, %c8 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = tensor.extract %x[%r, %c] : tensor<2x8xf32>
    linalg.yield %v : f32
  } -> tensor<2x8xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.negf %in : f32
    linalg.yield %m : f32
  } -> tensor<2x8xf32>
  return %n : tensor<2x8xf32>
}

// -----

// A 0-d sum (no loops) reads its init; the init becomes an input, so the
// sum fuses into its consumer as one single-result generic (upstream fusion
// would keep the producer's result alive: two results).
#scalar = affine_map<() -> ()>
// CHECK-LABEL: func.func @zero_d_sum_then_pow
// CHECK:         %[[R:.+]] = linalg.generic
// CHECK-SAME:      iterator_types = []
// CHECK-SAME:      outs(%{{.+}} : tensor<f32>)
// CHECK:           math.absf
// CHECK:           arith.addf
// CHECK:           math.powf
// CHECK:           linalg.yield %{{.+}} : f32
// CHECK-NEXT:    } -> tensor<f32>
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
func.func @zero_d_sum_then_pow(%x: tensor<f32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %third = arith.constant 0.333333343 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%x : tensor<f32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = math.absf %in : f32
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %r = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%sum : tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %p = math.powf %in, %third : f32
    linalg.yield %p : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// torch has no unsigned shift: a logical right shift traces as an arithmetic
// shift masked to the low 64 - k bits (SplitMix64 in Nova's dropout). The
// pair is one arith.shrui.
// CHECK-LABEL: func.func @masked_arithmetic_shift_is_logical
// CHECK: linalg.generic
// CHECK: %[[S:.*]] = arith.shrui %{{.*}}, %{{.*}} : i64
// CHECK-NOT: arith.andi
// CHECK-NOT: arith.shrsi
// CHECK: linalg.yield %[[S]]
func.func @masked_arithmetic_shift_is_logical(%x: tensor<8xi64>) -> tensor<8xi64> {
  %k = arith.constant 30 : i64
  %m = arith.constant 17179869183 : i64
  %e = tensor.empty() : tensor<8xi64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xi64>) outs(%e : tensor<8xi64>) {
  ^bb0(%a: i64, %o: i64):
    %s = arith.shrsi %a, %k : i64
    %l = arith.andi %s, %m : i64
    linalg.yield %l : i64
  } -> tensor<8xi64>
  return %r : tensor<8xi64>
}

// -----

// A mask that keeps a sign bit (2^35 - 1 after a shift by 30: 35 bits, one
// too many) is not a logical shift: left alone.
// CHECK-LABEL: func.func @negative_mask_keeps_a_sign_bit
// CHECK: arith.shrsi
// CHECK: arith.andi
// CHECK-NOT: arith.shrui
func.func @negative_mask_keeps_a_sign_bit(%x: tensor<8xi64>) -> tensor<8xi64> {
  %k = arith.constant 30 : i64
  %m = arith.constant 34359738367 : i64
  %e = tensor.empty() : tensor<8xi64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<8xi64>) outs(%e : tensor<8xi64>) {
  ^bb0(%a: i64, %o: i64):
    %s = arith.shrsi %a, %k : i64
    %l = arith.andi %s, %m : i64
    linalg.yield %l : i64
  } -> tensor<8xi64>
  return %r : tensor<8xi64>
}

// -----

// A padded matmul's result cut back to its real width (nova-pad-matmul),
// then rounded to bf16 and widened again (logits.float() under autocast):
// the two casts fuse into one generic, which then runs over the padded
// result and is sliced instead, so that nova-tile can fuse it into the
// matmul's tile loop as its epilogue.
// CHECK-LABEL: func.func @slice_moves_after_elementwise
// CHECK: %[[M:.*]] = linalg.matmul
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[M]] : tensor<16x128xf32>) outs(%{{.*}} : tensor<16x128xf32>)
// CHECK: arith.truncf
// CHECK: arith.extf
// CHECK: %[[S:.*]] = tensor.extract_slice %[[G]][0, 0] [16, 120] [1, 1] : tensor<16x128xf32> to tensor<16x120xf32>
// CHECK: return %[[S]]
func.func @slice_moves_after_elementwise(%a: tensor<16x64xbf16>, %b: tensor<64x128xbf16>) -> tensor<16x120xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x128xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
  %m = linalg.matmul ins(%a, %b : tensor<16x64xbf16>, tensor<64x128xbf16>) outs(%f : tensor<16x128xf32>) -> tensor<16x128xf32>
  %s = tensor.extract_slice %m[0, 0] [16, 120] [1, 1] : tensor<16x128xf32> to tensor<16x120xf32>
  %eb = tensor.empty() : tensor<16x120xbf16>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<16x120xf32>) outs(%eb : tensor<16x120xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %r = arith.truncf %x : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<16x120xbf16>
  %ef = tensor.empty() : tensor<16x120xf32>
  %w = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<16x120xbf16>) outs(%ef : tensor<16x120xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %r = arith.extf %x : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<16x120xf32>
  return %w : tensor<16x120xf32>
}

// -----

// Negative: a slice that drops more than an eighth of its source (a quarter
// here) keeps the generic on the slice: widening would compute too much.
// CHECK-LABEL: func.func @negative_slice_too_narrow
// CHECK: %[[S:.*]] = tensor.extract_slice
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<16x96xf32>)
func.func @negative_slice_too_narrow(%m: tensor<16x128xf32>) -> tensor<16x96xf32> {
  %s = tensor.extract_slice %m[0, 0] [16, 96] [1, 1] : tensor<16x128xf32> to tensor<16x96xf32>
  %e = tensor.empty() : tensor<16x96xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<16x96xf32>) outs(%e : tensor<16x96xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<16x96xf32>
  return %r : tensor<16x96xf32>
}

// -----

// Negative: the sliced tensor has another use (returned whole), so the
// generic would not be the slice's only reader: left alone.
// CHECK-LABEL: func.func @negative_source_used_twice
// CHECK: %[[S:.*]] = tensor.extract_slice
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<16x120xf32>)
func.func @negative_source_used_twice(%m: tensor<16x128xf32>) -> (tensor<16x120xf32>, tensor<16x128xf32>) {
  %s = tensor.extract_slice %m[0, 0] [16, 120] [1, 1] : tensor<16x128xf32> to tensor<16x120xf32>
  %e = tensor.empty() : tensor<16x120xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<16x120xf32>) outs(%e : tensor<16x120xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = math.exp %x : f32
    linalg.yield %y : f32
  } -> tensor<16x120xf32>
  return %r, %m : tensor<16x120xf32>, tensor<16x128xf32>
}

// -----

// Negative: an integer division would run on the dropped lanes too (a
// padded zero divisor): left on the slice.
// CHECK-LABEL: func.func @negative_slice_integer_division
// CHECK: %[[S:.*]] = tensor.extract_slice
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<16x120xi32>)
func.func @negative_slice_integer_division(%m: tensor<16x128xi32>) -> tensor<16x120xi32> {
  %s = tensor.extract_slice %m[0, 0] [16, 120] [1, 1] : tensor<16x128xi32> to tensor<16x120xi32>
  %e = tensor.empty() : tensor<16x120xi32>
  %c7 = arith.constant 7 : i32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<16x120xi32>) outs(%e : tensor<16x120xi32>) {
  ^bb0(%x: i32, %o: i32):
    %y = arith.divsi %c7, %x : i32
    linalg.yield %y : i32
  } -> tensor<16x120xi32>
  return %r : tensor<16x120xi32>
}
