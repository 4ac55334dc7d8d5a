//===- Passes.td - linalg-on-tensors normal-form passes ----*- tablegen -*-===//
//
// torch-mlir linalg-on-tensors -> Nova normal form. The tiling and
// linalg-to-nova passes rely on what these passes establish; the contract is
// checked by nova-verify-normal-form at the end of nova-linalg-normalize.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_TRANSFORMS_PASSES_TD
#define NOVA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def NovaDemoteF64 : Pass<"nova-demote-f64", "::mlir::func::FuncOp"> {
  let summary = "demote f64 scalars, tensors and constants to f32";
  let description = [{
    The accelerator has no f64. torch-mlir computes some reductions in f64
    (LayerNorm's var_mean: `arith.extf` to f64, reduce, `arith.truncf` back).
    This pass rewrites every f64 value in a function body to f32, converts f64
    constants (scalar and dense) to f32, and erases the `arith.extf` /
    `arith.truncf` that become f32 -> f32.

    Before:
    ```mlir
    %e = linalg.generic ... ins(%x : tensor<8xf32>) outs(%0 : tensor<8xf64>) {
    ^bb0(%in: f32, %out: f64):
      %d = arith.extf %in : f32 to f64
      linalg.yield %d : f64
    } -> tensor<8xf64>
    ```
    After:
    ```mlir
    %e = linalg.generic ... ins(%x : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<8xf32>
    ```
    A function whose signature holds f64, and an `arith.bitcast` to or from
    f64, are errors (demoting them would change the ABI or the bits); the
    function is then left unchanged.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numDemotedValues", "demoted-values",
              "values (results and block arguments) demoted from f64 to f32">,
    Statistic<"numDemotedConstants", "demoted-constants",
              "f64 constants rewritten as f32">,
    Statistic<"numErasedCasts", "erased-casts",
              "extf/truncf casts that became f32 -> f32 and were erased">,
  ];
}

def NovaUnrollLoops : Pass<"nova-unroll-loops", "::mlir::func::FuncOp"> {
  let summary = "unroll scf.for loops of constant trip count completely";
  let description = [{
    torch-mlir lowers `linalg.det`, `slogdet` and `stft` to `scf.for` loops
    over tensors (one elimination step per row). The tile pipeline takes
    straight-line programs, so each loop with a constant trip count of at
    most `max-iterations` is unrolled completely (upstream
    `loopUnrollFull`, innermost first) and the function is canonicalized,
    which turns the slices sized by the induction variable into static ones.

    ```mlir
    // before
    %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %x) -> (tensor<5x5xf32>) {
      %n = arith.subi %c4, %i : index
      %s = tensor.extract_slice %a[%i, 0] [%n, 5] [1, 1] : tensor<5x5xf32> to tensor<?x5xf32>
      ...
    }
    // after: four copies of the body, slices of tensor<4x5xf32>, tensor<3x5xf32>, ...
    ```

    A loop whose trip count is not a constant or exceeds `max-iterations`,
    and any other `scf` op (while, if, forall), is an error at the op.
    Functions without loops are left unchanged.
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "int64_t", /*default=*/"256",
           "unroll loops of at most this many iterations; longer ones are errors">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
  let statistics = [
    Statistic<"numUnrolled", "unrolled-loops", "scf.for loops unrolled completely">,
  ];
}

def NovaRollLayers : Pass<"nova-roll-layers", "::mlir::func::FuncOp"> {
  let summary = "share the code of identical consecutive layers through a loop over layers";
  let description = [{
    A model built from `L` identical layers (a transformer's blocks) reaches
    linalg as `L` straight-line copies of one layer, so its binary and its
    compile time grow with depth. This pass finds the longest run of
    consecutive isomorphic regions of a function body and rolls it into one
    `scf.for` over layers whose body is one copy of the region, as IREE
    shares the code of identical layers.

    Regions are isomorphic when their ops match one to one (name,
    attributes, properties, types, regions) and every operand is, in every
    region at the same place,
    * the result of the same earlier op of its own region;
    * one value defined before the run (shared: a mask, a zero fill);
    * the value carried from the previous region (the residual stream): the
      same result of the same op of region `k - 1`, and a value defined
      before the run in region 0; or
    * a function argument of one type, a different one per region (the
      layer's weights).
    Ops that depend on no argument (constants, fills, masks) are first moved
    to the top of the function, so that CSE sharing them between layers does
    not make region 0 differ. Only results carried to the next region (and
    out of the last one) may be used outside a region.

    The `L` arguments of each per-layer weight are read from a new argument
    `tensor<L x ...>` appended to the function (its slot `%l` sliced and
    collapsed); the argument carries `nova.stack_of = array<i64: ...>`, the
    positions of the `L` arguments it stacks. That is an ABI contract:
    nova-plan-memory places the `L` arguments contiguously, at
    `address(stack) + k * bytes`, so the runtime binds them one by one as
    before while the loop addresses its weights from the induction variable,
    and the binary's I/O table lists the `L` arguments, not the stack.

    ```mlir
    // before: %x1 = layer(%x0, %w0); %x2 = layer(%x1, %w1)
    %a = linalg.matmul ins(%x0, %w0 : ...) outs(%z : ...) -> tensor<8x32xf32>
    %x1 = linalg.generic ... ins(%a, %x0 : ...) ...
    %b = linalg.matmul ins(%x1, %w1 : ...) outs(%z : ...) -> tensor<8x32xf32>
    %x2 = linalg.generic ... ins(%b, %x1 : ...) ...
    // after (%ws: tensor<2x32x32xf32> {nova.stack_of = array<i64: 0, 1>})
    %x2 = scf.for %l = %c0 to %c2 step %c1 iter_args(%x = %x0) -> (tensor<8x32xf32>) {
      %s = tensor.extract_slice %ws[%l, 0, 0] [1, 32, 32] [1, 1, 1] : ...
      %w = tensor.collapse_shape %s [[0, 1], [2]] : tensor<1x32x32xf32> into tensor<32x32xf32>
      %a = linalg.matmul ins(%x, %w : ...) outs(%z : ...) -> tensor<8x32xf32>
      %y = linalg.generic ... ins(%a, %x : ...) ...
      scf.yield %y : tensor<8x32xf32>
    } {nova.layers}
    ```

    Functions with `shard` or `nova` ops (partitioned or collective
    programs) or donated arguments (`nova.aliasing_output`: a training
    step) are left alone, as are functions without a run of at least
    `min-layers` regions of at least `min-ops` linalg ops each. A function
    already in that form is left unchanged, so the pass can run twice.
  }];
  let options = [
    Option<"minOps", "min-ops", "int64_t", /*default=*/"4",
           "roll only regions holding at least this many linalg ops">,
    Option<"minLayers", "min-layers", "int64_t", /*default=*/"2",
           "roll only runs of at least this many regions">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numLoops", "layer-loops", "loops over layers made">,
    Statistic<"numLayers", "rolled-layers", "regions rolled into layer loops">,
    Statistic<"numStacks", "stacked-arguments", "per-layer arguments stacked">,
  ];
}

def NovaAliasOutputs : Pass<"nova-alias-outputs", "::mlir::func::FuncOp"> {
  let summary = "write a donated argument's result in place, in its buffer";
  let description = [{
    An argument carrying `nova.aliasing_output = k` is donated to result `k`
    (as JAX's `donate_argnums` or XLA's input/output aliasing): at the end of
    the run its buffer holds result `k`, and the binary lists result `k` at
    the argument's address. A training step donates its parameters and
    optimizer state, so the update runs in place on the resident buffers.

    When result `k` is computed by an elementwise `linalg.generic` (all loops
    parallel, one result) that reads the argument with the result's own
    indexing map, and that generic is the argument's last user, this pass
    makes the argument the generic's destination and reads it through the
    `outs` block argument: one-shot bufferization then writes the result into
    the argument's buffer, tile by tile (each tile is read before it is
    written). Otherwise the result is left where it is and `nova-plan-memory`
    copies it into the argument's buffer at the end of the function (a remark
    says why).

    Before:
    ```mlir
    func.func @sgd(%p: tensor<8xf32> {nova.aliasing_output = 0 : i64},
                   %g: tensor<8xf32>) -> tensor<8xf32> {
      %e = tensor.empty() : tensor<8xf32>
      %r = linalg.generic {...} ins(%p, %g : ...) outs(%e : tensor<8xf32>) {
      ^bb0(%a: f32, %b: f32, %o: f32):
        %d = arith.subf %a, %b : f32
        linalg.yield %d : f32
      } -> tensor<8xf32>
      return %r : tensor<8xf32>
    }
    ```
    After:
    ```mlir
      %r = linalg.generic {...} ins(%g : ...) outs(%p : tensor<8xf32>) {
      ^bb0(%b: f32, %a: f32):
        %d = arith.subf %a, %b : f32
        linalg.yield %d : f32
      } -> tensor<8xf32>
    ```
    Errors: `k` out of range, a result whose type differs from the
    argument's, or two arguments donated to one result.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numInPlace", "in-place",
              "donated results made to write into their argument's buffer">,
    Statistic<"numCopied", "copied",
              "donated results left to be copied into the argument's buffer">,
  ];
}

def NovaEraseDeadGenericResults
    : Pass<"nova-erase-dead-generic-results", "::mlir::func::FuncOp"> {
  let summary = "drop unused results of multi-result linalg.generic ops, split independent ones";
  let description = [{
    A generic whose results are all live but computed independently (each
    from the inputs, the loop indices and its own init: adaptive pooling's
    window sum and window size) is split into one generic per result; a
    result that accumulates nothing and reads only its own loop indices
    becomes a parallel generic over its own dimensions.

    A maximum (or minimum) and its index coupled through one compare
    (`v' = select(v > m, v, m)`, `i' = select(v > m, idx, i)`: adaptive max
    pooling with indices) become two reductions: a `maximumf` reduction,
    then the smallest `idx` whose value equals the maximum or is NaN, from a
    fill of the integer maximum. Eager scans a window in increasing index
    order, so this is the index it returns, ties and NaN included. A lone
    running maximum kept by compare and select becomes `maximumf` too (which
    propagates NaN, as eager's max pooling does). torch-mlir's "first index
    whose value equals the window maximum" (`select(out == -1, select(v ==
    m, idx, out), out)` from a fill of -1) becomes the smallest matching idx
    (a `minsi` reduction) and -1 where nothing matched, when idx provably
    grows with the reduction's iteration order. Other coupled results stay,
    and are reported.

    torch-mlir lowers `max` (used by softmax) to one reduction that yields
    both the maximum and its index. Only the maximum is used; this pass drops
    the dead index result together with the payload that computed it (the
    upstream `populateEraseUnusedOperandsAndResultsPatterns`), so that every
    reduction yields exactly one value.

    Before:
    ```mlir
    %r:2 = linalg.generic {... iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<4x8xf32>) outs(%m, %i : tensor<4xf32>, tensor<4xi64>) {
    ^bb0(%in: f32, %out: f32, %idx: i64):
      %k = linalg.index 1 : index
      %ki = arith.index_cast %k : index to i64
      %max = arith.maximumf %in, %out : f32
      %gt = arith.cmpf ogt, %in, %out : f32
      %sel = arith.select %gt, %ki, %idx : i64
      linalg.yield %max, %sel : f32, i64
    } -> (tensor<4xf32>, tensor<4xi64>)
    ```
    After (only `%r#0` was used):
    ```mlir
    %r = linalg.generic {... iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<4x8xf32>) outs(%m : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %max = arith.maximumf %in, %out : f32
      linalg.yield %max : f32
    } -> tensor<4xf32>
    ```
    A generic that still has more than one live result afterwards is an error.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numErasedResults", "erased-results",
              "dead linalg.generic results erased">,
  ];
}

def NovaFoldShapeConstants
    : Pass<"nova-fold-shape-constants", "::mlir::func::FuncOp"> {
  let summary = "fold shape-only integer/i1 tensor computations into f32 constants";
  let description = [{
    Integer and boolean tensors that depend on the program's inputs are computed
    on chip; the ones that are compile-time constants (masks, iotas) in
    torch-mlir output that depend only on shapes (the causal mask:
    `linalg.index` iota, `arith.subi`, `arith.cmpi`, `arith.andi`, ...) are
    evaluated at compile time. Such a constant consumed by a float generic
    becomes an `arith.constant dense<...>` f32 tensor (1.0 / 0.0 for i1); in
    the consumer's payload an i1 input is recovered as
    `arith.cmpf une, %in, 0.0` and an integer input used by `arith.sitofp` /
    `arith.uitofp` is used directly. `math.fpowi` with a constant integer
    exponent becomes a chain of `arith.mulf` (and one `arith.divf` when the
    exponent is negative).

    Before:
    ```mlir
    %iota = linalg.generic {...} outs(%e : tensor<8xi64>) {
      %i = linalg.index 0 : index
      ...
    %mask = linalg.generic ... -> tensor<8x8xi1>   // cmpi on %iota
    %s = linalg.generic ... ins(%mask, %fill, %x : tensor<8x8xi1>, tensor<f32>, ...) {
    ^bb0(%m: i1, %f: f32, %v: f32, %out: f32):
      %r = arith.select %m, %f, %v : f32
    ```
    After:
    ```mlir
    %mask = arith.constant dense<[[0.0, 1.0, ...], ...]> : tensor<8x8xf32>
    %s = linalg.generic ... ins(%mask, %fill, %x : tensor<8x8xf32>, ...) {
    ^bb0(%m: f32, %f: f32, %v: f32, %out: f32):
      %c = arith.cmpf une, %m, %cst0 : f32
      %r = arith.select %c, %f, %v : f32
    ```
    An integer or boolean tensor that depends on run-time data, or that
    reaches anything other than a float linalg.generic or a reshape, is an
    error naming the op.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect"];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"1048576",
           "largest integer tensor (in elements) evaluated at compile time">,
  ];
  let statistics = [
    Statistic<"numFoldedOps", "folded-ops",
              "integer/i1 tensor ops evaluated at compile time">,
    Statistic<"numConvertedConsumers", "converted-consumers",
              "float generics whose integer/i1 inputs became f32 constants">,
    Statistic<"numExpandedPowi", "expanded-powi",
              "math.fpowi with constant exponent expanded to multiplications">,
  ];
}

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

def NovaPadMatmul : Pass<"nova-pad-matmul", "::mlir::func::FuncOp"> {
  let summary = "pad a matmul's width when the matrix unit could only tile it in slivers";
  let description = [{
    nova-tile cuts a matmul's N dimension into equal tiles of the largest
    divisor that fits the matrix unit's columns. A width with no good
    divisor (GPT-2's vocabulary, 50257 = 29 x 1733, on a 128-column array)
    would run in 29-column tiles, a quarter of the array or less. Such a
    matmul (N above the array width, best divisor under a quarter of it)
    gets B and its destination zero-padded to a multiple of the width and
    its result sliced back; the extra columns cost one padded copy of B.

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
    Statistic<"numPadded", "padded-matmuls", "Matmuls whose width was padded">,
  ];
}

def NovaFoldTransposeIntoMatmul
    : Pass<"nova-fold-transpose-into-matmul", "::mlir::func::FuncOp"> {
  let summary = "read a transposed matmul operand through the matmul's indexing map";
  let description = [{
    torch's `x @ W.T` (every `nn.Linear`) reaches linalg as a `linalg.transpose`
    of the weight feeding a `linalg.matmul`; left alone, every forward writes
    a transposed copy of each weight to HBM and reads it back. This pass
    drops such a transpose (2-D, permutation [1, 0], used only by matmuls) and
    gives the matmul the transposed-B indexing maps instead, so that the DMA
    reads the weight tile through transposed strides.

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

def NovaFuseAttention : Pass<"nova-fuse-attention", "::mlir::func::FuncOp"> {
  let summary = "fuse matmul-softmax-matmul attention into nova.attention";
  let description = [{
    Replaces `softmax(scale * Q @ Kt [masked]) @ V`, as torch-mlir and
    Nova's normal form spell SDPA's math path or a hand-written masked
    softmax, by one `nova.attention` (flash attention: no score matrix in
    HBM, causal key blocks skipped). The batch matmuls must start from zero,
    the scale and mask form one elementwise generic, the mask must be an
    exactly causal constant, and no intermediate may have another user (a
    training step that keeps the probabilities is left alone). What each
    generic computes is checked by folding its body on probe values.

    Before (reshapes of the batch dimensions elided):
    ```mlir
    %s = linalg.batch_matmul ins(%q, %kt : ...) outs(%zero : ...)
    %x = linalg.generic ... ins(%s, %causal_mask ...)   // scale, mask
    %m = linalg.generic ... reduction ... maximumf       // row max
    %e = linalg.generic ... ins(%x, %m) exp(x - m)
    %l = linalg.generic ... reduction ... addf           // row sum
    %p = linalg.generic ... ins(%e, %l) e / l
    %o = linalg.batch_matmul ins(%p, %v : ...) outs(%zero2 : ...)
    ```
    After:
    ```mlir
    %o = nova.attention ins(%q, %kt, %v : ...) outs(%init : ...) scale 1.250000e-01 causal -> ...
    ```
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect", "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numFused", "fused-attentions", "Attentions fused into nova.attention">,
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

def NovaExpandBatchDims
    : Pass<"nova-expand-batch-dims", "::mlir::func::FuncOp"> {
  let summary = "give a batch matmul one loop per batch dimension of its operands";
  let description = [{
    torch lowers `q @ k.transpose(-2, -1)` on [B, H, S, D] tensors to a
    `tensor.collapse_shape` of B and H into one batch dimension, a
    `linalg.batch_matmul`, and a `tensor.expand_shape` back. Sharding the
    heads over a mesh axis (Megatron tensor parallelism) then cannot cross
    the collapse: a chip's heads of every batch row are not one block of
    B*H. This pass, run before sharding propagation, folds the operands'
    collapses into a `linalg.generic` contraction with one parallel loop per
    batch dimension; the result is collapsed back for the existing users
    (canonicalization folds that into their expand). `nova-collapse-batch-dims`
    undoes it after partitioning.

    Before:
    ```mlir
    %a = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
    %b = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
    %m = linalg.batch_matmul ins(%a, %b : ...) outs(%init : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
    ```
    After:
    ```mlir
    %i = tensor.expand_shape %init [[0, 1], [2], [3]] output_shape [2, 4, 16, 16] : ...
    %g = linalg.generic {indexing_maps = [(b0, b1, m, n, k) -> (b0, b1, m, k),
                                          (b0, b1, m, n, k) -> (b0, b1, k, n),
                                          (b0, b1, m, n, k) -> (b0, b1, m, n)], ...}
           ins(%q, %k : ...) outs(%i : tensor<2x4x16x16xf32>) {mulf, addf}
    %m = tensor.collapse_shape %g [[0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
    ```
    Only float batch matmuls with the default indexing maps whose two
    inputs collapse the same leading batch dimensions are rewritten. First,
    a `linalg.transpose` of such a collapse that keeps the batch dimension
    first (the backward's `k^T`, `q^T`) is rewritten to a transpose of the
    source followed by the collapse, so the matmuls behind it are reached.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numExpanded", "expanded-matmuls", "Batch matmuls given one loop per batch dimension">,
    Statistic<"numTransposesSunk", "sunk-transposes",
              "Transposes of a batch collapse rewritten to transpose the source">,
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

def NovaCollapseBatchDims
    : Pass<"nova-collapse-batch-dims", "::mlir::func::FuncOp"> {
  let summary = "turn a multi-batch-dimension contraction back into linalg.batch_matmul";
  let description = [{
    The inverse of `nova-expand-batch-dims`: a `linalg.generic` computing
    `C[b..., m, n] += A[b..., m, k] * B[b..., k, n]` with two or more batch
    loops becomes collapses of its operands, a `linalg.batch_matmul` and an
    expand of the result, which is what tiling and `convert-linalg-to-nova`
    take.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numCollapsed", "collapsed-contractions", "Contractions turned back into batch matmuls">,
  ];
}

def NovaRecordLoopRanges : Pass<"nova-record-loop-ranges", "::mlir::func::FuncOp"> {
  let summary = "remember the global loop ranges of linalg ops that read linalg.index";
  let description = [{
    Run before `shard-partition`: every linalg op whose body reads
    `linalg.index`, has no `tensor.extract` and whose result reaches no
    gather (through the elementwise and reshaping ops that use it, up to a
    reduction or contraction) gets `nova_loop_ranges` (its static loop ranges), for
    `nova-offset-split-indices` to compare with after partitioning.
  }];
  let statistics = [
    Statistic<"numRecorded", "recorded", "linalg ops whose loop ranges were recorded">,
  ];
}

def NovaOffsetSplitIndices : Pass<"nova-offset-split-indices", "::mlir::func::FuncOp"> {
  let summary = "add each chip's offset to linalg.index of a loop partitioning split";
  let description = [{
    `shard-partition` gives a linalg op its chip's slice of the iteration
    space but keeps its body, so `linalg.index` of a split loop counts from 0
    on every chip (an iota over a split vocabulary: one_hot's class ids).
    For each op `nova-record-loop-ranges` marked, a loop whose local range is
    `global / n` for the mesh axis of size `n` gets
    `coordinate(nova.chip_id, axis) * local` added to each of its indices.
    Gathers, and iotas whose values reach one, are not marked: their indices
    address the chip's own slice of what is gathered, where they must stay
    local (the cross-entropy's target lookup and the attention mask's rows
    under data parallelism). A loop split
    over several axes, or by a ratio several axes could give, is an error.
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect", "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numOffset", "offset-indices", "linalg.index results offset by the chip's position">,
  ];
}

def NovaPrepareSharding
    : Pass<"nova-prepare-sharding", "::mlir::func::FuncOp"> {
  let summary = "give every op its own destination and no tensor constants before sharding";
  let description = [{
    Three things MLIR 22's `sharding-propagation` and `shard-partition` do
    not handle, rewritten away before they run:

    - One `tensor.empty` or `linalg.fill` shared as the destination of ops
      that end up sharded differently (a column-parallel matmul's init and a
      row-parallel one's): propagation asserts that all users of a value
      agree. Each use gets its own clone.
    - One generator (a `linalg.generic` that reads only its loop indices,
      torch's `arange`, into an init) shared by ops that want it sharded
      differently (the one-hot of an embedding lookup and the one-hot of a
      parallel cross-entropy over a split vocabulary): it has no sharded
      operand, so propagation gives it no sharding of its own and the
      backward traversal asserts that its users agree. Each use gets its
      own clone.
    - A splat tensor `arith.constant` (torch's `ones(t, t)` for a causal
      mask): partitioning cannot split it. It becomes `linalg.fill` of a
      `tensor.empty`, which it can.

    Before:
    ```mlir
    %e = tensor.empty() : tensor<32x64xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
    %q = linalg.matmul ins(%x, %wq : ...) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
    %p = linalg.matmul ins(%y, %wp : ...) outs(%f : tensor<32x64xf32>) -> tensor<32x64xf32>
    ```
    After: each matmul has its own `tensor.empty` and `linalg.fill`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numCloned", "cloned-inits", "Destinations cloned for a single use">,
    Statistic<"numFills", "splat-fills", "Splat constants turned into fills">,
    Statistic<"numGenerators", "cloned-generators",
              "Index generators (aranges) cloned for a single use">,
  ];
}

def NovaResolveShardingConflicts
    : Pass<"nova-resolve-sharding-conflicts", "::mlir::func::FuncOp"> {
  let summary = "pin the values whose users sharding propagation would annotate differently";
  let description = [{
    MLIR 22's `sharding-propagation` gives a value no sharding of its own
    when the op computing it has no sharded operand (a matmul of replicated
    operands, a reshape of a replicated value), and lets each user annotate
    it for itself. When two users ask different shardings of one such value,
    its backward traversal asserts in `getSharding(OpResult)` ("only support
    all shard ops have the same grid sharding attr"). A training step under
    sequence parallelism has such values: the gradient of a LayerNorm's
    output arrives whole (all-reduced, or from a replicated LM head), and
    the first op of the LayerNorm's backward reads it with the replicated
    weight (forward traversal: whole) while the next reads it with the
    sequence-split normalised input (split).

    Run right before `sharding-propagation`, this pass runs upstream's
    forward traversal as a probe on the function, records each value whose
    users it annotated differently (and that it did not annotate itself),
    undoes the probe (it only wraps values in `shard.shard` ops), and pins
    each such value with a `shard.shard` of its own: the sharding its users
    asked that splits it most (the first user's on a tie). Its producer
    then computes it that way or partitioning slices it out (local), and
    the users that asked for it whole without a reason of their own (the
    probe's forward order reached them first) take the split in the real
    run; a user that needs it whole gathers it. It repeats until a probe
    finds no conflict (`max-rounds`).

    Before (what the probe finds):
    ```mlir
    %g = tensor.expand_shape %dx [[0, 1], [2]] ... into tensor<2x16x32xf32>
    %a = shard.shard %g to %whole annotate_for_users : tensor<2x16x32xf32>
    %b = shard.shard %g to %seq_split annotate_for_users : tensor<2x16x32xf32>
    ```
    After (what the pass leaves for `sharding-propagation`):
    ```mlir
    %g = tensor.expand_shape %dx [[0, 1], [2]] ... into tensor<2x16x32xf32>
    %s = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
    %p = shard.shard %g to %s : tensor<2x16x32xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let options = [
    Option<"maxRounds", "max-rounds", "unsigned", /*default=*/"8",
           "Probes to run before giving up (each round pins what the last probe found)">,
  ];
  let statistics = [
    Statistic<"numPinned", "pinned-values",
              "Values given a sharding of their own because their users disagreed">,
  ];
}

def NovaVerifySharding : Pass<"nova-verify-sharding", "::mlir::func::FuncOp"> {
  let summary = "check that sharding propagation annotated everything shard-partition needs";
  let description = [{
    `shard-partition` asserts (aborts) on an op whose tensor operands are not
    defined by a `shard.shard ... annotate_for_users` or whose tensor results
    do not feed exactly one `shard.shard`; MLIR 22's `sharding-propagation`
    can leave such ops behind when the annotations it starts from conflict
    (a replicated input whose result is annotated split, say). This pass,
    run between the two, completes such ops: they run replicated (their
    operands annotated replicated for them, their results annotated
    replicated), so that partitioning gathers what they read and slices what
    they give (on a grid of rank 2 or more through the `nova.reshard` ops of
    `nova-materialize-reshards`). A Hugging Face causal mask built from
    shapes alone (no attention_mask) is such a computation under data
    parallelism. An op whose annotations conflict otherwise is an error at
    the op, naming the operand or result, instead of a crash.
  }];
  let statistics = [
    Statistic<"numReplicated", "replicated-ops", "Ops left unannotated by propagation that run replicated">,
  ];
}

def NovaMaterializeReshards : Pass<"nova-materialize-reshards", "::mlir::func::FuncOp"> {
  let summary = "resharding on grids of rank > 1, through nova.reshard";
  let description = [{
    MLIR 22's `shard-partition` reshards only on 1-D grids (it asserts
    "Only 1D grides are currently supported"), yet a DP x TP mesh needs
    resharding along one axis while the other stays: ZeRO's gradient shards
    over the data-parallel axis of a tensor-parallel parameter, the gathered
    update, sequence parallelism next to a batch split. Run between
    `nova-verify-sharding` and `shard-partition`, this pass puts a
    `nova.reshard` between each value and each user annotation that differs
    from it on such a grid:

    ```mlir
    %a = shard.shard %v to %from : tensor<8x16xf32>
    %b = shard.shard %a to %to annotate_for_users : tensor<8x16xf32>
    // becomes
    %a = shard.shard %v to %from : tensor<8x16xf32>
    %f = shard.shard %a to %from annotate_for_users : tensor<8x16xf32>
    %r = nova.reshard %f : tensor<8x16xf32>
    %t = shard.shard %r to %to : tensor<8x16xf32>
    %b = shard.shard %t to %to annotate_for_users : tensor<8x16xf32>
    ```

    so `shard-partition` sees no change of sharding it would have to do and
    partitions the `nova.reshard` into all-gathers and all-slices over single
    grid axes (`shard.all_gather` / `shard.all_slice`, which
    `convert-shard-to-nova` gives replica groups). On a 1-D grid nothing
    changes: upstream's resharding is used there.
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect"];
  let statistics = [
    Statistic<"numReshards", "reshards", "Changes of sharding on n-D grids materialized">,
  ];
}

def NovaCombineAllReduces : Pass<"nova-combine-all-reduces", "::mlir::func::FuncOp"> {
  let summary = "add the partial sums before one all-reduce instead of after two";
  let description = [{
    After `shard-partition`, tensor parallelism's backward adds gradients
    that each came out of their own all-reduce: the input gradient of a
    Megatron attention block is the sum of what flows back through q, k and
    v, each a row-parallel partial sum. `all_reduce(a) + all_reduce(b)` is
    `all_reduce(a + b)`, so this pass sums the partials and reduces once:

    ```mlir
    %ra = shard.all_reduce %a on @g grid_axes = [0] : tensor<128x32xf32> -> tensor<128x32xf32>
    %rb = shard.all_reduce %b on @g grid_axes = [0] : tensor<128x32xf32> -> tensor<128x32xf32>
    %s = linalg.generic {identity maps, yield in0 + in1} ins(%ra, %rb) ...
    ```
    becomes
    ```mlir
    %p = linalg.generic {the same} ins(%a, %b) ...
    %s = shard.all_reduce %p on @g grid_axes = [0] : tensor<128x32xf32> -> tensor<128x32xf32>
    ```

    Each all-reduce (sum, same grid and axes) may be reshaped by one
    `tensor.expand_shape` / `collapse_shape` on its way to the add, and each
    link must have that one use. Adds are visited in program order, so a
    chain `a + b + c` ends as one all-reduce.
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numCombined", "combined", "pairs of all-reduces combined into one">,
  ];
}

def NovaFormReduceScatter : Pass<"nova-form-reduce-scatter", "::mlir::func::FuncOp"> {
  let summary = "turn an all-reduce whose result each chip slices into a reduce-scatter";
  let description = [{
    After `shard-partition`, sequence parallelism (the output of a
    row-parallel layer kept as each chip's slice of the sequence) reads

    ```mlir
    %r = shard.all_reduce %p on @g grid_axes = [0] : tensor<32x64xf32> -> tensor<32x64xf32>
    %b = linalg.generic {elementwise, + a bias broadcast along dim 1} ins(%r, %bias ...)
    %e = tensor.expand_shape %b [[0, 1], [2]] : tensor<32x64xf32> into tensor<2x16x64xf32>
    %s = shard.all_slice %e on @g grid_axes = [0] slice_axis = 1 : ... -> tensor<2x4x64xf32>
    ```

    Every chip reduces the whole tensor, then keeps a quarter. This pass
    reduce-scatters the (expanded) partial sums instead, half the link
    traffic, and runs the elementwise op on the chip's slice:

    ```mlir
    %pe = tensor.expand_shape %p [[0, 1], [2]] : tensor<32x64xf32> into tensor<2x16x64xf32>
    %rs = shard.reduce_scatter %pe on @g grid_axes = [0] scatter_axis = 1 : ... -> tensor<2x4x64xf32>
    %s  = linalg.generic {the same body, at 2x4x64} ins(%rs, %bias ...)
    ```

    The expand and the elementwise op are optional; each value in the chain
    must have that one use. The elementwise op's other operands must not
    index the sliced dimension, nor a dimension the expand splits.
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numFormed", "reduce-scatters", "all_reduce + all_slice pairs fused">,
  ];
}

def NovaBucketAllReduces : Pass<"nova-bucket-all-reduces", "::mlir::func::FuncOp"> {
  let summary = "all-reduce small tensors together in buckets, as DDP does";
  let description = [{
    A data-parallel training step all-reduces every gradient on its own:
    dozens of small collectives, each paying the link latency of every ring
    step. This pass gathers consecutive `shard.all_reduce` ops of one grid,
    grid axes, reduction and element type into buckets of at most
    `bucket-bytes`: the members are flattened and concatenated, reduced by
    one all-reduce, and sliced back. A bucket is issued where it fills up
    (as soon as its last gradient exists, so it flies while the rest of the
    backward runs) or just before the first use of one of its members'
    results, whichever comes first; an all-reduce whose result is used before
    another joins it (a tensor-parallel activation) stays alone. 0-d tensors
    stay alone too.

    Before:
    ```mlir
    %a = shard.all_reduce %ga on @g grid_axes = [0] : tensor<8x4xf32> -> tensor<8x4xf32>
    %b = shard.all_reduce %gb on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    ... uses of %a and %b ...
    ```
    After:
    ```mlir
    %fa = tensor.collapse_shape %ga [[0, 1]] : tensor<8x4xf32> into tensor<32xf32>
    %c = tensor.concat dim(0) %fa, %gb : (tensor<32xf32>, tensor<4xf32>) -> tensor<36xf32>
    %r = shard.all_reduce %c on @g grid_axes = [0] : tensor<36xf32> -> tensor<36xf32>
    %sa = tensor.extract_slice %r[0] [32] [1] : tensor<36xf32> to tensor<32xf32>
    %a = tensor.expand_shape %sa [[0, 1]] output_shape [8, 4] : tensor<32xf32> into tensor<8x4xf32>
    %b = tensor.extract_slice %r[32] [4] [1] : tensor<36xf32> to tensor<4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "largest bucket, in bytes (DDP's default: 25 MiB); 0 turns bucketing off">,
  ];
  let statistics = [
    Statistic<"numBuckets", "buckets", "all-reduces issued for two or more tensors">,
    Statistic<"numBucketed", "bucketed", "all-reduces merged into a bucket">,
  ];
}

def NovaSplitAllReduces : Pass<"nova-split-all-reduces", "::mlir::func::FuncOp"> {
  let summary = "split an all-reduce larger than a bucket into row chunks, each "
                "reduced as soon as its tile of the producer exists";
  let description = [{
    The last gradient of a backward pass (a token embedding's: a one-hot
    matmul into a 50304 x 768 table at GPT-2 size, 154 MB) is all-reduced
    after all the compute it could hide behind. This pass splits a
    `shard.all_reduce` of more than `chunk-bytes` along the first dimension
    of its input into the fewest chunks of at most that size (whole 128-row
    tiles where there are enough rows): each chunk is computed by its own
    tile of the producer (`TilingInterface::generateResultTileValue`), with
    elementwise producers of its operands fused into it
    (`tensor::replaceExtractSliceWithTiledProducer`), and all-reduced on its
    own, so the transfer of one chunk flies while the next is computed. The
    chunks are put back together by a `tensor.concat`. An input with another
    use, a producer with several results or one that cannot be tiled along
    that dimension is left whole.

    Before (chunk-bytes = 1024):
    ```mlir
    %m = linalg.matmul ins(%a, %b : tensor<512x16xf32>, tensor<16x4xf32>)
                       outs(%z : tensor<512x4xf32>) -> tensor<512x4xf32>
    %r = shard.all_reduce %m on @g grid_axes = [0] : tensor<512x4xf32> -> tensor<512x4xf32>
    ```
    After:
    ```mlir
    %a0 = tensor.extract_slice %a[0, 0] [256, 16] [1, 1]
    %z0 = tensor.extract_slice %z[0, 0] [256, 4] [1, 1]
    %m0 = linalg.matmul ins(%a0, %b : ...) outs(%z0 : tensor<256x4xf32>) -> tensor<256x4xf32>
    %r0 = shard.all_reduce %m0 on @g grid_axes = [0] : tensor<256x4xf32> -> tensor<256x4xf32>
    ... the same for rows 256..511 ...
    %r = tensor.concat dim(0) %r0, %r1 : (tensor<256x4xf32>, tensor<256x4xf32>) -> tensor<512x4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect"];
  let options = [
    Option<"chunkBytes", "chunk-bytes", "int64_t", /*default=*/"26214400",
           "largest chunk, in bytes (the all-reduce bucket size); 0 turns splitting off">,
  ];
  let statistics = [
    Statistic<"numSplit", "split", "all-reduces split into chunks">,
    Statistic<"numFused", "fused", "producers fused into a chunk">,
  ];
}

#endif // NOVA_TRANSFORMS_PASSES_TD

def NovaCheckInput : Pass<"nova-check-input"> {
  let summary = "check what upstream verifiers assume, then verify";
  let description = [{
    Some upstream verifiers and passes assert (abort) on malformed input
    instead of diagnosing it: a reassociation index beyond the rank of a
    `tensor.collapse_shape`, a permutation entry beyond the rank of a
    `linalg.transpose`, a `shard.sharding` split over an axis its grid does
    not have, a `shard.grid` axis that is not a positive size. `nova-opt`
    parses without verifying and runs this pass first: it reports those
    inputs as errors at their location, then runs the verifier (whose
    diagnostics are unchanged). Nothing is rewritten.
  }];
  let dependentDialects = [];
}
