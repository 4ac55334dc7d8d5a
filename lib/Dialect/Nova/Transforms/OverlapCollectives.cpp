//===- OverlapCollectives.cpp - compute while collectives run ---*- C++ -*-===//
#include "nova/Dialect/Nova/Transforms/Passes.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "nova-overlap-collectives"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAOVERLAPCOLLECTIVES
#include "nova/Dialect/Nova/Transforms/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

bool isCollective(Operation *op) {
  return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp>(op);
}

/// The first op after `collective` in its block that uses its token or one
/// of its buffers (directly or inside a region); null if none.
Operation *firstUse(Operation *collective) {
  SmallPtrSet<Value, 4> touched(llvm::from_range, collective->getOperands());
  touched.insert(collective->getResults().begin(), collective->getResults().end());
  for (Operation *op = collective->getNextNode(); op; op = op->getNextNode()) {
    bool uses = false;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (touched.contains(operand))
          uses = true;
    });
    if (uses)
      return op;
  }
  return nullptr;
}

/// Whether `op` takes a buffer (e.g. `bufferization.to_tensor`, which
/// declares no effect but reads whatever a collective wrote there).
bool readsBuffers(Operation *op) {
  bool buffers = false;
  op->walk([&](Operation *nested) {
    for (Type type : nested->getOperandTypes())
      if (isa<BaseMemRefType>(type))
        buffers = true;
  });
  return buffers;
}

/// Whether every value `op` reads (nested regions included) is defined
/// before `point` in its block, or outside the block.
bool operandsAvailableBefore(Operation *op, Operation *point) {
  Block *block = point->getBlock();
  bool available = true;
  op->walk([&](Operation *nested) {
    for (Value operand : nested->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def) {
        // A block argument of `op`'s own regions, or of an enclosing block.
        continue;
      }
      if (op->isAncestor(def))
        continue;
      Operation *defInBlock = block->findAncestorOpInBlock(*def);
      if (defInBlock && !defInBlock->isBeforeInBlock(point))
        available = false;
    }
  });
  return available;
}

struct OverlapCollectivesPass
    : public nova::impl::NovaOverlapCollectivesBase<OverlapCollectivesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<Operation *> collectives;
    getOperation().walk([&](Operation *op) {
      if (isCollective(op))
        collectives.push_back(op);
    });
    for (Operation *collective : collectives) {
      Operation *use = firstUse(collective);
      if (!use)
        continue;
      // Ops move in order, so an op can follow the ones it reads.
      SmallVector<Operation *> later;
      for (Operation *op = use->getNextNode(); op; op = op->getNextNode())
        later.push_back(op);
      for (Operation *op : later) {
        if (op->hasTrait<OpTrait::IsTerminator>() || !isMemoryEffectFree(op) ||
            readsBuffers(op) || !operandsAvailableBefore(op, use))
          continue;
        op->moveBefore(use);
        ++numMoved;
      }
    }
  }
};
} // namespace
