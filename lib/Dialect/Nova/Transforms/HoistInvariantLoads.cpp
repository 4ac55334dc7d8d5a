//===- HoistInvariantLoads.cpp - load invariant tiles once ------*- C++ -*-===//
#include "nova/Dialect/Nova/Transforms/Passes.h"
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

Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// Whether any op in `loop` other than `except` may write a buffer whose
/// root is `root` (conservatively true for ops without declared effects).
bool writtenInLoop(scf::ForOp loop, Value root, Operation *except) {
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    if (op == except || isa<WaitOp>(op) ||
        op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &effect : effects) {
      if (!isa<MemoryEffects::Write, MemoryEffects::Free>(effect.getEffect()))
        continue;
      Value written = effect.getValue();
      if (!written || rootOf(written) == root)
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

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
      if (writtenInLoop(loop, alloc.getResult(), dma) ||
          writtenInLoop(loop, rootOf(dma.getSource()), nullptr))
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
