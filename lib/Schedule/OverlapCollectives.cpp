//===- OverlapCollectives.cpp - compute while collectives run ---*- C++ -*-===//
//
// Works on buffers (after bufferization), where it can see what each op
// reads and writes: a tensor-level reordering cannot know which buffer
// bufferization will reuse, and moving compute into a collective's flight
// could then overwrite what the collective is still reading.
//
//===----------------------------------------------------------------------===//
#include "nova/Schedule/Passes.h"
#include "Accesses.h"
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
    bool moved = false;
    for (Operation *collective : collectives)
      moved |= overlap(collective);
    // Unchanged IR needs no verifying again (most programs have no
    // collective).
    if (!moved)
      markAllAnalysesPreserved();
  }

  /// Moves the ops after the collective's wait that neither touch its
  /// buffers nor depend on anything that stays behind the wait in front of
  /// the wait, up to the next op whose effects are unknown (or a wait).
  /// An op that writes a scratchpad buffer which an op staying behind the
  /// wait reads stays too: moving it would keep that buffer live across
  /// everything the collective overlaps (a DP step's loss all-reduce and
  /// the optimizer's loads of p, m and v once held the whole backward
  /// pass's tiles live). Those buffers are found by a dry run, repeated
  /// until no moved op writes one. Returns whether anything moved.
  bool overlap(Operation *collective) {
    WaitOp wait = waitOf(collective);
    if (!wait)
      return false;
    DenseSet<const void *> forbidden;
    SmallVector<Operation *> order;
    while (true) {
      DenseSet<Operation *> moved, stayed;
      DenseSet<const void *> stayedSramReads, movedWrites;
      order.clear();
      classify(collective, wait, forbidden, moved, stayed, order,
               stayedSramReads, movedWrites);
      bool grew = false;
      for (const void *key : stayedSramReads)
        if (movedWrites.contains(key) && forbidden.insert(key).second)
          grew = true;
      if (!grew)
        break;
    }
    if (order.empty())
      return false;
    // Positions from the wait (1) to the last op that moves: every op a
    // moved op uses is before it, and ops before the wait read as 0. Not
    // the whole block: a pipeline stage's function holds hundreds of
    // collectives and ~10^5 ops, and numbering them all per collective was
    // most of the pass's time.
    DenseMap<Operation *, unsigned> position;
    for (Operation *op = wait; op; op = op->getNextNode()) {
      position[op] = position.size() + 1;
      if (op == order.back())
        break;
    }
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
    return true;
  }

  /// One dry run: which ops after the wait move (in `order`), given the
  /// scratchpad buffers moved ops must not write.
  void classify(Operation *collective, WaitOp wait,
                const DenseSet<const void *> &forbidden,
                DenseSet<Operation *> &moved, DenseSet<Operation *> &stayed,
                SmallVector<Operation *> &order,
                DenseSet<const void *> &stayedSramReads,
                DenseSet<const void *> &movedWrites) {
    Accesses pinned = accessesOf(collective);
    pinned.unknown = false;
    // The ops after the wait, walked in place (most scans stop long before
    // the block's end: at a send, a receive or an op of unknown effects).
    for (Operation *op = wait->getNextNode(); op; op = op->getNextNode()) {
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
