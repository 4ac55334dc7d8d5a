//===- LoopWrites.cpp - which buffers a tile loop writes --------*- C++ -*-===//
#include "LoopWrites.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

using namespace mlir;
using namespace mlir::nova;

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

/// Whether an op in `loop` other than those in `except` may touch `root`
/// with an effect that `counts` accepts.
template <typename Counts>
static bool touchedInLoop(scf::ForOp loop, Value root,
                          ArrayRef<Operation *> except, Counts counts) {
  auto global = root.getDefiningOp<memref::GetGlobalOp>();
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    // A wait only orders; the DMA it waits for declares the access.
    if (llvm::is_contained(except, op) || isa<WaitOp>(op) ||
        op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &effect : effects) {
      if (!counts(effect.getEffect()))
        continue;
      Value touched = effect.getValue();
      if (!touched || rootOf(touched) == root)
        return WalkResult::interrupt();
      auto other = rootOf(touched).getDefiningOp<memref::GetGlobalOp>();
      if (global && other && other.getName() == global.getName())
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

bool mlir::nova::mayWriteInLoop(scf::ForOp loop, Value root,
                                Operation *except) {
  SmallVector<Operation *, 1> skip;
  if (except)
    skip.push_back(except);
  return touchedInLoop(loop, root, skip, [](MemoryEffects::Effect *e) {
    return isa<MemoryEffects::Write, MemoryEffects::Free>(e);
  });
}

bool mlir::nova::mayAccessInLoop(scf::ForOp loop, Value root,
                                 ArrayRef<Operation *> except) {
  return touchedInLoop(loop, root, except, [](MemoryEffects::Effect *e) {
    return isa<MemoryEffects::Read, MemoryEffects::Write,
               MemoryEffects::Free>(e);
  });
}
