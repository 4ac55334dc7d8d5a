//===- Accesses.h - which buffers an op reads and writes --------*- C++ -*-===//
//
// Shared by the passes that reorder whole ops on buffers
// (nova-overlap-collectives, nova-interleave-loops): an op may move across
// another when neither writes a buffer (root of a view chain) the other
// reads or writes, and the values it uses are available where it lands.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_LIB_SCHEDULE_ACCESSES_H
#define NOVA_LIB_SCHEDULE_ACCESSES_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::nova {

/// A buffer identity: the root allocation or function argument of a view
/// chain; all get_global of one symbol are one buffer. Null when the root is
/// something else (a select, a region result, a loop-carried block
/// argument): which buffer it is is not known statically.
const void *bufferKey(Value memref);

/// The buffers an op (and everything nested in it) reads and writes.
struct Accesses {
  llvm::DenseSet<const void *> reads, writes;
  llvm::DenseSet<const void *> sram; // The keys above that are scratchpad buffers.
  bool unknown = false; // Effects it does not declare, or a wait.

  bool conflictsWith(const Accesses &other) const;
  void add(const Accesses &other);
};

Accesses accessesOf(Operation *root);

/// Whether `op` only computes a value (pure: a view, a constant) or only
/// allocates one: such ops move when a user moves, never on their own, so an
/// allocation is not hoisted away from the users that stay behind.
bool isLazy(Operation *op);

/// Whether every value `op` uses from outside itself is defined before
/// `point` (in `point`'s block), outside that block, or by lazy ops after
/// it that can move along (their own operands available).
bool operandsAvailableBefore(Operation *op, Operation *point,
                             const llvm::DenseSet<Operation *> &moved);

/// As above, where `notBefore` tells which ops of the block are not before
/// `point`: a caller that knows spares the block a renumbering after each
/// move (isBeforeInBlock renumbers the whole block).
bool operandsAvailableBefore(Operation *op, Operation *point,
                             const llvm::DenseSet<Operation *> &moved,
                             llvm::function_ref<bool(Operation *)> notBefore);

/// Appends to `out` the lazy ops after `point` (by `position`, the block's
/// order before anything moves) that `op` uses and that are not `placed`
/// yet, their own operands first.
void collectLazyOperands(Operation *op, Operation *point,
                         const llvm::DenseMap<Operation *, unsigned> &position,
                         llvm::DenseSet<Operation *> &placed,
                         llvm::SmallVector<Operation *> &out);

} // namespace mlir::nova

#endif // NOVA_LIB_SCHEDULE_ACCESSES_H
