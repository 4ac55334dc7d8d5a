//===- Passes.td - the tile phase -------------------------*- tablegen -*-===//
//
// Normal-form linalg -> tiled, bufferized `nova` ops: attention fused into
// one op, donated arguments updated in place, linalg ops tiled to the
// matrix unit and SRAM, bufferized into HBM and SRAM, then lowered by
// convert-linalg-to-nova. The second half of nova-lower-to-tiles.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_TILE_PASSES_TD
#define NOVA_TILE_PASSES_TD

include "mlir/Pass/PassBase.td"

def NovaFuseAttention : Pass<"nova-fuse-attention", "::mlir::func::FuncOp"> {
  let summary = "fuse matmul-softmax-matmul attention into nova.attention";
  let description = [{
    Replaces `softmax(scale * Q @ Kt [masked]) @ V`, as torch-mlir and
    Nova's normal form spell SDPA's math path or a hand-written masked
    softmax, by one `nova.attention` (flash attention: no score matrix in
    HBM, causal key blocks skipped). The batch matmuls must start from zero,
    the scale and mask form one elementwise generic, the mask must be an
    exactly causal constant, and no intermediate may have another user but
    the probabilities P in a training step, when those users are exactly
    autograd's attention backward (dV = P^T dO, dP = dO V^T, the softmax's
    backward A - P rowsum(A) with A = dP * P, its scale and mask folded in
    or not, dQ and dKt from it; P read widened from bf16 under autocast):
    then the forward becomes `nova.attention_lse` (which also writes the
    log-sum-exp) and the backward `nova.attention_backward`, which
    recomputes P from it. What each generic computes is checked by folding
    its body on probe values. The mask may be indexed by leading dimensions
    too (Hugging Face's traced [B, 1, T, T] mask: every slice must be
    causal). A safe softmax's guard (`rowmax(X) == -inf`, which torch's
    `_safe_softmax` in SDPA's math path uses to zero fully hidden rows
    before and after the softmax and in its backward) is dropped first when
    X is unmasked or causally masked, since then no row is fully hidden.
    Under bf16 autocast, the roundings of the scores and of dP to bf16 and
    the widening of the masked scores for an f32 softmax may be generics of
    their own; the kernel keeps S and dP in f32.

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

def NovaFormScatter : Pass<"nova-form-scatter", "::mlir::func::FuncOp"> {
  let summary = "turn one-hot matmuls that add rows into nova.scatter_add";
  let description = [{
    The frontend writes an accumulating `index_put` of whole rows (the
    embedding's backward, `index_add`) as `one_hot(ids) @ values + base`,
    a [Q, M] x [M, D] matmul: 2 Q M D FLOPs for M row additions. This pass
    finds a `linalg.matmul` whose left operand is the one-hot generic
    `uitofp(ids[m] == q)` (q an iota of Q, or `linalg.index 0`) and replaces
    it by `nova.scatter_add` of the values at the flat positions
    `ids[m] * D + j` into the matmul's destination, which
    `convert-linalg-to-nova` lowers to accumulating indexed DMAs. Values the
    matmul reads transposed (`[D, M]`, an `index_add` along dim 1) are
    transposed back into rows first.

    It fires only when the ids are read out of that same iota (the
    frontend's bounds-checked gather), which proves them inside [0, Q): a
    one-hot row that matches nothing (a write left out on purpose) would
    otherwise reach the DMA's bounds check. Every other matmul is left as it
    is.

    Before:
    ```mlir
    %iota = linalg.generic ... outs(%e : tensor<10xi64>) { linalg.index 0 }
    %ids = linalg.generic ... ins(%raw) { tensor.extract %iota[...] } -> tensor<6xi64>
    %a = linalg.generic ... ins(%ids_1x6, %iota_10x1) { uitofp(cmpi eq) } -> tensor<10x6xf32>
    %c = linalg.matmul ins(%a, %v : tensor<10x6xf32>, tensor<6x16xf32>) outs(%base : tensor<10x16xf32>)
    ```
    After:
    ```mlir
    %pos = linalg.generic ... ins(%ids_1x6) { ids * 16 + linalg.index 1 } -> tensor<6x16xi64>
    %c = nova.scatter_add ins(%v, %pos : tensor<6x16xf32>, tensor<6x16xi64>) outs(%base : tensor<10x16xf32>) -> tensor<10x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numFormed", "formed-scatters", "One-hot matmuls turned into nova.scatter_add">,
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

def NovaTile : Pass<"nova-tile", "::mlir::func::FuncOp"> {
  let summary = "tile linalg ops to the target's matrix unit and SRAM";
  let description = [{
    Tiles every linalg op with upstream TilingInterface tiling (`scf.for`
    loops) and tile sizes derived from the module's `#nova.target`:

    * contractions (matmul, batch_matmul, any op with contraction dims): batch
      dims by 1, the innermost N by the matrix unit's columns, M by up to
      `max-rows` rows limited by the accumulator; K stays whole while the
      operand strips fit the SRAM budget, else it is tiled by multiples of the
      matrix unit's rows;
    * an elementwise producer whose result the function returns and an
      elementwise consumer reads (AdamW's new moments, read by the
      parameter's update) joins the consumer's loop, which yields the
      producer's tiles as well: one pass over the tiles (when its operands
      fit the SRAM the consumer's tile leaves);
    * an elementwise consumer of a contraction is tiled together with it:
      the contraction and its zero fill are fused into the consumer's loop
      (tile-and-fuse), so the epilogue (bias, GELU, residual) reads the
      contraction's tile from on-chip memory;
    * other ops: the two innermost parallel dims by at most `max-rows` x
      `max-cols`, outer parallel dims by 1, or, when the two innermost are
      whole and small (attention's heads, 12 x 64), by as many as keep the
      tile within `max-rows` x `max-cols` elements and SRAM (one DMA per
      sequence for the heads' merge, not one per token); reduction dims stay whole unless even
      a one-element output tile does not fit, then they are tiled too
      (outermost first) and each chunk is combined into the output the loop
      carries (a gradient norm's sum over an embedding table). An innermost
      dim whose best divisor is under a quarter of `max-cols` takes a wider
      divisor (up to 8 x `max-cols`) and fewer rows; rows likewise (an
      embedding table of 50257 = 29 x 1733 words: 1733 rows, fewer columns),
      back to the narrow plan if the wide one does not fit SRAM.

    Every tile's operands (and the body temporaries of a generic), double
    buffered, must fit `sram_bytes`; tiles shrink until they do, and an op
    whose smallest tile cannot fit is an error naming the op and the numbers.

    Before:
    ```mlir
    %0 = linalg.matmul ins(%a, %b : tensor<256x768xf32>, tensor<768x3072xf32>)
                       outs(%fill : tensor<256x3072xf32>) -> tensor<256x3072xf32>
    %1 = linalg.generic {...} ins(%0, %bias ...) outs(...) { ... math.erf ... }
    ```
    After:
    ```mlir
    %r = scf.for %i = %c0 to %c256 step %c256 iter_args(%o = %init) {
      %r2 = scf.for %j = %c0 to %c3072 step %c128 iter_args(%o2 = %o) {
        %f = linalg.fill ... -> tensor<256x128xf32>
        %m = linalg.matmul ins(... tensor<256x768xf32>, tensor<768x128xf32>) outs(%f ...)
        %e = linalg.generic {...} ins(%m, ...) { ... math.erf ... }
        %ins = tensor.insert_slice %e into %o2[%i, %j] [256, 128] [1, 1]
        scf.yield %ins
      }
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::affine::AffineDialect"];
  let options = [
    Option<"maxRows", "max-rows", "int64_t", /*default=*/"512",
           "largest number of rows (M, or the second-innermost parallel dim) in a tile">,
    Option<"maxCols", "max-cols", "int64_t", /*default=*/"512",
           "largest innermost parallel tile size of a non-contraction op">,
  ];
  let statistics = [
    Statistic<"numTiled", "tiled-ops", "Number of linalg ops tiled">,
    Statistic<"numEmpty", "empty-ops", "Number of linalg ops without iterations, replaced by their inits">,
    Statistic<"numSplitReductions", "split-reductions", "Reductions too large for sram whose reduction loops were tiled">,
    Statistic<"numFusedResults", "fused-results", "Elementwise producers that are also function results, fused into their consumer's loop (which yields their tiles)">,
    Statistic<"numFused", "fused-producers", "Number of producers fused into a consumer's tile loop">,
    Statistic<"peakTileBytes", "peak-tile-bytes", "Largest double-buffered SRAM footprint of one tile">,
  ];
}

def NovaBufferize : Pass<"nova-bufferize", "::mlir::ModuleOp"> {
  let summary = "one-shot bufferize with HBM and SRAM memory spaces";
  let description = [{
    Runs upstream One-Shot Bufferize over the whole module (function
    boundaries included, identity layouts) after choosing a memory level for
    every buffer: tensors created inside a tile loop (after folding
    `extract_slice(tensor.empty)` into a tile-sized `tensor.empty`) become
    `bufferization.alloc_tensor` in `#nova.memory_space<sram>`; function
    arguments, results and everything else default to
    `#nova.memory_space<hbm>`. A tensor inserted at the origin of a wider one
    outside any loop (an operand zero-padded by nova-pad-matmul) whose
    computation starts from a function-level `tensor.empty` starts from that
    slice of the wider tensor instead, and its later readers read the slice,
    so that it is computed in place rather than copied over.

    Before:
    ```mlir
    func.func @f(%a: tensor<128x768xf32>) -> tensor<128x768xf32> {
      scf.for ... {
        %e = tensor.empty() : tensor<128x128xf32>
        %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
    ```
    After:
    ```mlir
    func.func @f(%a: memref<128x768xf32, #nova.memory_space<hbm>>) -> memref<128x768xf32, #nova.memory_space<hbm>> {
      scf.for ... {
        %e = memref.alloc() : memref<128x128xf32, #nova.memory_space<sram>>
        linalg.fill ins(%c0 : f32) outs(%e : memref<128x128xf32, #nova.memory_space<sram>>)
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::nova::NovaDialect"];
  let statistics = [
    Statistic<"numSramTensors", "sram-tensors", "Tensors placed in sram">,
    Statistic<"numAllocs", "allocs", "Buffers allocated by bufferization">,
    Statistic<"numCopies", "copies", "Buffer copies inserted by bufferization">,
  ];
}

def NovaForwardCopies : Pass<"nova-forward-copies", "::mlir::func::FuncOp"> {
  let summary = "drop on-chip copies between a tile's producer and its consumers";
  let description = [{
    convert-linalg-to-nova stages values through fresh SRAM tiles: a matmul
    tile's accumulator is drained by a vector copy into SRAM before its
    epilogue reads it, and a generic whose yielded value is not written by
    its last body op (a bf16 rounding that lowers to nothing) copies that
    value into its staged output. Each such copy is one full vector-unit pass
    over the tile. This pass removes two shapes of them, within one block:

    * forward: `copy %src -> %tmp`, `%tmp` a fresh tile that nothing else
      writes and only vector ops read (for a copy widening bf16 or f16 to
      f32, only reductions, which read a narrow float as f32: a bias
      gradient sums the bf16 dY itself): the readers read `%src` (SRAM or the
      accumulator, which the vector unit reads) when nothing writes `%src`
      before the last of them (a `nova.wait` writes nothing: the DMAs it
      completes declare their effects on their `nova.dma_start`);
    * backward: `P(...) -> %tmp; copy %tmp -> %dst`, `%tmp` a fresh tile only
      `P` writes and only the copy reads: `P` writes `%dst` directly when
      nothing between them touches `%dst` and `P` reads no other view of it.

    A copy that rounds an f32 `%tmp` to bf16 or f16 goes backward too when
    `P` is an elementwise op on float values (not a conversion from
    integers): `P` writes the narrow `%dst` itself, its f32 result rounded
    once to the output's type (float types mix, docs/isa.md 2.4): the
    linears' epilogues (`add(acc, bias)` then the rounding) and the
    cross-entropy's bf16 gradient of the logits. Other copies that change
    the element type stay, except around one op:

    * narrow: `copy %n -> %w` (bf16 or f16 to f32) for each input of one
      elementwise op `P(%w, ...) -> %r` (f32), then `copy %r -> %o` (f32 to
      `%n`'s type), `%w` and `%r` fresh tiles: `P` reads the `%n` and writes
      `%o` when nothing writes an `%n` between its widening and `P` and
      nothing touches `%o` between `P` and the copy. The vector unit computes
      every float op in f32 and rounds once to its output's type
      (docs/isa.md 2.4), so `P` on the narrow tiles stores the same bits; a
      widening that other ops read stays. A generic of one bf16 op (`0.5 *
      x`, `t + 1`, `a * u` of HF's tanh GELU) is one pass instead of three.

    A third shape moves no data on the vector unit but on the DMA engines: a
    loop body that loads a tile of HBM which the same body already loaded,
    or stored from a tile (an optimizer's new moment, stored and read back
    by the parameter's update when nova-tile joins the two into one loop):

    * reload: `dma_start %view -> %t2`, `%t2` a fresh SRAM tile that only
      the load writes and that only vector ops (and stores) read, after an
      earlier `dma_start %view -> %t1` (waited for before it) or
      `dma_start %t1 -> %view` of the same view value and type in the block:
      the readers read `%t1`, and the load and its wait go, when nothing
      between writes the view's buffer and nothing writes `%t1` from the
      earlier DMA to the last reader.

    Before:
    ```mlir
    nova.matmul ins(%a, %b : ...) outs(%acc : memref<128x128xf32, #nova.memory_space<acc>>)
    %t = memref.alloc() : memref<128x128xf32, #nova.memory_space<sram>>
    nova.elementwise <copy> ins(%acc : ...) outs(%t : ...)
    %u = memref.alloc() : memref<128x128xf32, #nova.memory_space<sram>>
    nova.elementwise <add> ins(%t, %bias : ...) outs(%u : ...)
    nova.elementwise <copy> ins(%u : ...) outs(%out : ...)
    ```
    After:
    ```mlir
    nova.matmul ins(%a, %b : ...) outs(%acc : memref<128x128xf32, #nova.memory_space<acc>>)
    nova.elementwise <add> ins(%acc, %bias : ...) outs(%out : ...)
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::nova::NovaDialect"];
  let statistics = [
    Statistic<"numForwarded", "forwarded-copies", "Copies whose readers now read the copied tile">,
    Statistic<"numRetargeted", "retargeted-copies", "Copies whose producer now writes the copy's destination">,
    Statistic<"numReloads", "forwarded-reloads", "HBM reloads of a tile already on chip, dropped">,
    Statistic<"numNarrowed", "narrowed-ops", "Ops computed on narrow tiles instead of between two converting copies">,
  ];
}

def NovaFuseVectorPairs : Pass<"nova-fuse-vector-pairs", "::mlir::func::FuncOp"> {
  let summary = "two binary elementwise ops through a fresh tile as one vector pass";
  let description = [{
    `nova.elementwise <k0> ins(%x, %a) outs(%t)` followed, in the same block,
    by `nova.elementwise <k1> ins(%t, %b) outs(%y)`, with `%t` a fresh tile
    that only these two touch, become one
    `nova.elementwise_pair <k0> then <k1> ins(%x, %a, %b) outs(%y)` at the
    second op (docs/isa.md, VFUSED): the vector unit makes one pass over the
    tile instead of two, and `%t` is gone. Either of `%a`, `%b` may be an
    immediate (`scalar(...)`). An AdamW update (`m + h*(g - m)`, `v*b2 +
    h*(g*g)`, `p*decay - step*(m/d)`) and a LayerNorm's `(x - mean) * rstd`
    are such chains.

    Fused when:
    * both kinds are `add sub mul div max min`, `%x`, `%a`, `%b` and `%t`
      have one float element type (the intermediate is rounded to it, as
      `%t` was) and `%y` any float type (the second stage's f32 result is
      rounded to it, as the second op rounded it);
    * `%x` has `%t`'s shape and `%t` has `%y`'s (`%x` and `%t` may be the
      second operand of a commutative kind: the operands swap);
    * at most two of `%x`, `%a`, `%b` are read at the full rate;
    * nothing between the two ops writes `%x` or `%a`, and `%y` is either
      `%x` (or `%a`) itself or a buffer none of them is a view of.

    Chains are fused pairwise in program order: `((x k0 a) k1 b) k2 c` gives a
    pair and a single op.

    ```mlir
    %t = memref.alloc() : memref<64x128xf32, #nova.memory_space<sram>>
    nova.elementwise <sub> ins(%g, %m : ...) outs(%t : ...)
    nova.elementwise <mul> ins(%t, %h : ..., memref<1x1xf32, ...>) outs(%y : ...)
    // becomes
    nova.elementwise_pair <sub> then <mul> ins(%g, %m, %h : ...) outs(%y : ...)
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::nova::NovaDialect"];
  let statistics = [
    Statistic<"numPairs", "fused-pairs", "Pairs of elementwise ops fused into one vector pass">,
  ];
}

#endif // NOVA_TILE_PASSES_TD
