//===- LoopWrites.cpp - which buffers a tile loop writes --------*- C++ -*-===//
#include "LoopWrites.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

using namespace mlir;

Value mlir::nova::rootOf(Value v) {
  while (true) {
    if (auto view = v.getDefiningOp<ViewLikeOpInterface>())
      v = view.getViewSource();
    else if (auto transpose = v.getDefiningOp<memref::TransposeOp>())
      v = transpose.getIn(); // A view too, without ViewLikeOpInterface.
    else
      return v;
  }
}

bool mlir::nova::mayWriteInLoop(scf::ForOp loop, Value root,
                                Operation *except) {
  auto global = root.getDefiningOp<memref::GetGlobalOp>();
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    // A wait only orders; the DMA it waits for declares the write.
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
      auto other = rootOf(written).getDefiningOp<memref::GetGlobalOp>();
      if (global && other && other.getName() == global.getName())
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}
