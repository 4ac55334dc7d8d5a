//===- Passes.td - the partition phase --------------------*- tablegen -*-===//
//
// A shard-annotated linalg program -> one SPMD program per chip with nova
// collectives (nova-partition): the program prepared for sharding
// propagation, shard-partition bracketed by what it leaves undone
// (resharding on n-D grids, linalg.index of split loops), and the
// collectives it inserts combined, bucketed and split.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_PARTITION_PASSES_TD
#define NOVA_PARTITION_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    undoes it after partitioning. Operands narrower than the result (bf16
    accumulated in f32: attention under autocast) are extended in the
    generic's body (`arith.extf`), as the named op's semantics extend them;
    without that the heads of q, k and v are all-gathered under bf16 and
    every tensor-parallel chip runs all of attention.

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

def NovaPrepareSharding
    : Pass<"nova-prepare-sharding", "::mlir::func::FuncOp"> {
  let summary = "give every op its own destination and no tensor constants before sharding";
  let description = [{
    What MLIR 22's `sharding-propagation` and `shard-partition` do not
    handle, rewritten away before they run:

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
    - A returned value with other users (a gradient kept as a result and
      read by the optimizer): its result annotation sits before the return,
      and propagation would annotate the value a second time. The annotation
      moves next to the definition and the other users read it.
    - A join that a reshape makes a stack (`expand_shape` splitting a
      `tensor.concat`'s dimension into [inputs, size]: torch's `stack` after
      canonicalization, timm's dq/dk/dv): the join is along a dimension a
      data-parallel batch splits, and propagation asserts. It becomes a
      `concat` of the inputs expanded by a unit dimension, joined along it.

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

    First, an elementwise `linalg.generic` (all loops parallel, identity
    maps) whose annotated inputs ask different shardings gets no sharding
    from propagation at all: a pipeline stage's backward under sequence
    parallelism recomputes `x + attn_out` from a saved bf16 `attn_out`
    whole along the sequence and the residual `x` split along it. When the
    most split of the inputs' shardings extends the others (their split
    dimensions split alike in it), the others are annotated to it for that
    op (`shard.shard ... annotate_for_users` again): partitioning slices
    them, a local copy.

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
    Statistic<"numAligned", "aligned-inputs",
              "Elementwise inputs re-annotated to the most split of their op's inputs">,
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

def NovaSequenceParallelEmbedding
    : Pass<"nova-sequence-parallel-embedding", "::mlir::func::FuncOp"> {
  let summary = "give a vocabulary-parallel embedding Megatron's sequence-parallel form";
  let description = [{
    Megatron's sequence parallelism with a vocabulary-parallel embedding:
    the token ids split along the sequence (`input0` `Shard(1)` over `tp`)
    and the table's rows over the same axis. Propagation cannot keep both
    splits of `one_hot(ids) @ W` (its rows by the sequence, its contraction
    by the vocabulary) and gathers the whole `[tokens, vocabulary]` one-hot,
    after which the blocks run replicated. Run before propagation, this pass
    gives the product Megatron's form: the one-hot reads the ids gathered
    over the table's axes (`shard.shard` to the ids' sharding without them:
    an all-gather of a few kB), so the product is a partial sum over the
    vocabulary, and its output `[B, T, D]` (after casts and the expand back
    from `[B * T, D]`) is annotated split as the ids are. Partitioning makes
    that an all-reduce and a local slice, which `nova-form-reduce-scatter`
    makes a reduce-scatter; the residual stream after it stays split along
    the sequence (LayerNorms, residual adds on each chip's slice).

    Before:
    ```mlir
    %ids = shard.shard %arg to %seq annotate_for_users : tensor<4x16xi64>   // [[0], [1]]
    %oh = linalg.generic ins(%ids, %iota) { cmpi eq } -> tensor<4x16x64xi1>
    ... casts, collapse -> tensor<64x64xf32>
    %e = linalg.matmul ins(%c, %w) ...               // %w: rows split [[1], []]
    %x = tensor.expand_shape %e ... into tensor<4x16x8xf32>
    ```
    After: the compare reads `shard.shard (shard.shard %ids to %seq) to
    [[0], []] annotate_for_users`, and `%x` is annotated `[[0], [1], []]`
    (as a result and for its users).
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let statistics = [
    Statistic<"numEmbeddings", "embeddings", "one-hot embeddings given the sequence-parallel form">,
  ];
}

def NovaLocalizeOneHotLookups
    : Pass<"nova-localize-one-hot-lookups", "::mlir::func::FuncOp"> {
  let summary = "make a one-hot product over a split vocabulary each chip's masked lookup";
  let description = [{
    A vocabulary-parallel embedding (`one_hot(ids) @ weight` with the
    table split by rows over a mesh axis, what
    `nova.parallel.rewrites.OneHotEmbedding` exports) comes out of
    `shard-partition` building the whole one-hot `[M, V]` on every chip and
    multiplying: the forward slices its own columns and multiplies them by
    the chip's rows, the backward multiplies the whole transposed one-hot by
    the output's gradient, `[V, M] x [M, D]`, all-reduces that `[V, D]`
    gradient over the data-parallel axes and keeps the chip's rows.

    Run after `shard-partition`, this pass gives each chip Megatron's masked
    lookup, with `off` the chip's first row (its coordinate on the slice's
    axes, from `nova.chip_id`, times the `Q` rows it holds):

    * forward: `matmul(all_slice(one_hot(ids)), W)` becomes a gather,
      `out[m, j] = (0 <= ids[m] - off < Q) ? W[ids[m] - off, j] : 0`,
      whose sum over the chips is the all-reduce that follows;
    * backward: `all_slice(casts(all_reduce(matmul(transpose(one_hot(ids)),
      dY))))` sliced by rows (the all-reduce over the data-parallel axes
      there only with a batch axis) becomes the same chain on the chip's `[Q, D]`
      rows: `one_hot(clamp(ids - off)) @ mask(dY)`, the ids read out of an
      iota of `Q` (the bounds-checked form) and the gradient rows of tokens
      outside the chip's range zeroed, which `nova-form-scatter` turns into
      a DMA scatter-add. The all-reduce then moves a quarter of the bytes.

    Before (forward):
    ```mlir
    %oh = linalg.generic ins(%ids, %iota : tensor<32xi64>, tensor<64xi64>) { uitofp(cmpi eq) } -> tensor<32x64xf32>
    %s = shard.all_slice %oh on @g grid_axes = [0] slice_axis = 1 : tensor<32x64xf32> -> tensor<32x16xf32>
    %y = linalg.matmul ins(%s, %w : tensor<32x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<32x8xf32>)
    ```
    After:
    ```mlir
    %off = arith.muli (chip's coordinate on axis 0), %c16
    %y = linalg.generic ins(%ids : tensor<32xi64>) outs(%e : tensor<32x8xf32>) {
      l = ids - off; ok = 0 <= l < 16
      x = tensor.extract %w[select(ok, l, 0), linalg.index 1]
      linalg.yield select(ok, x, 0.0)
    }
    ```
    A slice of a value whose sliced dimension depends only on iotas (the
    parallel cross-entropy's one-hot of the labels over the vocabulary, and
    its product with a row factor in the backward), through elementwise
    generics, is built on the chip's slice alone: each generic again on its
    inputs' slices, `linalg.index` of the sliced loop counting from the
    chip's offset. Every chip built the whole `[M, V]` before and kept a
    quarter.

    Only products whose every input is recognised change: a one-hot is a
    chain of integer/float casts of `cmpi eq(ids, iota)` (the iota as an
    input or `linalg.index`) over the vocabulary's dimension, through a
    collapse of the leading dimensions.
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect", "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::shard::ShardDialect"];
  let statistics = [
    Statistic<"numLookups", "lookups", "one-hot forward products made masked gathers">,
    Statistic<"numGradients", "gradients", "one-hot backward products made each chip's rows">,
    Statistic<"numBuiltSlices", "built-slices",
              "slices of one-hots (and their elementwise products) built on the chip's slice">,
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

def NovaWidenAllReduces : Pass<"nova-widen-all-reduces", "::mlir::func::FuncOp"> {
  let summary = "all-reduce a narrow sum that is then widened in the wide type";
  let description = [{
    Under bf16 autocast a bias gradient is each chip's bf16 partial sum,
    all-reduced, then extended to f32 for the optimizer: the all-reduce adds
    the chips' partials in bf16, one more rounding than PyTorch's
    DistributedDataParallel, which reduces the f32 `.grad` every rank holds.
    A sum all-reduce of a reduction generic's result (a sum over the chip's
    tokens; not a matmul's partial product, tensor parallelism's activations,
    which PyTorch all-reduces in their own type) whose only user is an
    elementwise `arith.extf` is widened first and reduced in the wide type:

    ```mlir
    %r = shard.all_reduce %p on @g grid_axes = [0] : tensor<768xbf16> -> tensor<768xbf16>
    %w = linalg.generic {identity maps, extf} ins(%r : tensor<768xbf16>) outs(%e : tensor<768xf32>)
    ```
    becomes
    ```mlir
    %x = linalg.generic {identity maps, extf} ins(%p : tensor<768xbf16>) outs(%e : tensor<768xf32>)
    %w = shard.all_reduce %x on @g grid_axes = [0] : tensor<768xf32> -> tensor<768xf32>
    ```
    (twice the bytes of a bias on the links; it then buckets with the f32
    weight gradients).
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numWidened", "widened", "all-reduces moved after their widening">,
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

    Longer chains and several slices (sequence parallelism's row-parallel
    output under autocast: a bias add, then the bf16 rounding; its LayerNorm
    backward: a rounding, the expand, a widening, then products and row sums
    on the whole sequence before the slices of several values) go first
    through a hoisting step: an expand after a chain of elementwise ops from
    an all-reduce moves up to the partial sums, and each group of alike
    slices that are all of a generic's users moves above that generic (its
    operands sliced where they index the sliced loop as a plain dimension,
    taken whole where they do not index it; no `linalg.index` in the body),
    until the slices reach the all-reduce, which becomes one reduce-scatter.
    A sum along the sliced dimension beside the slices (the replicated
    bias's gradient) becomes the sum of the chip's slice, all-reduced over
    the slice's grid axes, as Megatron computes it.
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
    another joins it (a tensor-parallel activation) stays alone. A 0-d
    tensor (ZeRO's gradient-norm partial sums, one per gradient) joins as
    a one-element member. Unary elementwise ops of the results (autocast rounds an
    f32-accumulated weight gradient to bf16 and extends it back to f32 right
    after it is reduced) are first moved down to just before their first
    user, so that they do not issue every bucket with a single member.

    `shard.reduce_scatter` ops along dimension 0 (ZeRO's gradients, once
    `nova-form-reduce-scatter` has made them) are bucketed the same way,
    chip-major: each member, flattened to `[N]`, is viewed as
    `[chips, N / chips]`, the views are concatenated along dimension 1 and
    flattened, and one reduce-scatter gives each chip its chunk of every
    member side by side. Reduce-scatters along another dimension (chunks
    that are not contiguous) stay alone.

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

def NovaBucketAllGathers : Pass<"nova-bucket-all-gathers", "::mlir::func::FuncOp"> {
  let summary = "all-gather small tensors together in buckets (ZeRO's parameter gathers)";
  let description = [{
    Under ZeRO each chip updates its shard of every parameter and the
    updated shards are all-gathered: one collective per parameter (hundreds
    in a GPT step), each paying the link latency of every ring step. This
    pass gathers consecutive `shard.all_gather` ops of one grid, grid axes,
    group size and element type into buckets of at most `bucket-bytes` (of
    gathered data): the members' local shards are flattened and
    concatenated, gathered by one all-gather along dim 0, and cut back out:
    chip k's block of the result holds its shards in member order, so
    member i's columns of the result seen as [chips, S] are the chips'
    shards of it, which an expand_shape, a transpose (for a gather along a
    dim a > 0: the chip dimension moved before dim a) and a collapse_shape
    turn into exactly the member's own result (copies only). A bucket is
    issued where it fills up, just before the first use of one of its
    members' results, or at the end of its block, whichever comes first; an
    all-gather whose result is used before another joins it stays alone.
    Pure elementwise ops of gathered values (ZeRO subtracts each gathered
    update from its decayed parameter right away) are first moved down to
    just before their first user, so that they do not issue every bucket
    with a single member.

    Before:
    ```mlir
    %a = shard.all_gather %sa on @g grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
    %b = shard.all_gather %sb on @g grid_axes = [0] gather_axis = 1 : tensor<3x2xf32> -> tensor<3x4xf32>
    ```
    After:
    ```mlir
    %fa = tensor.collapse_shape %sa [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
    %fb = tensor.collapse_shape %sb [[0, 1]] : tensor<3x2xf32> into tensor<6xf32>
    %c = tensor.concat dim(0) %fa, %fb : (tensor<8xf32>, tensor<6xf32>) -> tensor<14xf32>
    %g = shard.all_gather %c on @g grid_axes = [0] gather_axis = 0 : tensor<14xf32> -> tensor<28xf32>
    %r = tensor.expand_shape %g [[0, 1]] output_shape [2, 14] : tensor<28xf32> into tensor<2x14xf32>
    %pa = tensor.extract_slice %r[0, 0] [2, 8] [1, 1] : tensor<2x14xf32> to tensor<2x8xf32>
    %ea = tensor.expand_shape %pa [[0], [1, 2]] output_shape [2, 2, 4] : tensor<2x8xf32> into tensor<2x2x4xf32>
    %a = tensor.collapse_shape %ea [[0, 1], [2]] : tensor<2x2x4xf32> into tensor<4x4xf32>
    %pb = tensor.extract_slice %r[0, 8] [2, 6] [1, 1] : tensor<2x14xf32> to tensor<2x6xf32>
    %eb = tensor.expand_shape %pb [[0], [1, 2]] output_shape [2, 3, 2] : tensor<2x6xf32> into tensor<2x3x2xf32>
    %tb = linalg.transpose ins(%eb : tensor<2x3x2xf32>) outs(%e : tensor<3x2x2xf32>) permutation = [1, 0, 2]
    %b = tensor.collapse_shape %tb [[0], [1, 2]] : tensor<3x2x2xf32> into tensor<3x4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect"];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "largest bucket, in bytes of gathered data (25 MiB); 0 turns bucketing off">,
  ];
  let statistics = [
    Statistic<"numBuckets", "buckets", "all-gathers issued for two or more tensors">,
    Statistic<"numBucketed", "bucketed", "all-gathers merged into a bucket">,
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

#endif // NOVA_PARTITION_PASSES_TD
