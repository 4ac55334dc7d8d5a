//===- Accesses.cpp - which buffers an op reads and writes ------*- C++ -*-===//
#include "Accesses.h"
#include "LoopWrites.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::nova;

/// A buffer identity: the root allocation or function argument of a view
/// chain; all get_global of one symbol are one buffer. Null when the root is
/// something else (a select, a region result, a loop-carried block
/// argument): which buffer it is is not known statically.
const void *mlir::nova::bufferKey(Value memref) {
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

bool Accesses::conflictsWith(const Accesses &other) const {
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

void Accesses::add(const Accesses &other) {
  reads.insert(other.reads.begin(), other.reads.end());
  writes.insert(other.writes.begin(), other.writes.end());
  sram.insert(other.sram.begin(), other.sram.end());
  unknown |= other.unknown;
}

Accesses mlir::nova::accessesOf(Operation *root) {
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
bool mlir::nova::isLazy(Operation *op) {
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
/// from outside itself, when that op is not before `point` (`notBefore`);
/// stops at the first `fn` that returns false.
template <typename Fn>
static bool forEachLaterDef(Operation *op, Operation *point,
                            function_ref<bool(Operation *)> notBefore, Fn fn) {
  Block *block = point->getBlock();
  WalkResult result = op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || op->isAncestor(def))
        continue;
      Operation *defInBlock = block->findAncestorOpInBlock(*def);
      if (defInBlock && notBefore(defInBlock) && !fn(defInBlock))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

/// Whether every value `op` uses from outside itself is defined before
/// `point` (in `point`'s block), outside that block, or by lazy ops after
/// it that can move along (their own operands available).
bool mlir::nova::operandsAvailableBefore(Operation *op, Operation *point,
                             const DenseSet<Operation *> &moved) {
  return operandsAvailableBefore(op, point, moved, [&](Operation *def) {
    return !def->isBeforeInBlock(point);
  });
}

bool mlir::nova::operandsAvailableBefore(
    Operation *op, Operation *point, const DenseSet<Operation *> &moved,
    function_ref<bool(Operation *)> notBefore) {
  return forEachLaterDef(op, point, notBefore, [&](Operation *def) {
    return moved.contains(def) ||
           (isLazy(def) &&
            operandsAvailableBefore(def, point, moved, notBefore));
  });
}

/// Appends to `out` the lazy ops after `point` (by `position`, the block's
/// order before anything moves) that `op` uses and that are not `placed`
/// yet, their own operands first. Positions are looked up, not asked of the
/// block: a block renumbers its ops after moves, once per query.
void mlir::nova::collectLazyOperands(Operation *op, Operation *point,
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

