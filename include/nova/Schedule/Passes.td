//===- Passes.td - the schedule phase ---------------------*- tablegen -*-===//
//
// Tiled `nova` ops -> an ordered, memory-planned program (nova-tiles-to-isa,
// then convert-nova-to-isa): collectives checked across chips and
// overlapped with compute, invariant loads hoisted, the next tile's DMA
// overlapped with the current one's compute, every buffer given an address;
// and pipeline stages merged into one program per chip.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_SCHEDULE_PASSES_TD
#define NOVA_SCHEDULE_PASSES_TD

include "mlir/Pass/PassBase.td"

def NovaVerifyCollectives : Pass<"nova-verify-collectives", "::mlir::ModuleOp"> {
  let summary = "check that per-chip programs issue matching collectives";
  let description = [{
    A module whose functions run on different chips (`nova.chips`, one
    program per pipeline stage) deadlocks or computes garbage when the chips
    of a replica group do not issue the same collectives in the same order.
    Where that is known statically (the collectives of every such function
    are straight-line code), this pass checks, for every pair of chips, that
    the collectives each issues with the other agree in op, reduction kind,
    buffer types, dimension and replica groups, in order; and that every
    `nova.send` has a `nova.recv` on its peer naming the sender, the same
    channel and the same buffer type (and the other way round). A mismatch
    is an error at the first op that differs, naming both chips, with a note
    at the other chip's op. Collectives inside loops or conditionals are
    left to the simulator's run-time check. A module without `nova.chips`
    (one SPMD program for every chip) has nothing to check.
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect"];
}

def NovaOverlapCollectives
    : Pass<"nova-overlap-collectives", "::mlir::func::FuncOp"> {
  let summary = "start independent compute before waiting for a collective";
  let description = [{
    Instructions run in order on each engine queue, so compute placed after
    a collective's `nova.wait` starts only after the collective ends, even
    when it does not need its result. This pass moves each op that follows
    the wait in front of it when the op neither reads nor writes the
    collective's buffers (roots of view chains; all `memref.get_global` of
    one symbol are one buffer), does not conflict with any op it jumps over
    that stays, and uses no value defined by one; so the collective's link
    transfers overlap the independent compute. It runs on buffers, after
    bufferization, where reuse of a buffer is visible (a reordering of
    tensor ops could not know that bufferization will write a later result
    into the buffer the collective is still reading). Scanning stops at
    another wait or an op with undeclared effects.

    Before:
    ```mlir
    %t = nova.all_reduce <sum> ins(%p : ...) outs(%r : ...) groups [[0, 1]]
    nova.wait %t
    nova.dma_start %r, ...            // reads the result: stays
    scf.for ... { independent tiles }  // touches neither %p nor %r
    ```
    After:
    ```mlir
    %t = nova.all_reduce <sum> ins(%p : ...) outs(%r : ...) groups [[0, 1]]
    scf.for ... { independent tiles }
    nova.wait %t
    nova.dma_start %r, ...
    ```
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect"];
  let statistics = [
    Statistic<"numMoved", "moved-ops", "Ops moved in front of a collective's wait">,
  ];
}

def NovaInterleaveLoops
    : Pass<"nova-interleave-loops", "::mlir::func::FuncOp"> {
  let summary = "fuse independent ops' loops bound on different engines";
  let description = [{
    The sequencer dispatches instructions in program order into per-engine
    queues of `timing.queue_depth` slots and stalls on a full queue, so the
    first instruction of an op is dispatched only once the previous op's
    loop nest is in flight but for its last few instructions: an op bound on
    the matrix unit and an independent one bound on the vector unit (or the
    DMA engines) run one after the other. This pass fuses such a pair of
    loops. The shorter op (by the rough engine time below) is fused whole
    with the longer op's first `m` iterations, `m` taking about as long on
    the longer op's engine (`m = round(n * t_short / t_long)`, at least
    one): one loop over `min` of the two iteration counts, each running one
    iteration of the part with fewer and `q = more / fewer` of the other (a
    nested loop when `q > 1`). What is left of either loop follows as a loop
    of its own over its last iterations, which may fuse with a later op in
    turn: a long matmul spreads over the vector-bound ops that follow it.
    Dispatch then alternates between the ops and both engines' queues hold
    work.

    A loop fuses with the first later loop of its block, within `window`
    ops that are not lazy (allocations, views, constants), that
    * has static bounds, no iteration arguments and no results (as itself)
      and no collective (their order across chips is kept);
    * is bound on another engine than the first (rough engine cycles of
      the nest: matmul MACs over the array, vector elements over the lanes,
      DMA bytes over HBM bandwidth plus a setup per DMA, a DMA whose
      operands do not depend on a loop counted once for it, as
      nova-hoist-invariant-loads will load it), or either nest is
      *balanced*, its matrix and vector cycles within 10% of each other (a
      matmul with an epilogue of about its length, as the GELU backward's:
      the units take turns within an iteration, and the other op fills
      their gaps). A DMA-bound op fuses too (a bias gradient's load and sum
      beside a matmul or an elementwise loop): its loads share queue 0 with
      the other op's, which are few in a compute-bound loop; measured on the
      GPT-2-small bf16 steps, Nova's GPT 74.114 -> 73.706 ms and HF's
      82.779 -> 82.700 ms against leaving DMA-bound ops alone;
    * gives a fused loop of at least `min-trips` iterations (with fewer,
      each op's part is dispatched whole, as before);
    * neither writes a buffer the first loop or any op in between reads or
      writes nor reads one they write (roots of view chains, as
      nova-overlap-collectives; an op with undeclared effects or a wait for
      a transfer started elsewhere ends the scan), and uses only values
      available before the first loop (lazy ops in between move in front);
    * with a target, fits: the on-chip bytes both nests allocate within
      `sram_bytes` and `acc_bytes` (once: nova-double-buffer then gives
      second slots only to what still fits).
    Every reordering is between ops that touch disjoint buffers, so the
    program computes the same values; convert-nova-to-isa then orders the
    instructions of both bodies by their actual byte ranges. Runs before
    nova-hoist-invariant-loads and nova-double-buffer, which see the fused
    loops as any others; loops over layers (`nova.layers`) are not fused
    but their bodies are scanned.

    Before:
    ```mlir
    scf.for %i = %c0 to %c4 step %c1 { matmul tiles of %y = %x * %w }
    scf.for %k = %c0 to %c8 step %c1 { exp tiles of %b into %e }
    ```
    After (the exp loop's time on the DMA engines as long as the matmul's on
    the matrix unit):
    ```mlir
    scf.for %j = %c0 to %c4 step %c1 {
      matmul tiles of iteration %j
      scf.for %k2 = %c0 to %c2 step %c1 { exp tiles of iteration 2 * %j + %k2 }
    }
    ```
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
  let options = [
    Option<"window", "window", "unsigned", /*default=*/"4",
           "ops (not counting lazy ones) scanned after a loop for one to fuse with (0: none)">,
    Option<"minTrips", "min-trips", "unsigned", /*default=*/"2",
           "fewest iterations of a fused loop (fewer interleave too coarsely to overlap)">,
  ];
  let statistics = [
    Statistic<"numFused", "fused-loops", "Pairs of loops fused">,
  ];
}

def NovaHoistInvariantLoads
    : Pass<"nova-hoist-invariant-loads", "::mlir::func::FuncOp"> {
  let summary = "load loop-invariant tiles into SRAM once, before the loop";
  let description = [{
    A tile loop that DMAs the same HBM data into SRAM on every iteration
    (e.g. a matmul's activation strip, reloaded for every output-column tile)
    loads it once instead: the SRAM alloc, the DMA and its wait move in front
    of the loop when the DMA's source does not depend on the loop, nothing in
    the loop writes the source buffer, and the tile is only read in the loop.

    Before:
    ```mlir
    scf.for %j = %c0 to %c3072 step %c128 {
      %a = memref.alloc() : memref<128x768xf32, #nova.memory_space<sram>>
      %t = nova.dma_start %x, %a : ... -> memref<128x768xf32, #nova.memory_space<sram>>
      nova.wait %t
      nova.matmul ins(%a, ...) ...
    }
    ```
    After:
    ```mlir
    %a = memref.alloc() : memref<128x768xf32, #nova.memory_space<sram>>
    %t = nova.dma_start %x, %a : ... -> memref<128x768xf32, #nova.memory_space<sram>>
    nova.wait %t
    scf.for %j = %c0 to %c3072 step %c128 {
      nova.matmul ins(%a, ...) ...
    }
    ```

    A tile that every iteration loads, updates and stores back at the same
    loop-invariant place (a matmul's output tile in its loop over K panels,
    which each panel's drain adds to) stays in SRAM for the whole loop: the
    load moves in front of the loop and the store behind it, so the output
    crosses HBM once instead of twice per panel. Nothing else in the loop may
    touch the place, and the tile is touched only between its load and its
    store.

    Then a load of the tile an earlier load of the same block holds (the
    same source value into the same SRAM type) uses that copy: the loads
    hoisted in front of the two parts of a loop that nova-interleave-loops
    split, or in front of two ops reading one operand whole (a linear's
    input and weight gradients, both reading its output gradient). Only ops
    that use the copy, lazy ops, waits and other loads may come between the
    two, so the copy adds no SRAM where it was not needed anyway; none of them
    may write the source's buffer or the copy.
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect"];
  let statistics = [
    Statistic<"numHoisted", "hoisted-loads", "Loop-invariant DMA loads moved in front of their loop">,
    Statistic<"numPromoted", "promoted-tiles", "Tiles kept in SRAM across a loop that loads, updates and stores them">,
    Statistic<"numShared", "shared-loads", "Hoisted loads of a tile that an earlier load of the block already holds in SRAM">,
  ];
}

def NovaDoubleBuffer : Pass<"nova-double-buffer", "::mlir::func::FuncOp"> {
  let summary = "overlap the input DMA of the next loop iteration with compute";
  let description = [{
    For an `scf.for` whose body loads a tile into a fresh SRAM buffer with
    `nova.dma_start %hbm_view, %sram_alloc` followed by a `nova.wait` on its
    token, where the HBM view depends on the induction variable (through
    side-effect-free ops of the body) and nothing in the loop writes the HBM
    buffer it views, the pass starts the DMA of iteration `i+1` before the
    compute of iteration `i`:

    * one `memref<2*S x i8, sram>` buffer (S = the tile's bytes rounded up to
      64) replaces the per-iteration alloc, before the loop; iteration `i`
      uses the slot `((i - lb) / step) % 2`, a `memref.view` at byte offset
      `slot * S` with the tile's original (identity-layout) type, so that the
      address is `base + slot * S`;
    * a prologue before the loop starts the DMA of iteration `lb` into slot 0;
    * in the body the DMA of iteration `i + step` goes into
      the other slot, and the original `nova.wait` waits for the token carried
      in from the previous iteration (an `scf.for` iter_arg of type
      `!nova.token`, i.e. a semaphore credit across iterations);
    * the last iteration, which has nothing to prefetch, is peeled after the
      loop (the loop's upper bound becomes its index): the body without the
      prefetch DMAs and the ops that only feed them, waiting for the token the
      loop returns. Only where that adds no copy of the body to the unrolled
      code: an odd trip count (the unroll's epilogue iteration becomes the
      peeled one) or two iterations. Otherwise (and in a loop that already
      carries values) the prefetch index is clamped to `i` on the last
      iteration (re-reading the current tile into the idle slot) and a
      `nova.wait` after the loop drains it.

    Before:
    ```mlir
    scf.for %i = %c0 to %c256 step %c64 {
      %src = memref.subview %a[%i, 0] [64, 128] [1, 1] : memref<256x128xf32, #hbm> to memref<64x128xf32, strided<[128, 1], offset: ?>, #hbm>
      %buf = memref.alloc() : memref<64x128xf32, #sram>
      %t = nova.dma_start %src, %buf : ... -> memref<64x128xf32, #sram>
      nova.wait %t
      nova.elementwise <exp> ins(%buf : ...) outs(%out : ...)
    }
    ```
    After:
    ```mlir
    %db = memref.alloc() : memref<65536xi8, #sram>
    %src0 = memref.subview %a[%c0, 0] [64, 128] [1, 1] : ...
    %buf0 = memref.view %db[%c0][] : memref<65536xi8, #sram> to memref<64x128xf32, #sram>
    %t0 = nova.dma_start %src0, %buf0 : ...
    %last = scf.for %i = %c0 to %c256 step %c64 iter_args(%t = %t0) -> (!nova.token) {
      %slot = ((%i - %c0) / %c64) % 2, %off = %slot * 32768, %offn = 32768 - %off
      %next = %i + %c64 < %c256 ? %i + %c64 : %i
      %srcn = memref.subview %a[%next, 0] [64, 128] [1, 1] : ...
      %bufn = memref.view %db[%offn][] : memref<65536xi8, #sram> to memref<64x128xf32, #sram>
      %tn = nova.dma_start %srcn, %bufn : ...
      %buf = memref.view %db[%off][] : memref<65536xi8, #sram> to memref<64x128xf32, #sram>
      nova.wait %t
      nova.elementwise <exp> ins(%buf : ...) outs(%out : ...)
      scf.yield %tn : !nova.token
    }
    nova.wait %last
    ```
    (Four iterations: the last is not peeled. With three, the loop would run
    to %c128 with `%next = %i + %c64`, and after it the body without its
    prefetch would wait for %last and compute the tile of %i = 128. Then the
    loop is unrolled by two, so that each copy's slot is fixed.)
    Runs before `nova-plan-memory`, which gives the 2x buffer one address.

    Budget. With a `#nova.target` on the module, the second slots must fit
    the chip next to what is live while the loop runs: a bound of it is the
    sum of every sram/acc buffer allocated in the loop (inner loops' two-slot
    buffers included: loops are visited innermost first) and of every buffer
    allocated outside the loop that the loop uses or that is live across it.
    A loop whose prefetched tiles would overflow the sram stays
    single-buffered; body buffers get their second slot in block order while
    it fits (an accumulator tile of half the acc or more keeps one slot). So
    one large loop (the LM head's 1024 x 393 accumulator tile) no longer
    makes nova-plan-memory fail, which made the driver compile the whole
    program single-buffered.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::nova::NovaDialect"];
  let statistics = [
    Statistic<"numLoops", "double-buffered-loops", "Loops whose input DMAs were double buffered">,
    Statistic<"numDmas", "double-buffered-dmas", "Input DMAs moved one iteration ahead">,
    Statistic<"numUnrolled", "unrolled-loops", "Double-buffered loops unrolled by two to fix each copy's slot">,
    Statistic<"numLocals", "double-buffered-locals", "On-chip buffers of a double-buffered loop body given two slots">,
    Statistic<"numPeeled", "peeled-last-iterations", "Double-buffered loops whose last iteration (nothing to prefetch) was peeled after the loop">,
    Statistic<"numOverBudget", "over-budget-loops", "Loops left single-buffered: two slots of their prefetched tiles do not fit the target's sram">,
    Statistic<"numLocalsOverBudget", "over-budget-locals", "Body buffers of a double-buffered loop left with one slot: a second does not fit">,
  ];
}

def NovaPlanMemory : Pass<"nova-plan-memory", "::mlir::ModuleOp"> {
  let summary = "give every buffer a static address in hbm, sram and acc";
  let description = [{
    Makes memref results out-params (upstream `buffer-results-to-out-params`
    with `hoist-static-allocs` and public functions; a result that is a
    reshape of an alloc reuses the out-param through the inverse reshape, so
    no copy is made; any other result is copied in with a `nova.dma_start`),
    then assigns byte offsets:

    * function arguments: arg attr `nova.role = "input"` or `"output"` (the
      appended out-params) and `nova.address : i64`, laid out in argument
      order from 0 in HBM. An input donated to result k
      (`nova.aliasing_output = k`, see nova-alias-outputs) is returned as
      itself (a result computed elsewhere is copied into it before the
      return); result k's out-param gets `nova.aliases = <input index>`, the
      input's address and no copy;
    * `memref.global` in HBM: `nova.address : i64`, after the arguments (the
      binary writer emits the initial data there);
    * `memref.alloc` / `memref.alloca`: `nova.address : i64` in its own space.
      HBM intermediates go after the globals. Buffers of one space share
      addresses when their live ranges are disjoint. A buffer is live from its
      alloc to the last use of it or of any view of it (`ViewLikeOpInterface`,
      `arith.select`), where a use by an op returning a `!nova.token` lasts
      until the `nova.wait` of that token, and a use inside a loop that does
      not contain the alloc lasts until the end of that loop. An alloc inside
      a loop body is live within one iteration. The target of a DMA to a peer
      chip is written by other chips and never shares its space. Offsets and sizes are aligned
      to 64 bytes (or the alloc's larger `alignment`). With a target and
      `separate-ops` (default), each space is first packed with every
      buffer's live range extended to the end of the next loop nest of the
      function body, so that one op's buffers and the next op's do not share
      addresses (the next op's first loads and accumulator writes need not
      wait for the previous op's tail); if that does not fit the space, it is
      packed by liveness alone.

    Each function gets `nova.sram_peak`, `nova.acc_peak` and `nova.hbm_peak`
    (i64, bytes: the highest end address used) and a remark; a peak above the
    target's `sram_bytes`, `acc_bytes` or `hbm_bytes` is an error.

    Before:
    ```mlir
    func.func @f(%a: memref<64xf32, #hbm>) -> memref<64xf32, #hbm> {
      %r = memref.alloc() : memref<64xf32, #hbm>
      %x = memref.alloc() : memref<64xf32, #sram>   // dead after its DMA out
      %y = memref.alloc() : memref<64xf32, #sram>
      ...
      return %r : memref<64xf32, #hbm>
    }
    ```
    After:
    ```mlir
    func.func @f(%a: memref<64xf32, #hbm> {nova.address = 0 : i64, nova.role = "input"},
                 %r: memref<64xf32, #hbm> {nova.address = 256 : i64, nova.role = "output"})
        attributes {nova.acc_peak = 0 : i64, nova.hbm_peak = 512 : i64, nova.sram_peak = 256 : i64} {
      %x = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #sram>
      %y = memref.alloc() {nova.address = 0 : i64} : memref<64xf32, #sram>
      ...
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::nova::NovaDialect"];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "byte alignment of every address and size">,
    Option<"separateOps", "separate-ops", "bool", /*default=*/"true",
           "with a target, keep each buffer's address unused until the end "
           "of the next loop nest when the space still fits (no false "
           "dependency between one op's tail and the next op's first "
           "tiles)">,
  ];
  let statistics = [
    Statistic<"sramPeak", "sram-peak", "Largest sram footprint of a function, in bytes">,
    Statistic<"accPeak", "acc-peak", "Largest acc footprint of a function, in bytes">,
    Statistic<"hbmPeak", "hbm-peak", "Largest hbm footprint of a function, in bytes">,
    Statistic<"numBuffers", "buffers", "Buffers given an address">,
    Statistic<"numSeparated", "separated-spaces", "Spaces packed with each buffer kept out of the next loop nest's addresses">,
    Statistic<"numOutParams", "out-params", "Memref results turned into out-params">,
    Statistic<"numRepeatedResults", "repeated-results", "Results returning an already returned buffer, given a copy of their own">,
    Statistic<"numAliasCopies", "alias-copies", "Donated results copied into their input's buffer (not computed in place)">,
  ];
}

def NovaMergeStages : Pass<"nova-merge-stages", "::mlir::ModuleOp"> {
  let summary = "merge pipeline stages into one program per chip (GPipe forward)";
  let description = [{
    The input module holds one nested `builtin.module` per pipeline stage,
    in order, each lowered to the nova (tiles) level on its own: one
    `func.func` taking `(parameters..., x)` and returning `y`, plus its
    `memref.global` constants. Stage `s + 1` takes what stage `s` returns.
    The result holds one function per stage, `@stage<s>` with
    `nova.chips = array<i64: s>`, all with the same signature: every stage's
    parameters, then the `microbatches` inputs, returning the `microbatches`
    outputs.

    Stage `s` runs its body once per microbatch `i`. Between stages the
    activation travels as `nova.send ... to s+1 channel i` and
    `nova.recv ... from s channel i` into a fresh HBM buffer (then
    `nova.wait`); a stage sends microbatch `i` and goes on with `i + 1`
    while the next stage computes `i`: the GPipe forward schedule. Sends are
    waited at the end of the stage. The last stage returns the outputs; the
    others return uninitialised buffers of the output type. Globals with the
    same name and value are kept once; a clash is renamed. The target of the
    first stage becomes the module's.
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "number of microbatches each stage processes">,
  ];
  let dependentDialects = ["::mlir::nova::NovaDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // NOVA_SCHEDULE_PASSES_TD
