//===- OverlapCollectives.cpp - compute while collectives run ---*- C++ -*-===//
//
// Works on buffers (after bufferization), where it can see what each op
// reads and writes: a tensor-level reordering cannot know which buffer
// bufferization will reuse, and moving compute into a collective's flight
// could then overwrite what the collective is still reading.
//
//===----------------------------------------------------------------------===//
#include "nova/Schedule/Passes.h"
#include "LoopWrites.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "nova-overlap-collectives"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAOVERLAPCOLLECTIVES
#include "nova/Schedule/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

bool isCollective(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(op);
}

/// A buffer identity: the root allocation or function argument of a view
/// chain; all get_global of one symbol are one buffer. Null when the root is
/// something else (a select, a region result, a loop-carried block
/// argument): which buffer it is is not known statically.
const void *bufferKey(Value memref) {
  Value root = rootOf(memref);
  if (auto global = root.getDefiningOp<memref::GetGlobalOp>())
    return global.getNameAttr().getAttr().getAsOpaquePointer();
  if (root.getDefiningOp<memref::AllocOp>() || root.getDefiningOp<memref::AllocaOp>())
    return root.getAsOpaquePointer();
  auto arg = dyn_cast<BlockArgument>(root);
  if (arg && isa<FunctionOpInterface>(arg.getOwner()->getParentOp()))
    return root.getAsOpaquePointer();
  return nullptr;
}

/// The buffers an op (and everything nested in it) reads and writes.
struct Accesses {
  DenseSet<const void *> reads, writes;
  DenseSet<const void *> sram; // The keys above that are scratchpad buffers.
  bool unknown = false; // Effects it does not declare, or a wait.

  bool conflictsWith(const Accesses &other) const {
    if (unknown || other.unknown)
      return true;
    for (const void *w : writes)
      if (other.reads.contains(w) || other.writes.contains(w))
        return true;
    for (const void *r : reads)
      if (other.writes.contains(r))
        return true;
    return false;
  }
  void add(const Accesses &other) {
    reads.insert(other.reads.begin(), other.reads.end());
    writes.insert(other.writes.begin(), other.writes.end());
    sram.insert(other.sram.begin(), other.sram.end());
    unknown |= other.unknown;
  }
};

Accesses accessesOf(Operation *root) {
  Accesses acc;
  root->walk([&](Operation *op) {
    // A wait on a transfer started inside `root` only orders `root`'s own
    // accesses; one on a transfer from outside is beyond this analysis.
    if (auto wait = dyn_cast<WaitOp>(op)) {
      for (Value token : wait.getTokens()) {
        Operation *def = token.getDefiningOp();
        if (!def || !root->isAncestor(def))
          acc.unknown = true;
      }
      return;
    }
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return;
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface) {
      if (!isPure(op) && op->getNumRegions() == 0)
        acc.unknown = true;
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &effect : effects) {
      if (isa<MemoryEffects::Allocate>(effect.getEffect()))
        continue;
      Value value = effect.getValue();
      const void *key = value && isa<BaseMemRefType>(value.getType())
                            ? bufferKey(value)
                            : nullptr;
      if (!key) {
        acc.unknown = true;
        continue;
      }
      auto memref = dyn_cast<MemRefType>(value.getType());
      if (memref && getMemorySpace(memref) == MemorySpace::SRAM)
        acc.sram.insert(key);
      // A free counts as a write: nothing may free a buffer in flight.
      if (isa<MemoryEffects::Read>(effect.getEffect()))
        acc.reads.insert(key);
      else
        acc.writes.insert(key);
    }
  });
  return acc;
}

/// Whether `op` only computes a value (pure: a view, a constant) or only
/// allocates one: such ops move when a user moves, never on their own, so an
/// allocation is not hoisted away from the users that stay behind a wait
/// (its buffer would be live from there, across everything in between).
bool isLazy(Operation *op) {
  if (op->getNumRegions() != 0)
    return false;
  if (isPure(op))
    return true;
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return false;
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  return llvm::all_of(effects, [](const MemoryEffects::EffectInstance &effect) {
    return isa<MemoryEffects::Allocate>(effect.getEffect());
  });
}

/// Calls `fn` on the op in `point`'s block that defines each value `op` uses
/// from outside itself, when that op is not before `point`; stops at the
/// first `fn` that returns false.
template <typename Fn>
bool forEachLaterDef(Operation *op, Operation *point, Fn fn) {
  Block *block = point->getBlock();
  WalkResult result = op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || op->isAncestor(def))
        continue;
      Operation *defInBlock = block->findAncestorOpInBlock(*def);
      if (defInBlock && !defInBlock->isBeforeInBlock(point) && !fn(defInBlock))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// Whether every value `op` uses from outside itself is defined before
/// `point` (in `point`'s block), outside that block, or by lazy ops after
/// it that can move along (their own operands available).
bool operandsAvailableBefore(Operation *op, Operation *point,
                             const DenseSet<Operation *> &moved) {
  return forEachLaterDef(op, point, [&](Operation *def) {
    return moved.contains(def) ||
           (isLazy(def) && operandsAvailableBefore(def, point, moved));
  });
}

/// Appends to `out` the lazy ops after `point` (by `position`, the block's
/// order before anything moves) that `op` uses and that are not `placed`
/// yet, their own operands first. Positions are looked up, not asked of the
/// block: a block renumbers its ops after moves, once per query.
void collectLazyOperands(Operation *op, Operation *point,
                         const DenseMap<Operation *, unsigned> &position,
                         DenseSet<Operation *> &placed,
                         SmallVector<Operation *> &out) {
  Block *block = point->getBlock();
  unsigned pointPosition = position.lookup(point);
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || op->isAncestor(def))
        continue;
      Operation *defInBlock = block->findAncestorOpInBlock(*def);
      if (!defInBlock || position.lookup(defInBlock) <= pointPosition ||
          !placed.insert(defInBlock).second)
        continue;
      collectLazyOperands(defInBlock, point, position, placed, out);
      out.push_back(defInBlock);
    }
  });
}

/// The wait for `collective`'s token in its block, if it is the only user
/// and waits for nothing else (a wait that also covers other transfers
/// would need their buffers pinned too).
WaitOp waitOf(Operation *collective) {
  Value token = collective->getResult(0);
  if (!token.hasOneUse())
    return nullptr;
  auto wait = dyn_cast<WaitOp>(*token.getUsers().begin());
  if (!wait || wait->getBlock() != collective->getBlock() ||
      wait.getTokens().size() != 1)
    return nullptr;
  return wait;
}

struct OverlapCollectivesPass
    : public nova::impl::NovaOverlapCollectivesBase<OverlapCollectivesPass> {
  using Base::Base;

  /// What each op reads and writes, walked once: moving an op in its block
  /// does not change it, and every collective scans the ops after it.
  DenseMap<Operation *, std::shared_ptr<Accesses>> accessCache;

  const Accesses &accesses(Operation *op) {
    std::shared_ptr<Accesses> &slot = accessCache[op];
    if (!slot)
      slot = std::make_shared<Accesses>(accessesOf(op));
    return *slot;
  }

  void runOnOperation() override {
    accessCache.clear();
    SmallVector<Operation *> collectives;
    getOperation().walk([&](Operation *op) {
      if (isCollective(op))
        collectives.push_back(op);
    });
    for (Operation *collective : collectives)
      overlap(collective);
  }

  /// Moves the ops after the collective's wait that neither touch its
  /// buffers nor depend on anything that stays behind the wait in front of
  /// the wait, up to the next op whose effects are unknown (or a wait).
  /// An op that writes a scratchpad buffer which an op staying behind the
  /// wait reads stays too: moving it would keep that buffer live across
  /// everything the collective overlaps (a DP step's loss all-reduce and
  /// the optimizer's loads of p, m and v once held the whole backward
  /// pass's tiles live). Those buffers are found by a dry run, repeated
  /// until no moved op writes one.
  void overlap(Operation *collective) {
    WaitOp wait = waitOf(collective);
    if (!wait)
      return;
    SmallVector<Operation *> later;
    for (Operation *op = wait->getNextNode(); op; op = op->getNextNode())
      later.push_back(op);
    DenseSet<const void *> forbidden;
    SmallVector<Operation *> order;
    while (true) {
      DenseSet<Operation *> moved, stayed;
      DenseSet<const void *> stayedSramReads, movedWrites;
      order.clear();
      classify(collective, wait, later, forbidden, moved, stayed, order,
               stayedSramReads, movedWrites);
      bool grew = false;
      for (const void *key : stayedSramReads)
        if (movedWrites.contains(key) && forbidden.insert(key).second)
          grew = true;
      if (!grew)
        break;
    }
    if (order.empty())
      return;
    DenseMap<Operation *, unsigned> position;
    for (Operation &op : *wait->getBlock())
      position[&op] = position.size();
    DenseSet<Operation *> placed(order.begin(), order.end());
    SmallVector<Operation *> moves;
    for (Operation *op : order) {
      collectLazyOperands(op, wait, position, placed, moves);
      moves.push_back(op);
      if (!isa<WaitOp>(op))
        ++numMoved;
    }
    for (Operation *op : moves)
      op->moveBefore(wait);
  }

  /// One dry run: which of `later` move (in `order`), given the scratchpad
  /// buffers moved ops must not write.
  void classify(Operation *collective, WaitOp wait, ArrayRef<Operation *> later,
                const DenseSet<const void *> &forbidden,
                DenseSet<Operation *> &moved, DenseSet<Operation *> &stayed,
                SmallVector<Operation *> &order,
                DenseSet<const void *> &stayedSramReads,
                DenseSet<const void *> &movedWrites) {
    Accesses pinned = accessesOf(collective);
    pinned.unknown = false;
    for (Operation *op : later) {
      if (op->hasTrait<OpTrait::IsTerminator>())
        break;
      // A wait for transfers that all moved moves with them; one for
      // transfers that all stay stays and orders only them.
      if (auto other = dyn_cast<WaitOp>(op)) {
        auto from = [&](const DenseSet<Operation *> &set) {
          return llvm::all_of(other.getTokens(), [&](Value token) {
            return set.contains(token.getDefiningOp());
          });
        };
        if (from(moved)) {
          moved.insert(op);
          order.push_back(op);
          continue;
        }
        if (from(stayed)) {
          stayed.insert(op);
          continue;
        }
        // A wait for transfers issued before this collective (an earlier
        // bucket's all-reduce, left behind by its own overlap) stays, and what
        // they access is pinned: nothing that touches their buffers moves in
        // front of it, everything else may still fly with this collective.
        bool earlier = llvm::all_of(other.getTokens(), [&](Value token) {
          Operation *def = token.getDefiningOp();
          return def && def->getBlock() == wait->getBlock() &&
                 def->isBeforeInBlock(wait);
        });
        if (!earlier)
          break;
        Accesses issued;
        for (Value token : other.getTokens())
          issued.add(accesses(token.getDefiningOp()));
        if (issued.unknown)
          break;
        pinned.add(issued);
        stayed.insert(op);
        continue;
      }
      if (isLazy(op))
        continue; // Moves with its first user that moves (or stays put).
      // Point-to-point transfers keep their order: a recv moved above a send
      // that stays behind the wait (a pipeline stage's gradient, sent once
      // all-reduced) deadlocks two chips that each wait to receive first.
      if (isa<SendOp, RecvOp>(op))
        break;
      const Accesses &acc = accesses(op);
      if (acc.unknown)
        break; // Nothing moves across what the analysis cannot see.
      bool writesForbidden = llvm::any_of(
          acc.writes, [&](const void *key) { return forbidden.contains(key); });
      if (writesForbidden || acc.conflictsWith(pinned) ||
          !operandsAvailableBefore(op, wait, moved)) {
        // It stays: what comes later may not jump over it either.
        pinned.add(acc);
        stayed.insert(op);
        for (const void *key : acc.reads)
          if (acc.sram.contains(key))
            stayedSramReads.insert(key);
        continue;
      }
      moved.insert(op);
      order.push_back(op);
      movedWrites.insert(acc.writes.begin(), acc.writes.end());
    }
  }
};
} // namespace
