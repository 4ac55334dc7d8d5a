// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=nova-t1},func.func(nova-tile))' -split-input-file | FileCheck %s --check-prefix=T1
// RUN: nova-opt %s --pass-pipeline='builtin.module(nova-attach-target{target=tiny},func.func(nova-tile))' -split-input-file | FileCheck %s --check-prefix=TINY

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A matmul and its bias+GELU epilogue share one tile loop: N by the matrix
// unit's columns, M whole (it fits the accumulator), K whole (fits SRAM).
// T1-LABEL: func.func @matmul_bias_gelu_fused
// T1: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: %[[F:.*]] = linalg.fill {{.*}} -> tensor<256x128xf32>
// T1: %[[M:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<256x768xf32>, tensor<768x128xf32>) outs(%[[F]] : tensor<256x128xf32>)
// T1: linalg.generic {{.*}} ins(%[[M]], %{{.*}} : tensor<256x128xf32>, tensor<128xf32>)
// T1: math.erf
// T1: tensor.insert_slice
// T1-NOT: linalg.matmul
// On the tiny target (8x8 matrix unit, 16 KiB SRAM) K no longer fits, so
// the matmul is tiled alone along K too (its zero fill stays outside the K
// loop, which accumulates), and the epilogue separately. Its 16-deep
// panels let the rows grow to the accumulator's 32 (8-deep ones left 16).
// TINY-LABEL: func.func @matmul_bias_gelu_fused
// TINY: linalg.fill
// TINY: scf.for
// TINY: scf.for
// TINY: scf.for
// TINY-NOT: linalg.fill
// TINY: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<16x32xf32>) outs(%{{.*}} : tensor<32x32xf32>)
// TINY: linalg.generic
func.func @matmul_bias_gelu_fused(%a: tensor<256x768xf32>, %b: tensor<768x512xf32>, %bias: tensor<512xf32>) -> tensor<256x512xf32> {
  %c0 = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : tensor<256x512xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<256x512xf32>) -> tensor<256x512xf32>
  %m = linalg.matmul ins(%a, %b : tensor<256x768xf32>, tensor<768x512xf32>) outs(%f : tensor<256x512xf32>) -> tensor<256x512xf32>
  %g = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %bias : tensor<256x512xf32>, tensor<512xf32>) outs(%e : tensor<256x512xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %r = math.erf %s : f32
    %t = arith.mulf %r, %half : f32
    linalg.yield %t : f32
  } -> tensor<256x512xf32>
  return %g : tensor<256x512xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#red3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>

// A row reduction keeps its reduced dimension whole and tiles the rows.
// T1-LABEL: func.func @row_sum_keeps_reduction_whole
// T1: scf.for
// T1: linalg.generic {{.*}} ins(%{{.*}} : tensor<2x64x1024xf32>) outs(%{{.*}} : tensor<2x64x1xf32>)
// TINY-LABEL: func.func @row_sum_keeps_reduction_whole
// TINY: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x1x1024xf32>) outs(%{{.*}} : tensor<1x1x1xf32>)
func.func @row_sum_keeps_reduction_whole(%x: tensor<2x64x1024xf32>) -> tensor<2x64x1xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x64x1xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<2x64x1xf32>) -> tensor<2x64x1xf32>
  %r = linalg.generic {indexing_maps = [#id3, #red3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : tensor<2x64x1024xf32>) outs(%f : tensor<2x64x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x64x1xf32>
  return %r : tensor<2x64x1xf32>
}

// -----

// Batch matmuls are tiled one batch at a time.
// T1-LABEL: func.func @batch_matmul_per_batch
// T1: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x16x16xf32>, tensor<1x16x16xf32>) outs(%{{.*}} : tensor<1x16x16xf32>)
// TINY-LABEL: func.func @batch_matmul_per_batch
// TINY: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x{{[0-9]+}}x16xf32>, tensor<1x16x8xf32>)
func.func @batch_matmul_per_batch(%a: tensor<4x16x16xf32>, %b: tensor<4x16x16xf32>) -> tensor<4x16x16xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16x16xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<4x16x16xf32>, tensor<4x16x16xf32>) outs(%f : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
  return %m : tensor<4x16x16xf32>
}

// -----

// Ops already inside loops (tiled earlier) are left alone.
// T1-LABEL: func.func @negative_already_tiled
// T1: scf.for
// T1-NEXT: linalg.fill {{.*}} -> tensor<4x4xf32>
// TINY-LABEL: func.func @negative_already_tiled
func.func @negative_already_tiled(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%acc = %x) -> tensor<4x4xf32> {
    %f = linalg.fill ins(%z : f32) outs(%acc : tensor<4x4xf32>) -> tensor<4x4xf32>
    scf.yield %f : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

// An empty iteration space (nn.Linear(0, 4)): the result is the init.
// T1-LABEL: func.func @zero_size_contraction
// T1: linalg.fill
// T1-NOT: linalg.matmul
// T1: return
// TINY-LABEL: func.func @zero_size_contraction
func.func @zero_size_contraction(%a: tensor<2x0xf32>, %w: tensor<0x4xf32>) -> tensor<2x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = linalg.matmul ins(%a, %w : tensor<2x0xf32>, tensor<0x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#red2 = affine_map<(d0, d1) -> (d0, 0)>

// A row of 8192 floats does not fit the tiny target's 16 KiB of SRAM even
// one output element at a time: the reduction loop is tiled too, and each
// 1024-element chunk is added into the output element the loop carries.
// TINY-LABEL: func.func @reduction_too_long_for_sram_is_split
// TINY: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ROWS:.*]] =
// TINY: scf.for %[[K:.*]] = %{{.*}} to %c8192 step %c1024 iter_args(%[[ACC:.*]] = %[[ROWS]])
// TINY: %[[CHUNK:.*]] = tensor.extract_slice %arg0[%[[I]], %[[K]]] [1, 1024] [1, 1]
// TINY: %[[OLD:.*]] = tensor.extract_slice %[[ACC]][%[[I]], 0] [1, 1] [1, 1]
// TINY: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[CHUNK]] : tensor<1x1024xf32>) outs(%[[OLD]] : tensor<1x1xf32>)
func.func @reduction_too_long_for_sram_is_split(%x: tensor<4x8192xf32>) -> tensor<4x1xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = linalg.generic {indexing_maps = [#id2, #red2], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8192xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  return %r : tensor<4x1xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// AdamW's shape: the new moment is a result and the parameter's update reads
// it. It joins the update's tile loop, which yields its tiles too: one pass.
// T1-LABEL: func.func @returned_producer_joins_its_consumer
// T1-NOT: linalg.generic
// T1: %[[R:.*]]:2 = scf.for {{.*}} iter_args(%[[P:.*]] = %{{.*}}, %[[M:.*]] = %arg1)
// T1: %[[NM:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<64xf32>)
// T1: arith.addf
// T1: linalg.generic {{.*}} ins(%{{.*}}, %[[NM]] : tensor<64xf32>, tensor<64xf32>)
// T1: arith.subf
// T1: scf.yield
// T1: return %[[R]]#1, %[[R]]#0
func.func @returned_producer_joins_its_consumer(%p: tensor<64xf32>, %m: tensor<64xf32>, %g: tensor<64xf32>)
    -> (tensor<64xf32>, tensor<64xf32>) {
  %nm = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%g : tensor<64xf32>) outs(%m : tensor<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.addf %o, %a : f32
    linalg.yield %d : f32
  } -> tensor<64xf32>
  %e = tensor.empty() : tensor<64xf32>
  %np = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %nm : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<64xf32>
  return %nm, %np : tensor<64xf32>, tensor<64xf32>
}

// -----

// A key gradient [b, h, d, t] put back as [b, t, h, d]: the input's
// innermost dimension (t) moves, so a tile of 1 along it would make every
// element its own DMA run. It is tiled by the vector lanes (128 on nova-t1)
// like a row, besides the output's last two dimensions (h, d whole).
// T1-LABEL: func.func @transpose_moving_the_innermost_dimension
// T1: linalg.transpose ins(%{{.*}} : tensor<1x12x64x128xbf16>) outs(%{{.*}} : tensor<1x128x12x64xbf16>) permutation = [0, 3, 1, 2]
// TINY-LABEL: func.func @transpose_moving_the_innermost_dimension
func.func @transpose_moving_the_innermost_dimension(%x: tensor<2x12x64x256xbf16>) -> tensor<2x256x12x64xbf16> {
  %e = tensor.empty() : tensor<2x256x12x64xbf16>
  %t = linalg.transpose ins(%x : tensor<2x12x64x256xbf16>) outs(%e : tensor<2x256x12x64xbf16>) permutation = [0, 3, 1, 2]
  return %t : tensor<2x256x12x64xbf16>
}

// -----

// A transpose that keeps the innermost dimension ([b, t, h, d] -> [b, h, t, d],
// the heads' split) reads whole rows already. Its last two dimensions are
// held whole (256 x 64), so the outer ones grow up to max-rows x max-cols
// elements: all 12 heads of a sequence in one tile, not one head.
// T1-LABEL: func.func @transpose_keeping_the_innermost_dimension
// T1: linalg.transpose ins(%{{.*}} : tensor<1x256x12x64xbf16>) outs(%{{.*}} : tensor<1x12x256x64xbf16>) permutation = [0, 2, 1, 3]
// TINY-LABEL: func.func @transpose_keeping_the_innermost_dimension
func.func @transpose_keeping_the_innermost_dimension(%x: tensor<2x256x12x64xbf16>) -> tensor<2x12x256x64xbf16> {
  %e = tensor.empty() : tensor<2x12x256x64xbf16>
  %t = linalg.transpose ins(%x : tensor<2x256x12x64xbf16>) outs(%e : tensor<2x12x256x64xbf16>) permutation = [0, 2, 1, 3]
  return %t : tensor<2x12x256x64xbf16>
}

// -----

// The heads merged back ([b, h, t, d] -> [b, t, h, d]): the output's last two
// dimensions (12 x 64) are whole but small, so the tokens grow the tile: 256
// of them (and 2 sequences would pass max-rows x max-cols, 262144 elements)
// instead of one DMA of 12 runs per token.
// T1-LABEL: func.func @heads_merged_back
// T1: scf.for %{{.*}} = %c0{{.*}} to %c2 step %c1
// T1: linalg.transpose ins(%{{.*}} : tensor<1x12x256x64xbf16>) outs(%{{.*}} : tensor<1x256x12x64xbf16>) permutation = [0, 2, 1, 3]
// TINY-LABEL: func.func @heads_merged_back
func.func @heads_merged_back(%x: tensor<2x12x256x64xbf16>) -> tensor<2x256x12x64xbf16> {
  %e = tensor.empty() : tensor<2x256x12x64xbf16>
  %t = linalg.transpose ins(%x : tensor<2x12x256x64xbf16>) outs(%e : tensor<2x256x12x64xbf16>) permutation = [0, 2, 1, 3]
  return %t : tensor<2x256x12x64xbf16>
}

// -----

// Outer dims grow only while they fit: a softmax's row reduction over
// [8, 12, 256, 256] f32 would need 24 MiB for its input alone with all of b in one tile, so
// the batch stays at one.
// T1-LABEL: func.func @grown_tiles_fit_sram
// T1: linalg.generic {{.*}} ins(%{{.*}} : tensor<1x12x256x256xf32>) outs(%{{.*}} : tensor<1x12x256xf32>)
// TINY-LABEL: func.func @grown_tiles_fit_sram
#in4 = affine_map<(b, h, t, s) -> (b, h, t, s)>
#out3 = affine_map<(b, h, t, s) -> (b, h, t)>
func.func @grown_tiles_fit_sram(%x: tensor<8x12x256x256xf32>, %init: tensor<8x12x256xf32>) -> tensor<8x12x256xf32> {
  %r = linalg.generic {indexing_maps = [#in4, #out3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x : tensor<8x12x256x256xf32>) outs(%init : tensor<8x12x256xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.maximumf %a, %acc : f32
    linalg.yield %m : f32
  } -> tensor<8x12x256xf32>
  return %r : tensor<8x12x256xf32>
}

// -----

// An elementwise op over logits of GPT-2's vocabulary (50257 = 29 x 1733):
// the best divisor up to max-cols (29) would make 29-element DMA runs; the
// wider divisor 1733 is taken, with fewer rows.
// T1-LABEL: func.func @logits_of_an_awkward_vocabulary
// T1: linalg.generic {{.*}} ins(%{{.*}} : tensor<64x1733xf32>) outs(%{{.*}} : tensor<64x1733xf32>)
// TINY-LABEL: func.func @logits_of_an_awkward_vocabulary
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @logits_of_an_awkward_vocabulary(%x: tensor<64x50257xf32>) -> tensor<64x50257xf32> {
  %e = tensor.empty() : tensor<64x50257xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<64x50257xf32>) outs(%e : tensor<64x50257xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<64x50257xf32>
  return %g : tensor<64x50257xf32>
}

// -----

// The LM head's input gradient dX = dY W over GPT-2's padded vocabulary
// (K = 50304 = 128 x 393) does not fit SRAM whole: K is cut into panels
// that are whole multiples of the array's rows (384 = 3 x 128, not 6288 =
// 50304 / 8, which the array would take 48 rows at a time), and the rows
// grow back to what the accumulator holds (2048, not one array height).
// The output block is all 768 columns (six array widths): a 128-column
// block would read dY's panels once per column block, six times in all.
// T1-LABEL: func.func @lm_head_input_gradient
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[K:.*]] iter_args
// T1: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2048x384xf32>, tensor<384x768xf32>) outs(%{{.*}} : tensor<2048x768xf32>)
// TINY-LABEL: func.func @lm_head_input_gradient
// TINY: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x16xf32>, tensor<16x32xf32>) outs(%{{.*}} : tensor<32x32xf32>)
func.func @lm_head_input_gradient(%dy: tensor<2048x50304xf32>, %w: tensor<50304x768xf32>) -> tensor<2048x768xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x768xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<2048x768xf32>) -> tensor<2048x768xf32>
  %m = linalg.matmul ins(%dy, %w : tensor<2048x50304xf32>, tensor<50304x768xf32>) outs(%f : tensor<2048x768xf32>) -> tensor<2048x768xf32>
  return %m : tensor<2048x768xf32>
}

// -----

// The same in bf16 (autocast's dX): 128-column blocks would fit with
// 16768-deep panels and re-read the [2048 x 50304] gradient six times and
// W sixteen times; the plan keeps the whole [2048 x 768] output block and
// streams 384-deep panels of both operands once.
// T1-LABEL: func.func @lm_head_input_gradient_bf16
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2048x384xbf16>, tensor<384x768xbf16>) outs(%{{.*}} : tensor<2048x768xf32>)
// TINY-LABEL: func.func @lm_head_input_gradient_bf16
// TINY: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x8xbf16>, tensor<8x48xbf16>) outs(%{{.*}} : tensor<32x48xf32>)
func.func @lm_head_input_gradient_bf16(%dy: tensor<2048x50304xbf16>, %w: tensor<50304x768xbf16>) -> tensor<2048x768xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x768xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<2048x768xf32>) -> tensor<2048x768xf32>
  %m = linalg.matmul ins(%dy, %w : tensor<2048x50304xbf16>, tensor<50304x768xbf16>) outs(%f : tensor<2048x768xf32>) -> tensor<2048x768xf32>
  return %m : tensor<2048x768xf32>
}

// -----

// The first 392 array heights of GPT-2's unpadded vocabulary (K = 50176, the
// main part of nova-pad-matmul's 50176 + 81 split of dX = dY W at 50257
// words): the first panel depth that fits one array height of rows, 6272,
// leaves row tiles that re-read the operands; the thinner 1024-deep panels
// hold all 2048 rows, so each operand is read once.
// T1-LABEL: func.func @lm_head_input_gradient_split_vocabulary
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2048x1024xbf16>, tensor<1024x768xbf16>) outs(%{{.*}} : tensor<2048x768xf32>)
// TINY-LABEL: func.func @lm_head_input_gradient_split_vocabulary
// TINY: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x8xbf16>, tensor<8x48xbf16>) outs(%{{.*}} : tensor<32x48xf32>)
func.func @lm_head_input_gradient_split_vocabulary(%dy: tensor<2048x50176xbf16>, %w: tensor<50176x768xbf16>) -> tensor<2048x768xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2048x768xf32>
  %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<2048x768xf32>) -> tensor<2048x768xf32>
  %m = linalg.matmul ins(%dy, %w : tensor<2048x50176xbf16>, tensor<50176x768xbf16>) outs(%f : tensor<2048x768xf32>) -> tensor<2048x768xf32>
  return %m : tensor<2048x768xf32>
}

// -----

// An elementwise op over an embedding table of GPT-2's 50257 words (29 x
// 1733, AdamW's update of wte): the rows' best divisor up to max-rows is 29,
// so the rows take the wider divisor 1733 and the columns shrink to keep the
// tile near max-rows x max-cols elements: [1733 x 128] tiles (29 x 6 of
// them), not [29 x 384] (1733 x 2), each a DMA and a loop iteration.
// T1-LABEL: func.func @wide_rows_for_a_vocabulary
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// T1: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1733x128xf32>, tensor<1733x128xf32>) outs(%{{.*}} : tensor<1733x128xf32>)
func.func @wide_rows_for_a_vocabulary(%p: tensor<50257x768xf32>, %g: tensor<50257x768xf32>) -> tensor<50257x768xf32> {
  %lr = arith.constant 0.001 : f32
  %e = tensor.empty() : tensor<50257x768xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%p, %g : tensor<50257x768xf32>, tensor<50257x768xf32>) outs(%e : tensor<50257x768xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %b, %lr : f32
    %t = arith.subf %a, %s : f32
    linalg.yield %t : f32
  } -> tensor<50257x768xf32>
  return %r : tensor<50257x768xf32>
}
