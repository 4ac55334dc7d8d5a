//===- Passes.td - the input phase ------------------------*- tablegen -*-===//
//
// What the compiler takes in: torch-mlir's linalg-on-tensors checked where
// upstream verifiers would abort, the target attached, constant-trip loops
// unrolled (identical layers rolled into one loop instead), f64 demoted,
// dead generic results erased and shape-only integer computations folded.
// The first half of nova-linalg-normalize; the normalize phase follows.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_INPUT_PASSES_TD
#define NOVA_INPUT_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def NovaAttachTarget : Pass<"nova-attach-target", "::mlir::ModuleOp"> {
  let summary = "attach a #nova.target hardware description to the module";
  let description = [{
    Reads a target description (`targets/<name>.json`, or a path to such a
    file) and attaches it to the module as the `nova.target` attribute, which
    the tiling, memory planning and op verifiers read. The simulator loads the
    same file, so the hardware is described exactly once.

    Before:
    ```mlir
    module {}
    ```
    After `--nova-attach-target="target=nova-t1 chips=4"`:
    ```mlir
    module attributes {nova.target = #nova.target<name = "nova-t1", clock_mhz = 1400,
        matrix_rows = 128, matrix_cols = 128, ..., chips = 4, topology = switch, ...>} {}
    ```
    A name is looked up in the `targets/` folder next to the tools (installed
    package) or in the source tree the tools were built from.
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect"];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"nova-t1\"",
           "target name (a file in targets/) or path to a target .json">,
    Option<"chips", "chips", "int64_t", /*default=*/"0",
           "number of chips in the system; 0 keeps the file's value">,
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

def NovaWidenSums : Pass<"nova-widen-sums", "::mlir::func::FuncOp"> {
  let summary = "accumulate bf16 and f16 sums in f32, as PyTorch does";
  let description = [{
    torch-mlir writes `aten.sum` of a bf16 (or f16) tensor as a reduction
    whose accumulator is bf16: every addition rounds. PyTorch accumulates
    half-precision sums in f32 and rounds the result once; under bf16
    autocast a bias gradient is such a sum over every token of the batch,
    and it was up to 1.8x further from float64 than eager's. A reduction
    that only adds its one input into a fill of a constant, in bf16 or f16,
    becomes the sum of the input extended to f32 into an f32 fill, and its
    result is rounded to the narrow type once:

    ```mlir
    %s = linalg.generic {reduction} ins(%x : tensor<2048x768xbf16>) outs(%zero : tensor<768xbf16>) { addf }
    ```
    becomes
    ```mlir
    %w = linalg.generic {elementwise extf} ins(%x : tensor<2048x768xbf16>) outs(... tensor<2048x768xf32>)
    %f = linalg.generic {reduction, the same maps} ins(%w ...) outs(%zero32 : tensor<768xf32>) { addf }
    %s = linalg.generic {elementwise truncf} ins(%f : tensor<768xf32>) outs(... tensor<768xbf16>)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numWidened", "widened", "half-precision sums accumulated in f32">,
  ];
}

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

#endif // NOVA_INPUT_PASSES_TD
