//===- Passes.td - Nova conversion passes ------------------*- tablegen -*-===//
#ifndef NOVA_CONVERSION_PASSES_TD
#define NOVA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLinalgToNova : Pass<"convert-linalg-to-nova", "::mlir::func::FuncOp"> {
  let summary = "lower tiled, bufferized linalg ops to nova tile ops with DMA";
  let description = [{
    Every linalg op (after `nova-tile` and `nova-bufferize`, so on memref
    tiles) becomes `nova` compute on on-chip buffers:

    * operands in HBM are copied into fresh SRAM tiles with
      `nova.dma_start` + `nova.wait`, and HBM outputs are computed in SRAM
      and written back the same way; operands already in SRAM (the fused
      temporaries of a tile loop) are used in place;
    * `linalg.matmul` / `batch_matmul` run on the matrix unit into an
      accumulator tile, split along K into chunks of the matrix unit's rows
      (an `scf.for` of `nova.matmul ... accumulate`), then drained into the
      destination (`copy` after a zero fill, `add` otherwise);
    * an elementwise `linalg.generic` becomes one `nova.elementwise` per
      body op, broadcasting operands through unit dimensions; a reduction
      generic becomes the elementwise part plus `nova.reduce` along each
      reduced dimension;
    * `linalg.fill`, `linalg.transpose`, `linalg.copy` and `memref.copy`
      become `nova.fill`, `nova.transpose` and DMA.

    An op that has no nova lowering is an error at its location (the
    PyTorch source line that torch-mlir recorded).

    Before:
    ```mlir
    linalg.matmul ins(%a, %b : memref<128x768xf32, #nova.memory_space<hbm>>, ...)
                  outs(%c : memref<128x128xf32, #nova.memory_space<sram>>)
    ```
    After:
    ```mlir
    %sa = memref.alloc() : memref<128x768xf32, #nova.memory_space<sram>>
    %t = nova.dma_start %a, %sa : ... -> memref<128x768xf32, #nova.memory_space<sram>>
    nova.wait %t
    ...
    nova.fill 0.0 outs(%acc : memref<128x128xf32, #nova.memory_space<acc>>)
    scf.for %k = %c0 to %c768 step %c128 {
      nova.matmul ins(%ak, %bk : ...) outs(%acc : ...) accumulate
    }
    nova.elementwise <copy> ins(%acc : ...) outs(%c : ...)
    ```
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numConverted", "converted-ops", "linalg and copy ops lowered to nova">,
    Statistic<"numDmas", "dmas", "DMA transfers created">,
    Statistic<"numMatmuls", "matmuls", "nova.matmul ops created">,
  ];
}

def ConvertNovaToISA : Pass<"convert-nova-to-isa", "::mlir::func::FuncOp"> {
  let summary = "lower nova ops on addressed buffers to nova_isa instructions "
                "with explicit engine synchronisation";
  let description = [{
    Runs after `nova-plan-memory`. Replaces the body of every function by
    nova_isa instructions, one op per instruction of docs/isa.md.

    Output contract (read by the binary emitter):
    * the `func.func` keeps its signature and argument attributes
      (`nova.address`, `nova.role`); the arguments have no uses left. The body
      is nova_isa only and ends with `nova_isa.halt on scalar` followed by the
      `func.return` terminator (no operands; the emitter ignores it).
    * Registers are SSA `index` values (ISA 1.2); the emitter allocates them.
      A register is reused for an identical li/salu only within 48 emitted
      instructions of its definition and never outside its loop, so live
      ranges stay short.
    * Every tile operand's address is `nova_isa.li` of the root buffer's
      `nova.address` (alloc, alloca, memref.global, argument) plus the view's
      byte offset, computed with `salu` from dynamic offsets; expand/collapse,
      subview, view and cast fold into the descriptor's strides
      (`getStridesAndOffset` of the view type), never into a copy. Rank-0
      memrefs become `[1]` tiles.
    * `scf.for` -> `nova_isa.loop` (immediates for constant bounds);
      arith index ops -> li/salu, folded when constant (`select` as
      `b + c * (a - b)`, unsigned div/rem as signed ones).
    * dma_start / memref.copy -> `dma_copy` (straight-line DMAs round-robin
      over the first `dma-queues` queues; a loop body's DMAs over its first
      `loop-dma-queues` queues by `loop-dma-policy`: `split` puts loads
      (into sram) round robin on the first half, stores (to hbm) on the
      rest, so a store waiting for compute does not hold up the next tile's
      loads; `round-robin` cycles every DMA over them. If the synchroniser
      runs out of semaphores, the function is lowered again with one queue
      fewer, down to queue 0 alone); matmul -> `matmul on matrix`;
      elementwise -> `vunary` / `vbinary` / `vscalar` / `vselect` / `vcopy`
      (copy); reduce / transpose / fill -> `vreduce` / `vtranspose` /
      `vfill` on vector; collectives -> the collective instructions.

    Engine placement (option `activation-engine`, on by default). On a target
    whose `#nova.target` describes an activation engine (the `activation`
    block, docs/isa.md 2.7), before synchronisation: every transcendental
    `vunary` / `vscalar` (exp, log, sqrt, rsqrt, recip, tanh, erf, sigmoid,
    pow, div, sin, cos, log1p, rem, floordiv) moves to `on activation`; every
    other `vunary`, `vscalar` and `vcopy` moves there when, in program order,
    the activation engine's load so far plus its cost there ends lower than
    the vector engine's load plus its cost on vector (costs from the target's
    vector and activation constants; instructions inside loops with
    immediate bounds weighted by their trip counts). Tensor-tensor ops,
    reductions, transposes, fills and asserts stay on vector. A target
    without an activation engine is left exactly as before.

    ```mlir
    // before (a target with an activation block)
    nova.elementwise exp ins(%x) outs(%y)
    // after
    nova_isa.vunary exp %a : #nova_isa.tile<...> -> %b : #nova_isa.tile<...> on activation
    ```

    Synchronisation. Engines: matrix, vector, collective, each DMA queue, the
    activation engine, and the sequencer (waiter only). Every instruction's accesses are byte ranges
    of its root buffers (the exact range for static views, the whole root
    buffer for views with dynamic offsets), so buffers that plan-memory
    placed at the same address are ordered too. In program order, an
    instruction on engine B that conflicts (RAW, WAR, WAW) with an earlier
    access of engine A that B has not yet observed (a vector clock per
    engine, merged transitively) waits on semaphore s(A->B), which the
    latest such A instruction signals. Semaphores: one per ordered engine
    pair, assigned on first use (at most (5 + dma-queues)^2); its j-th
    wait is released by its j-th signal, since signals are only attached to
    instructions later in A's queue than the pair's previous signal (else a
    `nop on A` just before the waiter signals). Same-engine instructions are
    ordered by their queue and get no semaphore.

    Loops: before a loop, a `nop on B wait [...]` per engine B of the body
    waits for the outer work that conflicts with B's accesses in the body.
    Loop-carried hazards: the body starts with the whole body's accesses as
    those of the previous iteration. An instruction directly in the body owns
    its own: a wait on it at the body's top level goes through a semaphore
    of the loop's nesting depth, c(A->B, depth), which that instruction
    signals once per iteration, so iteration i+1 waits only for the part of
    iteration i it conflicts with (edges of one semaphore keep one order per
    iteration). The rest (accesses in nested loops, waits that would break
    that order) is owned by a `nop on A signal [...]` at the end of the body.
    Each loop-carried wait gets a credit (`nop on A signal` before the loop)
    and a drain (`nop on B wait` after it). After the loop,
    its accesses are owned by a `nop on A signal` right after it, and the
    clocks are those from before the loop (it may run zero times); those
    nops are not ordered among themselves, so one engine's accesses in the
    body never hide another's. Every DMA queue is an engine here: its nops
    are `nop queue q on dma` (ISA version 4 for q > 0). Semaphores: ids
    below the `semaphores` option (64); carried ones only below 3/4 of it.
    If they run out, the function is lowered again with one loop DMA queue
    fewer (statistic `loop-queue-fallbacks`); with queue 0 alone it is an
    error.

    `nova.wait`: the tokens of local DMAs and collectives need no
    instruction, since every later access of their buffers is ordered as
    above; a wait for a peer DMA or a barrier (effects on other chips)
    becomes `sem_wait` on the sequencer. The function ends with every used
    engine signalling the sequencer, one `sem_wait`, and `halt`: all
    semaphores are 0 again.

    Before (addresses from nova-plan-memory):
    ```mlir
    func.func @f(%a: memref<64x128xf32, #hbm> {nova.address = 0 : i64}) {
      %s = memref.alloc() {nova.address = 0 : i64} : memref<64x128xf32, #sram>
      %t = nova.dma_start %a, %s : ... -> memref<64x128xf32, #sram>
      nova.wait %t
      nova.elementwise <exp> ins(%s : ...) outs(%s : ...)
      return
    }
    ```
    After:
    ```mlir
    %0 = nova_isa.li 0 on scalar
    nova_isa.dma_copy %0 : #nova_isa.tile<hbm, f32, [64, 128], [128, 1]>
        -> %0 : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> queue 0 on dma signal [0]
    nova_isa.vunary exp %0 : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
        -> %0 : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector wait [0]
    nova_isa.nop on vector signal [1]
    nova_isa.sem_wait [1] on scalar
    nova_isa.halt on scalar
    return
    ```
  }];
  let dependentDialects = ["::mlir::nova_isa::NovaISADialect"];
  let options = [
    Option<"dmaQueues", "dma-queues", "int64_t", /*default=*/"4",
           "DMA queues used round-robin by straight-line DMAs (1..5, at most "
           "the target's dma_engines)">,
    Option<"loopDmaQueues", "loop-dma-queues", "int64_t", /*default=*/"2",
           "DMA queues a loop body may use (1..dma-queues; 1 puts every loop "
           "DMA on queue 0); fewer are used if semaphores run out">,
    Option<"loopDmaPolicy", "loop-dma-policy", "std::string",
           /*default=*/"\"split\"",
           "how a loop body's DMAs share its queues: `split` (loads and "
           "stores on separate queues) or `round-robin`">,
    Option<"semaphores", "semaphores", "int64_t", /*default=*/"64",
           "semaphores the synchroniser may use (1..64, the ISA's 64; fewer "
           "to test the fallback to fewer loop queues)">,
    Option<"activationEngine", "activation-engine", "bool", /*default=*/"true",
           "place single-input elementwise work on the target's activation "
           "engine when it has one">,
  ];
  let statistics = [
    Statistic<"numInstructions", "instructions", "nova_isa instructions emitted">,
    Statistic<"numActivation", "activation", "instructions placed on the activation engine">,
    Statistic<"numSemaphores", "semaphores", "semaphores used">,
    Statistic<"numWaits", "waits", "semaphore waits inserted">,
    Statistic<"numLoopQueueFallbacks", "loop-queue-fallbacks",
              "times a function was lowered again with one loop DMA queue "
              "fewer because semaphores ran out">,
  ];
}

def ConvertShardToNova : Pass<"convert-shard-to-nova", "::mlir::ModuleOp"> {
  let summary = "lower the shard collectives of a partitioned program to nova "
                "collectives";
  let description = [{
    Runs after upstream `sharding-propagation` and `shard-partition`, on the
    per-chip SPMD linalg-on-tensors program, and before `nova-tile` /
    `nova-bufferize`. Every `shard.all_reduce`, `shard.all_gather`,
    `shard.reduce_scatter` and `shard.all_to_all` on statically shaped float
    tensors becomes the nova collective on HBM buffers, bracketed by
    `bufferization.to_buffer` / `bufferization.to_tensor` so that one-shot
    bufferization folds it into the surrounding buffers. Replica groups come
    from the `shard.grid` (devices numbered row-major) and the op's
    `grid_axes`: one group per combination of the other axes. `shard.grid`
    ops are erased. Any other shard op (a `shard.shard` left unpartitioned,
    `shard.process_multi_index`, ...) or an unsupported reduction is an
    error at its location. All-reduces whose results are only concatenated
    along dimension 0 (the chunks of `nova-split-all-reduces`) each write
    their rows of one buffer (a `memref.subview`), so the whole is not copied
    together afterwards.

    Before:
    ```mlir
    shard.grid @grid(shape = 2x2)
    %r = shard.all_reduce %p on @grid grid_axes = [1] : tensor<8x16xf32> -> tensor<8x16xf32>
    ```
    After:
    ```mlir
    %in = bufferization.to_buffer %p read_only : tensor<8x16xf32> to memref<8x16xf32, #nova.memory_space<hbm>>
    %out = memref.alloc() : memref<8x16xf32, #nova.memory_space<hbm>>
    %t = nova.all_reduce <sum> ins(%in : ...) outs(%out : ...) groups [[0, 1], [2, 3]]
    nova.wait %t
    %r = bufferization.to_tensor %out restrict writable : memref<8x16xf32, #nova.memory_space<hbm>> to tensor<8x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numCollectives", "collectives", "shard collectives lowered">,
    Statistic<"numChunked", "chunked", "concatenations of all-reduce chunks lowered "
              "into one buffer">,
  ];
}

#endif // NOVA_CONVERSION_PASSES_TD
