//===- HoistInvariantLoads.cpp - load invariant tiles once ------*- C++ -*-===//
#include "nova/Schedule/Passes.h"
#include "LoopWrites.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "nova-hoist-invariant-loads"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAHOISTINVARIANTLOADS
#include "nova/Schedule/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

struct HoistInvariantLoadsPass
    : public nova::impl::NovaHoistInvariantLoadsBase<HoistInvariantLoadsPass> {
  using Base::Base;

  /// Moves the side-effect-free ops of `loop`'s body that compute `value`
  /// (tiling leaves a tile's views in the innermost loop) in front of the
  /// loop, if none of them depends on the loop. True if `value` is then
  /// defined outside the loop.
  static bool hoistComputation(scf::ForOp loop, Value value) {
    SmallVector<Operation *> chain;
    SmallVector<Value> worklist{value};
    llvm::SmallPtrSet<Operation *, 8> seen;
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (loop.isDefinedOutsideOfLoop(v))
        continue;
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != loop.getBody() ||
          def->getNumRegions() != 0 || !isMemoryEffectFree(def))
        return false;
      if (seen.insert(def).second) {
        chain.push_back(def);
        llvm::append_range(worklist, def->getOperands());
      }
    }
    llvm::sort(chain, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *op : chain)
      op->moveBefore(loop);
    return true;
  }

  /// Moves the invariant loads of `loop` in front of it.
  void hoist(scf::ForOp loop) {
    Block *body = loop.getBody();
    SmallVector<DmaStartOp> dmas(body->getOps<DmaStartOp>());
    for (DmaStartOp dma : dmas) {
      if (dma.getPeer())
        continue;
      // Check the rest before moving the source's views (a failed check
      // must leave the loop as it was).
      auto target = dma.getTarget().getDefiningOp<memref::AllocOp>();
      if (!target || target->getBlock() != body || !dma.getToken().hasOneUse())
        continue;
      if (!loop.isDefinedOutsideOfLoop(dma.getSource()) &&
          (mayWriteInLoop(loop, rootOf(dma.getSource())) ||
           !hoistComputation(loop, dma.getSource())))
        continue;
      auto alloc = dma.getTarget().getDefiningOp<memref::AllocOp>();
      if (!alloc || alloc->getBlock() != body ||
          !alloc.getDynamicSizes().empty() ||
          !alloc.getSymbolOperands().empty())
        continue;
      if (!dma.getToken().hasOneUse())
        continue;
      auto wait = dyn_cast<WaitOp>(*dma.getToken().user_begin());
      if (!wait || wait->getBlock() != body || wait.getTokens().size() != 1)
        continue;
      // Nothing in the loop writes the tile (but this DMA) or the source.
      if (mayWriteInLoop(loop, alloc.getResult(), dma) ||
          mayWriteInLoop(loop, rootOf(dma.getSource())))
        continue;
      alloc->moveBefore(loop);
      dma->moveBefore(loop);
      wait->moveBefore(loop);
      ++numHoisted;
    }
  }

  void runOnOperation() override {
    // Inner loops first, so that a load can leave a loop nest level by level.
    getOperation().walk<WalkOrder::PostOrder>([&](scf::ForOp loop) { hoist(loop); });
  }
};
} // namespace
