//===- HoistInvariantLoads.cpp - load invariant tiles once ------*- C++ -*-===//
#include "nova/Dialect/Nova/Transforms/Passes.h"
#include "LoopWrites.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "nova-hoist-invariant-loads"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAHOISTINVARIANTLOADS
#include "nova/Dialect/Nova/Transforms/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

struct HoistInvariantLoadsPass
    : public nova::impl::NovaHoistInvariantLoadsBase<HoistInvariantLoadsPass> {
  using Base::Base;

  /// Moves the invariant loads of `loop` in front of it.
  void hoist(scf::ForOp loop) {
    Block *body = loop.getBody();
    SmallVector<DmaStartOp> dmas(body->getOps<DmaStartOp>());
    for (DmaStartOp dma : dmas) {
      if (dma.getPeer() || !loop.isDefinedOutsideOfLoop(dma.getSource()))
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
