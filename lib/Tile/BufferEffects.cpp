//===- BufferEffects.cpp - what ops between two others touch -----*- C++ -*-===//
#include "BufferEffects.h"

#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::nova;

Value tile::rootOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
      continue;
    }
    if (!isMemoryEffectFree(def))
      break;
    auto memrefs = llvm::make_filter_range(def->getOperands(), [](Value o) {
      return isa<MemRefType>(o.getType());
    });
    if (llvm::range_size(memrefs) != 1)
      break; // no source, or two: not a view
    v = *memrefs.begin();
  }
  return v;
}

bool tile::mayTouch(Operation *op, Value root, bool reads) {
  if (isMemoryEffectFree(op) && op->getNumRegions() == 0)
    return false;
  // A wait only completes DMAs; what they read and write is their
  // nova.dma_start's, gather's or collective's effect, counted there. (The
  // bias a matmul epilogue loads sits between the drain copy and its reader.)
  if (isa<WaitOp>(op))
    return false;
  if (op->getNumRegions() != 0) {
    WalkResult r = op->walk([&](Operation *inner) {
      if (inner != op && mayTouch(inner, root, reads))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return true;
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
        isMemoryEffectFree(op))
      return false;
  }
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return true;
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  for (const MemoryEffects::EffectInstance &e : effects) {
    bool relevant = isa<MemoryEffects::Write>(e.getEffect()) ||
                    (reads && isa<MemoryEffects::Read>(e.getEffect()));
    if (!relevant)
      continue;
    Value v = e.getValue();
    if (!v || rootOf(v) == root)
      return true;
  }
  return false;
}

bool tile::touchedBetween(Operation *from, Operation *to, Value root,
                          bool reads) {
  for (Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (mayTouch(op, root, reads))
      return true;
  return false;
}
