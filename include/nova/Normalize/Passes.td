//===- Passes.td - the normalize phase --------------------*- tablegen -*-===//
//
// The input phase's output -> Nova normal form: convolutions as matmuls over
// views, batch matmuls as named ops, extensions and transposes read through
// the matmul, fused elementwise epilogues. The tiling and linalg-to-nova
// passes rely on what these passes establish; the contract is checked by
// nova-verify-normal-form at the end of nova-linalg-normalize.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_NORMALIZE_PASSES_TD
#define NOVA_NORMALIZE_PASSES_TD

include "mlir/Pass/PassBase.td"

def NovaDecomposeConv : Pass<"nova-decompose-conv", "::mlir::func::FuncOp"> {
  let summary = "decompose linalg.conv_2d_nchw_fchw into loops of matmuls over views";
  let description = [{
    Rewrites a static-shape `linalg.conv_2d_nchw_fchw` as three nested
    `scf.for` loops (batch image n, kernel row kh, kernel column kw) around
    one `linalg.matmul` that accumulates into the image's output:

      out[n] (F x OH*OW) += W[:, :, kh, kw] (F x C)
                            * X[n, :, kh*d : +s : OH, kw*d : +s : OW] (C x OH*OW)

    Every operand is a view: a full-rank strided `tensor.extract_slice` at
    offsets computed from the induction variables, followed by a
    `tensor.collapse_shape` that drops its unit dims explicitly (a
    rank-reducing slice leaves the dropped dims ambiguous when other dims are
    1 too, which MLIR's slice folds then misread); the per-image result is
    expanded and written back with `tensor.insert_slice`. A stride over a
    single output row or column is written as 1. Integer convolutions (the
    matrix unit takes floats only) run each tap as its products on the
    vector unit and a sum over the input channels; integer poolings add and
    take maxima with integer ops. Padding stays the `tensor.pad` torch-mlir
    emitted in front of the convolution. No im2col buffer is built and no
    gather appears in a payload, so the result is matmul + views only, which
    the tiling pass handles like any other matmul. The loops run N*KH*KW
    matmuls of shape (F x C) * (C x OH*OW) while the IR holds one: a weight
    gradient, whose "kernel" is the output gradient (OH x OW taps), stays as
    small as the convolution that produced it, and so does compile time.

    Before:
    ```mlir
    %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>,
        strides = dense<2> : vector<2xi64>}
        ins(%x, %w : tensor<1x8x10x10xf32>, tensor<16x8x3x3xf32>)
        outs(%b : tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
    ```
    After (the innermost loop's body):
    ```mlir
    %ws = tensor.extract_slice %w[0, 0, %i, %j] [16, 8, 1, 1] [1, 1, 1, 1]
        : tensor<16x8x3x3xf32> to tensor<16x8x1x1xf32>
    %wk = tensor.collapse_shape %ws [[0], [1, 2, 3]] : tensor<16x8x1x1xf32> into tensor<16x8xf32>
    %xk = tensor.extract_slice %x[%n, 0, %i, %j] [1, 8, 4, 4] [1, 1, 2, 2]
        : tensor<1x8x10x10xf32> to tensor<1x8x4x4xf32>
    %xc = tensor.collapse_shape %xk [[0, 1], [2, 3]] : tensor<1x8x4x4xf32> into tensor<8x16xf32>
    %acc1 = linalg.matmul ins(%wk, %xc : tensor<16x8xf32>, tensor<8x16xf32>)
        outs(%acc0 : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.yield %acc1 : tensor<16x16xf32>
    ```
    Dynamic shapes are an error.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numDecomposed", "decomposed-convs", "convolutions decomposed">,
    Statistic<"numMatmuls", "matmul-runs", "matmuls the loops run (images x kernel taps)">,
  ];
}

def NovaCollapseBatchDims
    : Pass<"nova-collapse-batch-dims", "::mlir::func::FuncOp"> {
  let summary = "turn a multi-batch-dimension contraction back into linalg.batch_matmul";
  let description = [{
    The inverse of `nova-expand-batch-dims`: a `linalg.generic` computing
    `C[b..., m, n] += A[b..., m, k] * B[b..., k, n]` with two or more batch
    loops becomes collapses of its operands, a `linalg.batch_matmul` and an
    expand of the result, which is what tiling and `convert-linalg-to-nova`
    take. Operands extended to the accumulator's type in the body
    (`arith.extf`: bf16 accumulated in f32) are the batch_matmul of the
    narrow operands, which extends them itself.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numCollapsed", "collapsed-contractions", "Contractions turned back into batch matmuls">,
  ];
}

def NovaFoldExtIntoMatmul
    : Pass<"nova-fold-ext-into-matmul", "::mlir::func::FuncOp"> {
  let summary = "run bf16/f16 matmuls on the matrix unit at their own rate";
  let description = [{
    torch-mlir lowers a bf16 (or f16) `mm` as `arith.extf` of both operands
    to f32, an f32 `linalg.matmul` and a `truncf` of the result: the matrix
    unit would run at its f32 rate (a quarter of bf16's). Products of two bf16
    values are exact in f32 and the matrix unit accumulates in f32, so the
    widening is dropped: the matmul reads the narrow operands (linalg's cast
    semantics) and still accumulates into its f32 output.

    Before:
    ```mlir
    %a32 = linalg.generic {identity maps} ins(%a : tensor<16x64xbf16>) ... { arith.extf }
    %b32 = linalg.generic {identity maps} ins(%b : tensor<64x128xbf16>) ... { arith.extf }
    %c = linalg.matmul ins(%a32, %b32 : tensor<16x64xf32>, tensor<64x128xf32>) outs(%acc : tensor<16x128xf32>)
    ```
    After:
    ```mlir
    %c = linalg.matmul ins(%a, %b : tensor<16x64xbf16>, tensor<64x128xbf16>) outs(%acc : tensor<16x128xf32>)
    ```
    Both operands must widen from the same type; a mixed f32 x bf16 matmul
    stays in f32.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numFolded", "folded-widenings", "Matmuls that read their narrow operands">,
  ];
}

def NovaFoldTransposeIntoMatmul
    : Pass<"nova-fold-transpose-into-matmul", "::mlir::func::FuncOp"> {
  let summary = "read a transposed matmul operand through the matmul's indexing map";
  let description = [{
    torch's `x @ W.T` (every `nn.Linear`'s forward) reaches linalg as a
    `linalg.transpose` of the weight feeding a `linalg.matmul`, and its weight
    gradient `dY.T @ X` as a transpose of the activation gradient; left alone,
    every step writes a transposed copy of each weight and of each such
    activation to HBM (a vector-unit transpose) and reads it back. This pass
    drops such a transpose (2-D, permutation [1, 0], used only by this matmul)
    of either operand and swaps that operand's indexing map instead, so that
    the DMA brings the tile's rows as they lie in HBM and the matrix unit reads
    the SRAM tile through a transposed view. Matmuls whose result is not
    `C[m, n]` are left alone.

    Before:
    ```mlir
    %t = linalg.transpose ins(%w : tensor<256x64xf32>) outs(%e : tensor<64x256xf32>) permutation = [1, 0]
    %m = linalg.matmul ins(%x, %t : tensor<16x64xf32>, tensor<64x256xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
    ```
    After:
    ```mlir
    %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                        affine_map<(d0, d1, d2) -> (d1, d2)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1)>]
           ins(%x, %w : tensor<16x64xf32>, tensor<256x64xf32>) outs(%f : tensor<16x256xf32>) -> tensor<16x256xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numFolded", "folded-transposes", "Transposes read through a matmul's indexing map">,
  ];
}

def NovaPadMatmul : Pass<"nova-pad-matmul", "::mlir::func::FuncOp"> {
  let summary = "pad a matmul's extents when the matrix unit could only tile them in slivers";
  let description = [{
    nova-tile cuts a matmul's N dimension into equal tiles of the largest
    divisor that fits the matrix unit's columns, its rows into the largest
    divisor up to the accumulator's row budget, and the contraction is fed
    to the array in chunks of the largest divisor of K that fits its rows.
    An extent with no good divisor (GPT-2's vocabulary, 50257 = 29 x 1733,
    on a 128 x 128 array) would run in slivers: the LM head's forward in
    29-column tiles, its backward dX = dY W in 29-row chunks of K. Such a
    matmul gets the operands that index the extent (and its destination,
    for M and N) zero-padded to a multiple of the array, and its result
    sliced back; zero rows, columns and contraction lanes add nothing. N is
    padded above the array width when its best divisor is under a quarter
    of it, K the same against the rows, M when no divisor between the
    array's height and the row budget exists.

    ```mlir
    // before: C[1024, 50257] = A[1024, 768] * B[768, 50257]
    // after:  %b = tensor.pad %B high[0, 47]; %c = tensor.pad %C high[0, 47]
    //         %w = linalg.matmul ins(%A, %b) outs(%c) -> tensor<1024x50304xf32>
    //         %r = tensor.extract_slice %w[0, 0] [1024, 50257] [1, 1]
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numPadded", "padded-matmuls", "Matmuls whose extents were padded">,
  ];
}

def NovaCollapseRank
    : Pass<"nova-collapse-rank", "::mlir::func::FuncOp"> {
  let summary = "collapse the loops of generics of rank above 4 into what a tile holds";
  let description = [{
    A tile descriptor holds at most 4 dimensions (docs/isa.md 1.3). A
    `linalg.generic` with more loops (Llama's grouped-query `repeat_kv`
    broadcast is [B, H_kv, n_rep, S, D]) has adjacent loops of one iterator
    type merged wherever every operand keeps them adjacent and in order
    (upstream `linalg::collapseOpIterationDims`), until it has 4 loops.

    ```mlir
    // before: out[b, h, r, s, d] = in[b, h, s, d]
    %o = linalg.generic {indexing_maps = [(b,h,r,s,d) -> (b,h,s,d), (b,h,r,s,d) -> (b,h,r,s,d)], ...}
    // after: the (s, d) pair is one loop of size S*D; collapse_shape of the
    // operands, expand_shape of the result
    ```

    When merging is not enough (an operand broadcast along every other
    dimension, a full transpose, reductions between parallel loops), the
    outermost loops become `scf.for` loops of step 1 (upstream
    `scf::tileUsingSCF`; a tiled reduction loop accumulates into its output
    slice), and the generic in their body drops those now-unit loops.

    A gather (`tensor.extract` in a payload) from a tensor of rank above 4
    reads a `tensor.collapse_shape` of its leading dimensions at their
    row-major linear index instead (trilinear interpolation and adaptive 3-D
    pooling read [N, C, D, H, W] inputs so).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numCollapsed", "collapsed-generics", "Generics brought to at most 4 loops">,
  ];
}

def NovaFuseElementwise
    : Pass<"nova-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "fuse elementwise linalg.generic producers into generic consumers";
  let description = [{
    Runs upstream `populateElementwiseOpsFusionPatterns` with a control
    function that fuses only an all-parallel `linalg.generic` producer with a
    single use into a `linalg.generic` consumer, and
    `populateFoldReshapeOpsByCollapsingPatterns` restricted to reshapes between
    two generics (so the bias add that torch-mlir computes on the collapsed 2-D
    matmul result meets the activation computed on the expanded 3-D tensor).
    Named ops (matmul, batch_matmul, transpose, broadcast, fill) are never
    fused into or rewritten as generics: that would hide the contraction from
    the tiling pass (DESIGN.md, the `linalg-fuse-elementwise-ops` gotcha).

    Then an all-parallel generic with identity maps whose inputs are all one
    zero-offset `tensor.extract_slice` (its source's only use, at most an
    eighth larger) runs over the source and its result is sliced instead:
    nova-pad-matmul's padded LM head keeps its `logits.float()` epilogue,
    which nova-tile fuses into the matmul's tile loop.

    Before:
    ```mlir
    %mm = linalg.matmul ins(%a, %b : ...) outs(%z : tensor<16x128xf32>) -> tensor<16x128xf32>
    %bias = linalg.generic ... ins(%mm, %bvec ...) { arith.addf }
    %gelu = linalg.generic ... ins(%bias ...) { arith.divf, math.erf, ... }
    ```
    After:
    ```mlir
    %mm = linalg.matmul ins(%a, %b : ...) outs(%z : tensor<16x128xf32>) -> tensor<16x128xf32>
    %epi = linalg.generic ... ins(%mm, %bvec ...) { arith.addf, arith.divf, math.erf, ... }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"foldReshapes", "fold-reshapes", "bool", /*default=*/"true",
           "collapse generics across expand_shape/collapse_shape between two generics">,
  ];
  let statistics = [
    Statistic<"numGenericsBefore", "generics-before", "linalg.generic ops before fusion">,
    Statistic<"numGenericsAfter", "generics-after", "linalg.generic ops after fusion">,
  ];
}

def NovaVerifyNormalForm
    : Pass<"nova-verify-normal-form", "::mlir::func::FuncOp"> {
  let summary = "check that a function is in Nova linalg normal form";
  let description = [{
    Emits an error for every op that breaks the contract the tiling and
    linalg-to-nova passes rely on, and changes nothing:
    - every tensor flowing between ops has element type f32;
    - every `linalg.generic` has one result and is either all-parallel with
      projected-permutation indexing maps, or a reduction;
    - generic payloads hold only `arith` / `math` ops on f32 scalars (i1 only
      as the result of `arith.cmpf` feeding `arith.select`), no
      `linalg.index`;
    - no convolution op is left.

    ```mlir
    // expected-error @+1 {{linalg.generic has 2 results; nova normal form needs exactly one}}
    %r:2 = linalg.generic ...
    ```
  }];
  let statistics = [
    Statistic<"numChecked", "checked-ops", "ops checked">,
  ];
}

#endif // NOVA_NORMALIZE_PASSES_TD
