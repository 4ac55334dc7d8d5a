//===- DoubleBuffer.cpp - prefetch loop input tiles -------------*- C++ -*-===//
//
// Moves the input DMA of every loop iteration one iteration ahead, into the
// other half of a two-slot SRAM buffer, so that it runs behind the compute of
// the current iteration. The body's own on-chip buffers get two slots too, so
// consecutive iterations do not serialise on a shared address.
//
//===----------------------------------------------------------------------===//
#include "nova/Schedule/Passes.h"
#include "LoopWrites.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "nova-double-buffer"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVADOUBLEBUFFER
#include "nova/Schedule/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

/// Alignment of each slot of a double buffer, as nova-plan-memory aligns.
static constexpr int64_t kSlotAlign = 64;

/// Marks the slot computation while the loop is unrolled (no dialect
/// prefix: it never outlives the pass).
static constexpr llvm::StringLiteral kSlotMarker = "double_buffer_slot";

namespace {
/// One input DMA of a loop body that can move one iteration ahead.
struct Prefetch {
  DmaStartOp dma;
  memref::AllocOp alloc;
  WaitOp wait;
  /// Side-effect-free ops of the body that compute the DMA source from the
  /// induction variable, in block order.
  SmallVector<Operation *> slice;
  int64_t slotBytes;
};
} // namespace

/// The prefetchable input DMA `dma` of `loop`, if it is one.
static std::optional<Prefetch> matchPrefetch(scf::ForOp loop, DmaStartOp dma) {
  Block *body = loop.getBody();
  Value iv = loop.getInductionVar();
  if (dma.getPeer())
    return std::nullopt;
  auto alloc = dma.getTarget().getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != body)
    return std::nullopt;
  MemRefType type = alloc.getType();
  if (getMemorySpace(type) != MemorySpace::SRAM || !type.hasStaticShape() ||
      !type.getLayout().isIdentity() || !alloc.getDynamicSizes().empty() ||
      !alloc.getSymbolOperands().empty())
    return std::nullopt;
  if (getMemorySpace(dma.getSource().getType()) != MemorySpace::HBM)
    return std::nullopt;

  // The token is waited for once, alone, later in the body.
  if (!dma.getToken().hasOneUse())
    return std::nullopt;
  auto wait = dyn_cast<WaitOp>(*dma.getToken().user_begin());
  if (!wait || wait->getBlock() != body || wait.getTokens().size() != 1 ||
      !dma->isBeforeInBlock(wait))
    return std::nullopt;

  // The tile is only touched after the wait.
  for (Operation *user : alloc->getUsers()) {
    if (user == dma)
      continue;
    Operation *inBody = body->findAncestorOpInBlock(*user);
    if (!inBody || !wait->isBeforeInBlock(inBody))
      return std::nullopt;
  }

  // The source is computed from the induction variable by side-effect-free
  // ops of the body (or from values defined outside the loop).
  bool usesIv = false;
  SetVector<Operation *> slice;
  SmallVector<Value> worklist{dma.getSource()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (v == iv) {
      usesIv = true;
      continue;
    }
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (loop->isAncestor(arg.getOwner()->getParentOp()))
        return std::nullopt; // a loop-carried value: unknown next iteration
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!loop->isProperAncestor(def))
      continue;
    if (def->getBlock() != body || def->getNumRegions() != 0 ||
        !isMemoryEffectFree(def))
      return std::nullopt;
    if (slice.insert(def))
      llvm::append_range(worklist, def->getOperands());
  }
  if (!usesIv)
    return std::nullopt;
  // The prologue clones the views at the lower bound, where their offsets
  // fold to constants; MLIR 22's subview folder then asserts on a
  // rank-reducing subview of a unit tile (SubViewOp::getDroppedDims cannot
  // tell which unit dimensions were dropped; a strided 3-D convolution's
  // element-wise taps hit it). Such one-element tiles gain nothing from a
  // prefetch.
  for (Operation *op : slice)
    if (auto sub = dyn_cast<memref::SubViewOp>(op);
        sub && sub.getType().getRank() < sub.getSourceType().getRank() &&
        llvm::all_of(sub.getStaticSizes(), [](int64_t s) { return s == 1; }))
      return std::nullopt;

  // Reading the next tile early must not miss a write of this loop.
  if (mayWriteInLoop(loop, rootOf(dma.getSource())))
    return std::nullopt;

  Prefetch p{dma, alloc, wait, slice.takeVector(), 0};
  llvm::sort(p.slice, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  int64_t bytes = type.getNumElements() *
                  llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  p.slotBytes = std::max<int64_t>(llvm::alignTo(bytes, kSlotAlign), kSlotAlign);
  return p;
}

/// Bytes a buffer of `type` takes, rounded up to the slot alignment (as
/// nova-plan-memory places it); 0 for a dynamic shape.
static int64_t alignedBytes(MemRefType type) {
  if (!type.hasStaticShape() || type.getElementTypeBitWidth() == 0)
    return 0;
  int64_t bytes = type.getNumElements() *
                  llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  return std::max<int64_t>(llvm::alignTo(bytes, kSlotAlign), kSlotAlign);
}

namespace {
/// On-chip bytes live while a loop runs, per space.
struct Footprint {
  int64_t sram = 0;
  int64_t acc = 0;
  void add(MemRefType type) {
    std::optional<MemorySpace> space = getMemorySpace(type);
    if (space == MemorySpace::SRAM)
      sram += alignedBytes(type);
    else if (space == MemorySpace::ACC)
      acc += alignedBytes(type);
  }
};
} // namespace

/// Every op that uses `root` directly or through a chain of views.
static void usersThroughViews(Value root, SmallVectorImpl<Operation *> &users) {
  SmallVector<Value> worklist{root};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      users.push_back(user);
      if (isa<ViewLikeOpInterface, memref::TransposeOp>(user))
        llvm::append_range(worklist, user->getResults());
    }
  }
}

namespace {
/// The function's on-chip buffers as they were before the pass: each
/// buffer's position in program order (pre-order) and that of its last user
/// (through views). Computed once: walking the whole function per loop made
/// the pass quadratic (79 s of a GPT-2-small training step's 112 s in
/// nova-tiles-to-isa). Buffers the pass adds are allocated just before the
/// loop they double-buffer and used only by it and its peeled iteration, so
/// they are never live across another loop; those inside a loop are found by
/// walking that loop.
struct BufferTable {
  DenseMap<Operation *, int64_t> order;
  struct Entry {
    int64_t position, lastUse;
    MemRefType type;
  };
  SmallVector<Entry> onChip;

  explicit BufferTable(Operation *func) {
    func->walk<WalkOrder::PreOrder>(
        [&](Operation *op) { order[op] = int64_t(order.size()); });
    func->walk([&](Operation *op) {
      if (!isa<memref::AllocOp, memref::AllocaOp>(op))
        return;
      auto type = cast<MemRefType>(op->getResult(0).getType());
      std::optional<MemorySpace> space = getMemorySpace(type);
      if (space != MemorySpace::SRAM && space != MemorySpace::ACC)
        return;
      SmallVector<Operation *> users;
      usersThroughViews(op->getResult(0), users);
      int64_t last = order.lookup(op);
      for (Operation *user : users)
        last = std::max(last, order.lookup(user));
      onChip.push_back({order.lookup(op), last, type});
    });
  }
};
} // namespace

/// An upper bound of the on-chip bytes live while `loop` runs: every buffer
/// allocated inside it, and every buffer allocated before it that it uses or
/// that is live across it (used after it). Buffers inside the loop are
/// summed, not packed by liveness, so the bound is conservative.
static Footprint footprintOf(scf::ForOp loop, const BufferTable &table) {
  Footprint f;
  loop.walk([&](Operation *op) {
    if (isa<memref::AllocOp, memref::AllocaOp>(op))
      f.add(cast<MemRefType>(op->getResult(0).getType()));
  });
  int64_t loopStart = table.order.lookup(loop);
  for (const BufferTable::Entry &e : table.onChip)
    if (e.position < loopStart && e.lastUse >= loopStart)
      f.add(e.type);
  return f;
}

/// Clones `slice` with the induction variable `iv` replaced by `value`.
static Value cloneSource(RewriterBase &rewriter, Prefetch &p, Value iv,
                         Value value) {
  IRMapping mapping;
  mapping.map(iv, value);
  for (Operation *op : p.slice)
    rewriter.clone(*op, mapping);
  return mapping.lookupOrDefault(p.dma.getSource());
}

namespace {
struct DoubleBufferPass
    : public nova::impl::NovaDoubleBufferBase<DoubleBufferPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    BufferTable table(getOperation());
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops)
      if (failed(doubleBuffer(rewriter, loop, table)))
        return signalPassFailure();
  }

  LogicalResult doubleBuffer(IRRewriter &rewriter, scf::ForOp loop,
                             const BufferTable &table) {
    // A loop over layers (nova-roll-layers) holds whole layers: two slots
    // for every buffer of a layer overflow the chip, and its loads are
    // double-buffered by the tile loops inside it.
    if (loop->hasAttr(NovaDialect::LayersAttrHelper::getNameStr()))
      return success();
    // Static bounds with at least two iterations: the prologue reads the
    // first tile unconditionally, and one iteration has nothing to overlap.
    std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
    std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep());
    if (!lb || !ub || !step || *step <= 0 || *ub - *lb <= *step)
      return success();

    SmallVector<Prefetch> prefetches;
    for (auto dma : loop.getBody()->getOps<DmaStartOp>())
      if (std::optional<Prefetch> p = matchPrefetch(loop, dma))
        prefetches.push_back(std::move(*p));
    if (prefetches.empty())
      return success();
    // The body's own on-chip buffers (accumulators, epilogue temporaries,
    // output tiles on their way to HBM) get two slots as well: iteration i+1
    // then writes the other slot while iteration i's drain, epilogue and
    // store still read this one, instead of waiting for them (a WAR hazard
    // through a shared address). The tile plan budgets every operand twice.
    SmallVector<memref::AllocOp> locals;
    for (auto alloc : loop.getBody()->getOps<memref::AllocOp>()) {
      MemRefType type = alloc.getType();
      std::optional<MemorySpace> space = getMemorySpace(type);
      if ((space != MemorySpace::SRAM && space != MemorySpace::ACC) ||
          !type.hasStaticShape() || !type.getLayout().isIdentity() ||
          !alloc.getDynamicSizes().empty() ||
          !alloc.getSymbolOperands().empty())
        continue;
      if (llvm::any_of(prefetches,
                       [&](const Prefetch &p) { return p.alloc == alloc; }))
        continue;
      locals.push_back(alloc);
    }
    // Two slots must fit the chip next to everything else live while the loop
    // runs; a loop whose prefetched tiles do not fit stays single-buffered,
    // and body buffers get a second slot only while they fit (in block
    // order), so that one large loop does not cost the whole program its
    // double buffering (nova-plan-memory fails on an overflow).
    if (TargetAttr target = lookupTarget(loop)) {
      Footprint f = footprintOf(loop, table);
      for (const Prefetch &p : prefetches)
        f.sram += p.slotBytes;
      if (f.sram > target.getSramBytes()) {
        LLVM_DEBUG(llvm::dbgs() << "over budget (" << f.sram << " bytes of sram): "
                                << loop << "\n");
        ++numOverBudget;
        return success();
      }
      SmallVector<memref::AllocOp> fitting;
      for (memref::AllocOp alloc : locals) {
        MemRefType type = alloc.getType();
        bool acc = getMemorySpace(type) == MemorySpace::ACC;
        int64_t &used = acc ? f.acc : f.sram;
        int64_t capacity = acc ? target.getAccBytes() : target.getSramBytes();
        if (used + alignedBytes(type) > capacity) {
          ++numLocalsOverBudget;
          continue;
        }
        used += alignedBytes(type);
        fitting.push_back(alloc);
      }
      locals = std::move(fitting);
    }
    LLVM_DEBUG(llvm::dbgs() << "double buffering " << prefetches.size()
                            << " DMAs of " << loop << "\n");

    // The last iteration has no next tile: it is peeled after the loop
    // (without a prefetch), so the loop runs to the last iteration's index
    // and every prefetch in it reads a tile that is used. Peeled where that
    // adds no copy of the body to the unrolled code: an odd trip count (the
    // unroll's one-iteration epilogue becomes the peeled iteration) or two
    // iterations (straight-line code either way). Otherwise, and in a loop
    // that carries values of its own, the prefetch index is clamped and the
    // last iteration re-reads its own tile into the idle slot (1/N of the
    // loop's loads).
    Location loc = loop.getLoc();
    int64_t trips = (*ub - *lb + *step - 1) / *step;
    int64_t lastIv = *lb + (trips - 1) * *step;
    bool peel = loop.getNumRegionIterArgs() == 0 && (trips % 2 == 1 || trips == 2);
    if (peel) {
      rewriter.setInsertionPoint(loop);
      Value bound = arith::ConstantIndexOp::create(rewriter, loc, lastIv);
      rewriter.modifyOpInPlace(loop,
                               [&] { loop.getUpperBoundMutable().assign(bound); });
    }

    // Prologue: one two-slot buffer per tile, the first tile into slot 0.
    Type tokenType = TokenType::get(rewriter.getContext());
    rewriter.setInsertionPoint(loop);
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    SmallVector<Value> buffers, inits;
    for (Prefetch &p : prefetches) {
      MemRefType type = p.alloc.getType();
      auto bufferType = MemRefType::get({2 * p.slotBytes}, rewriter.getI8Type(),
                                        AffineMap(), type.getMemorySpace());
      Value buffer = memref::AllocOp::create(rewriter, p.alloc.getLoc(),
                                             bufferType, ValueRange{},
                                             rewriter.getI64IntegerAttr(kSlotAlign));
      Value first = cloneSource(rewriter, p, loop.getInductionVar(),
                                loop.getLowerBound());
      Value slot0 = memref::ViewOp::create(rewriter, p.alloc.getLoc(), type,
                                           buffer, zero, ValueRange{});
      inits.push_back(DmaStartOp::create(rewriter, p.dma.getLoc(), tokenType,
                                         first, slot0, /*peer=*/IntegerAttr()));
      buffers.push_back(buffer);
    }

    unsigned numOld = loop.getNumRegionIterArgs();
    FailureOr<LoopLikeOpInterface> replaced =
        cast<LoopLikeOpInterface>(loop.getOperation())
            .replaceWithAdditionalIterOperands(rewriter, inits,
                                               /*replaceInitOperandUsesInLoop=*/false);
    if (failed(replaced))
      return loop.emitError() << "cannot add the prefetch tokens to the loop";
    auto newLoop = cast<scf::ForOp>(replaced->getOperation());
    Block *body = newLoop.getBody();
    Value iv = newLoop.getInductionVar();

    // Slot of this iteration and index of the next one (clamped when the
    // last iteration is not peeled).
    rewriter.setInsertionPointToStart(body);
    Value two = arith::ConstantIndexOp::create(rewriter, loc, 2);
    Value index = arith::DivUIOp::create(
        rewriter, loc,
        arith::SubIOp::create(rewriter, loc, iv, newLoop.getLowerBound()),
        newLoop.getStep());
    Value slot = arith::RemUIOp::create(rewriter, loc, index, two);
    Value next = arith::AddIOp::create(rewriter, loc, iv, newLoop.getStep());
    Value nextOrLast = next;
    if (!peel) {
      Value hasNext = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::slt, next, newLoop.getUpperBound());
      nextOrLast = arith::SelectOp::create(rewriter, loc, hasNext, next, iv);
    }
    SmallPtrSet<Operation *, 16> prefetchDmas;

    auto yield = cast<scf::YieldOp>(body->getTerminator());
    for (auto [i, p] : llvm::enumerate(prefetches)) {
      MemRefType type = p.alloc.getType();
      rewriter.setInsertionPointAfterValue(slot);
      Value bytes = arith::ConstantIndexOp::create(rewriter, loc, p.slotBytes);
      Value offset = arith::MulIOp::create(rewriter, loc, slot, bytes);
      Value nextOffset = arith::SubIOp::create(rewriter, loc, bytes, offset);

      // This iteration's tile.
      rewriter.setInsertionPoint(p.alloc);
      Value current = memref::ViewOp::create(rewriter, p.alloc.getLoc(), type,
                                             buffers[i], offset, ValueRange{});
      rewriter.replaceAllUsesExcept(p.alloc.getResult(), current, p.dma);

      // The next iteration's DMA where this iteration's was.
      rewriter.setInsertionPoint(p.dma);
      Value source = cloneSource(rewriter, p, iv, nextOrLast);
      Value other = memref::ViewOp::create(rewriter, p.alloc.getLoc(), type,
                                           buffers[i], nextOffset, ValueRange{});
      Value token = DmaStartOp::create(rewriter, p.dma.getLoc(), tokenType,
                                       source, other, /*peer=*/IntegerAttr());
      prefetchDmas.insert(token.getDefiningOp());
      BlockArgument carried = newLoop.getRegionIterArgs()[numOld + i];
      rewriter.modifyOpInPlace(p.wait,
                               [&] { p.wait.getTokensMutable().assign(carried); });
      rewriter.modifyOpInPlace(
          yield, [&] { yield->setOperand(numOld + i, token); });

      rewriter.eraseOp(p.dma);
      rewriter.eraseOp(p.alloc);
      for (Operation *op : llvm::reverse(p.slice))
        if (op->use_empty())
          rewriter.eraseOp(op);
    }

    for (memref::AllocOp alloc : locals) {
      MemRefType type = alloc.getType();
      int64_t bytes = std::max<int64_t>(
          llvm::alignTo(type.getNumElements() *
                            llvm::divideCeil(type.getElementTypeBitWidth(), 8),
                        kSlotAlign),
          kSlotAlign);
      rewriter.setInsertionPoint(newLoop);
      auto bufferType = MemRefType::get({2 * bytes}, rewriter.getI8Type(),
                                        AffineMap(), type.getMemorySpace());
      Value buffer = memref::AllocOp::create(
          rewriter, alloc.getLoc(), bufferType, ValueRange{},
          rewriter.getI64IntegerAttr(kSlotAlign));
      rewriter.setInsertionPointAfterValue(slot);
      Value size = arith::ConstantIndexOp::create(rewriter, loc, bytes);
      Value offset = arith::MulIOp::create(rewriter, loc, slot, size);
      rewriter.setInsertionPoint(alloc);
      Value current = memref::ViewOp::create(rewriter, alloc.getLoc(), type,
                                             buffer, offset, ValueRange{});
      rewriter.replaceOp(alloc, current);
    }
    numLocals += locals.size();

    rewriter.setInsertionPointAfter(newLoop);
    if (peel) {
      // The last iteration: the body without its prefetches, waiting for
      // the tiles the loop's last iteration prefetched.
      // Pure ops that only feed the prefetches (the next tile's view, past
      // the end in the last iteration) are left out too.
      for (Operation &op : llvm::reverse(body->without_terminator()))
        if (op.getNumResults() > 0 && op.getNumRegions() == 0 &&
            isMemoryEffectFree(&op) &&
            llvm::all_of(op.getUsers(), [&](Operation *user) {
              return prefetchDmas.contains(user);
            }))
          prefetchDmas.insert(&op);
      IRMapping mapping;
      mapping.map(iv, arith::ConstantIndexOp::create(rewriter, loc, lastIv));
      for (auto [arg, result] :
           llvm::zip(newLoop.getRegionIterArgs(), newLoop.getResults()))
        mapping.map(arg, result);
      for (Operation &op : body->without_terminator())
        if (!prefetchDmas.contains(&op))
          rewriter.clone(op, mapping);
      ++numPeeled;
    } else {
      // Drain the last prefetch.
      WaitOp::create(rewriter, loc, newLoop.getResults().drop_front(numOld));
    }

    // Unroll by two so that each copy of the body uses a fixed slot: the
    // addresses become static, and the semaphore analysis of the ISA
    // lowering can see that the prefetch and the compute touch different
    // halves and let them overlap. (An odd trip count leaves a one-iteration
    // epilogue that computes its slot.)
    // What unrolling makes (the main loop, an epilogue loop or its body
    // promoted into the block) stays between newLoop's neighbours: the
    // marker is cleared there, not by walking the whole function per loop.
    Block *block = newLoop->getBlock();
    Operation *before = newLoop->getPrevNode(), *after = newLoop->getNextNode();
    slot.getDefiningOp()->setAttr(kSlotMarker, rewriter.getUnitAttr());
    FailureOr<UnrolledLoopInfo> unrolled = loopUnrollByFactor(newLoop, 2);
    if (succeeded(unrolled) && unrolled->mainLoopOp) {
      int64_t copy = 0;
      for (Operation &op :
           llvm::make_early_inc_range(*unrolled->mainLoopOp->getBody())) {
        if (!op.hasAttr(kSlotMarker))
          continue;
        rewriter.setInsertionPoint(&op);
        rewriter.replaceOp(&op, arith::ConstantIndexOp::create(
                                    rewriter, op.getLoc(), copy++ % 2));
      }
      if (copy)
        ++numUnrolled;
    }
    for (Operation &op : llvm::make_range(
             before ? std::next(Block::iterator(before)) : block->begin(),
             after ? Block::iterator(after) : block->end()))
      op.walk([&](arith::RemUIOp rem) { rem->removeAttr(kSlotMarker); });
    ++numLoops;
    numDmas += prefetches.size();
    return success();
  }
};
} // namespace
