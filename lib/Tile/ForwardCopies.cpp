//===- ForwardCopies.cpp - drop on-chip copies between ops ------*- C++ -*-===//
//
// A same-typed on-chip copy into a fresh tile costs the vector unit a pass
// over the tile and moves nothing: its readers can read the source, or its
// source's producer can write the destination (Passes.td has the rules).
//
//===----------------------------------------------------------------------===//
#include "nova/Tile/Passes.h"

#include "BufferEffects.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "nova-forward-copies"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFORWARDCOPIES
#include "nova/Tile/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::tile;

namespace {

/// The element types (input, output) of a copy between two tiles of one
/// shape, or null types for any other op.
std::pair<Type, Type> copyTypes(ElementwiseOp op) {
  if (op.getKind() != ElementwiseKind::Copy || op.getScalarAttr() ||
      op.getInputs().size() != 1)
    return {};
  auto in = cast<MemRefType>(op.getInputs()[0].getType());
  auto out = cast<MemRefType>(op.getOutput().getType());
  if (in.getShape() != out.getShape())
    return {};
  return {in.getElementType(), out.getElementType()};
}

/// A same-typed copy between two on-chip tiles (memory spaces may differ).
bool isPlainCopy(ElementwiseOp op) {
  auto [from, to] = copyTypes(op);
  return from && from == to;
}

/// A fresh tile allocated in `block`.
memref::AllocOp freshTile(Value v, Block *block) {
  auto alloc = v.getDefiningOp<memref::AllocOp>();
  return alloc && alloc->getBlock() == block ? alloc : memref::AllocOp();
}

/// True if `op` is a vector-unit op that reads `v` and does not write it.
bool onlyReadsOnVector(Operation *op, Value v) {
  if (auto e = dyn_cast<ElementwiseOp>(op))
    return e.getOutput() != v;
  if (auto r = dyn_cast<ReduceOp>(op))
    return r.getOutput() != v;
  return false;
}

/// The vector-unit op writing `v` as its output (and not reading it).
Operation *vectorWriterOf(Operation *op, Value v) {
  if (auto e = dyn_cast<ElementwiseOp>(op))
    return e.getOutput() == v && !llvm::is_contained(e.getInputs(), v)
               ? op
               : nullptr;
  if (auto r = dyn_cast<ReduceOp>(op))
    return r.getOutput() == v && r.getInput() != v ? op : nullptr;
  return nullptr;
}

void setOutput(Operation *op, Value v) {
  if (auto e = dyn_cast<ElementwiseOp>(op))
    e.getOutputMutable().assign(v);
  else
    cast<ReduceOp>(op).getOutputMutable().assign(v);
}

/// bf16 or f16: a float type the vector unit computes in f32 and rounds to.
bool isNarrowFloat(Type t) { return t.isBF16() || t.isF16(); }

/// A converting copy from a tile of element type `from` to one of `to`, of
/// one shape.
bool isConversion(ElementwiseOp op, Type from, Type to) {
  return copyTypes(op) == std::make_pair(from, to);
}

/// A copy widening bf16 or f16 to f32 (exact), of one shape.
bool isWidening(ElementwiseOp op) {
  auto [from, to] = copyTypes(op);
  return from && isNarrowFloat(from) && to.isF32();
}

/// An elementwise op whose result is an f32 computation on float values
/// (not a conversion from integers, which a narrower output would round
/// once instead of twice).
bool computesOnFloats(Operation *op) {
  auto e = dyn_cast<ElementwiseOp>(op);
  if (!e)
    return false;
  for (auto [index, in] : llvm::enumerate(e.getInputs()))
    if (!(e.getKind() == ElementwiseKind::Select && index == 0) &&
        !isa<FloatType>(cast<MemRefType>(in.getType()).getElementType()))
      return false;
  return true;
}

/// The one op writing fresh tile `v` (the others only read it on the
/// vector unit), if it is an elementwise op before `before`.
ElementwiseOp soleElementwiseWriter(Value v, Operation *before) {
  ElementwiseOp writer;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (onlyReadsOnVector(user, v))
      continue;
    auto e = dyn_cast<ElementwiseOp>(user);
    if (writer || !e || e.getOutput() != v ||
        llvm::is_contained(e.getInputs(), v) ||
        user->getBlock() != before->getBlock() || !user->isBeforeInBlock(before))
      return ElementwiseOp();
    writer = e;
  }
  return writer;
}

/// Ops scanned back from a load for an earlier DMA of its view.
constexpr unsigned kReloadWindow = 256;

struct ForwardCopiesPass
    : public nova::impl::NovaForwardCopiesBase<ForwardCopiesPass> {
  using Base::Base;

  /// copy %src -> %tmp; readers of %tmp read %src instead. A widening copy
  /// (bf16 or f16 to f32, exact) goes when its readers are reductions,
  /// which read any float type as f32.
  bool forward(ElementwiseOp copy) {
    Value src = copy.getInputs()[0], tmp = copy.getOutput();
    Block *block = copy->getBlock();
    memref::AllocOp alloc = freshTile(tmp, block);
    // Same shape, element type and layout; the memory space may differ
    // (the accumulator, which vector ops read, drained into SRAM).
    if (!alloc || cast<MemRefType>(src.getType()).getLayout() !=
                      cast<MemRefType>(tmp.getType()).getLayout())
      return false;
    bool widens = !isPlainCopy(copy);
    SmallVector<Operation *> readers;
    Operation *last = copy;
    for (OpOperand &use : tmp.getUses()) {
      Operation *user = use.getOwner();
      if (user == copy)
        continue;
      if (user->getBlock() != block || !copy->isBeforeInBlock(user) ||
          !onlyReadsOnVector(user, tmp) || (widens && !isa<ReduceOp>(user)))
        return false;
      readers.push_back(user);
      if (last->isBeforeInBlock(user))
        last = user;
    }
    if (readers.empty())
      return false;
    Value root = rootOf(src);
    if (touchedBetween(copy, last, root, /*reads=*/false))
      return false;
    // A reader writing the source would overwrite what a later one reads.
    for (Operation *r : readers)
      if (mayTouch(r, root, /*reads=*/false))
        return false;
    for (Operation *r : readers)
      r->replaceUsesOfWith(tmp, src);
    copy->erase();
    if (alloc->use_empty())
      alloc->erase();
    ++numForwarded;
    return true;
  }

  /// P -> %tmp; copy %tmp -> %dst: P writes %dst instead. A copy rounding
  /// an f32 %tmp to bf16 or f16 goes too when P is an elementwise op on
  /// floats: the unit rounds P's f32 result to its output's type.
  bool retarget(ElementwiseOp copy, DominanceInfo &dom) {
    Value tmp = copy.getInputs()[0], dst = copy.getOutput();
    Block *block = copy->getBlock();
    memref::AllocOp alloc = freshTile(tmp, block);
    if (!alloc)
      return false;
    auto tmpType = cast<MemRefType>(tmp.getType());
    auto dstType = cast<MemRefType>(dst.getType());
    bool rounds = tmpType.getElementType().isF32() &&
                  isNarrowFloat(dstType.getElementType()) &&
                  tmpType.clone(dstType.getElementType()) == dstType;
    if (tmp.getType() != dst.getType() && !rounds)
      return false;
    Operation *producer = nullptr;
    for (OpOperand &use : tmp.getUses()) {
      Operation *user = use.getOwner();
      if (user == copy)
        continue;
      if (producer || user->getBlock() != block ||
          !user->isBeforeInBlock(copy) || !vectorWriterOf(user, tmp))
        return false;
      producer = user;
    }
    if (!producer || !dom.properlyDominates(dst, producer) ||
        (rounds && !computesOnFloats(producer)))
      return false;
    Value root = rootOf(dst);
    if (touchedBetween(producer, copy, root, /*reads=*/true))
      return false;
    // The producer may read the destination only in place, element for
    // element (an elementwise op reading exactly the tile it writes).
    for (Value in : producer->getOperands()) {
      if (in == tmp || rootOf(in) != root)
        continue;
      if (in != dst || !isa<ElementwiseOp>(producer))
        return false;
    }
    setOutput(producer, dst);
    copy->erase();
    if (alloc->use_empty())
      alloc->erase();
    ++numRetargeted;
    return true;
  }

  /// copy %n -> %w (widen), P(%w, ...) -> %r (f32), copy %r -> %o (narrow,
  /// %n's type): P reads %n and writes %o. The vector unit computes every
  /// float op in f32 and rounds to its output's type, so P on the narrow
  /// tiles stores what P in f32 and the rounding copy stored, bit for bit.
  bool narrow(ElementwiseOp copy, DominanceInfo &dom) {
    if (copy.getKind() != ElementwiseKind::Copy || copy.getScalarAttr() ||
        copy.getInputs().size() != 1)
      return false;
    Value r = copy.getInputs()[0], o = copy.getOutput();
    Type narrowType = cast<MemRefType>(o.getType()).getElementType();
    Type f32 = Float32Type::get(copy.getContext());
    Block *block = copy->getBlock();
    memref::AllocOp alloc = freshTile(r, block);
    if (!alloc || !isNarrowFloat(narrowType) ||
        !isConversion(copy, f32, narrowType))
      return false;
    // P: the one writer of %r, which only the copy reads.
    for (OpOperand &use : r.getUses())
      if (use.getOwner() != copy &&
          vectorWriterOf(use.getOwner(), r) != use.getOwner())
        return false;
    ElementwiseOp producer = soleElementwiseWriter(r, copy);
    if (!producer || producer.getKind() == ElementwiseKind::Copy ||
        producer.getKind() == ElementwiseKind::Select ||
        producer.getInputs().empty())
      return false;
    // Each input: a fresh f32 tile widened from a narrow one that nothing
    // writes between the widening and P.
    SmallVector<Value> sources;
    SmallVector<ElementwiseOp> widenings;
    for (Value in : producer.getInputs()) {
      ElementwiseOp widen;
      if (freshTile(in, block))
        widen = soleElementwiseWriter(in, producer);
      if (!widen || !isConversion(widen, narrowType, f32))
        return false;
      Value src = widen.getInputs()[0];
      if (touchedBetween(widen, producer, rootOf(src), /*reads=*/false) ||
          rootOf(src) == rootOf(o))
        return false;
      sources.push_back(src);
      widenings.push_back(widen);
    }
    // P writes %o earlier than the copy did.
    if (!dom.properlyDominates(o, producer) ||
        touchedBetween(producer, copy, rootOf(o), /*reads=*/true))
      return false;
    producer.getInputsMutable().assign(sources);
    setOutput(producer, o);
    copy->erase();
    if (alloc->use_empty())
      alloc->erase();
    for (ElementwiseOp widen : widenings) {
      Value w = widen.getOutput();
      if (!llvm::all_of(w.getUsers(), [&](Operation *u) { return u == widen; }))
        continue;
      Operation *wAlloc = w.getDefiningOp();
      widen->erase();
      if (wAlloc && wAlloc->use_empty())
        wAlloc->erase();
    }
    ++numNarrowed;
    return true;
  }

  /// dma %view -> %t2 after dma %view -> %t1 or dma %t1 -> %view (one
  /// block, %view unchanged in between): %t2's readers read %t1.
  bool forwardReload(DmaStartOp load) {
    Value view = load.getSource(), t2 = load.getTarget();
    Block *block = load->getBlock();
    memref::AllocOp alloc = freshTile(t2, block);
    if (load.getPeer() || !alloc ||
        getMemorySpace(cast<MemRefType>(t2.getType())) != MemorySpace::SRAM ||
        getMemorySpace(cast<MemRefType>(view.getType())) != MemorySpace::HBM)
      return false;
    // The load's token is only waited for; %t2 is only read, by ops after it.
    SmallVector<Operation *> waits;
    for (Operation *user : load.getToken().getUsers()) {
      if (!isa<WaitOp>(user) || user->getBlock() != block)
        return false;
      waits.push_back(user);
    }
    SmallVector<Operation *> readers;
    Operation *last = load;
    for (OpOperand &use : t2.getUses()) {
      Operation *user = use.getOwner();
      if (user == load)
        continue;
      auto store = dyn_cast<DmaStartOp>(user);
      bool reads = onlyReadsOnVector(user, t2) ||
                   (store && store.getSource() == t2 && store.getTarget() != t2);
      if (user->getBlock() != block || !load->isBeforeInBlock(user) || !reads)
        return false;
      readers.push_back(user);
      if (last->isBeforeInBlock(user))
        last = user;
    }
    if (readers.empty())
      return false;
    // The nearest earlier DMA of the same view, nothing writing it between,
    // within a window (a loop body's ops: the scan stays linear in the
    // function's straight-line code).
    Value root = rootOf(view), t1;
    Operation *earlier = nullptr;
    unsigned scanned = 0;
    for (Operation *op = load->getPrevNode(); op && scanned < kReloadWindow;
         op = op->getPrevNode(), ++scanned) {
      if (auto dma = dyn_cast<DmaStartOp>(op); dma && !dma.getPeer()) {
        if (dma.getSource() == view && dma.getTarget() != view)
          t1 = dma.getTarget(); // loaded
        else if (dma.getTarget() == view)
          t1 = dma.getSource(); // stored
        if (t1) {
          earlier = op;
          break;
        }
      }
      if (mayTouch(op, root, /*reads=*/false))
        return false;
    }
    if (!earlier || t1.getType() != t2.getType())
      return false;
    // %t1 holds the view's data from then until %t2's last reader: nothing
    // writes it, and a loaded %t1 is waited for before the reload.
    Value root1 = rootOf(t1);
    if (rootOf(t1) == root || touchedBetween(earlier, last, root1, /*reads=*/false))
      return false;
    for (Operation *r : readers)
      if (mayTouch(r, root1, /*reads=*/false))
        return false;
    if (cast<DmaStartOp>(earlier).getTarget() == t1) {
      bool waited = llvm::any_of(cast<DmaStartOp>(earlier).getToken().getUsers(),
                                 [&](Operation *w) {
                                   return isa<WaitOp>(w) && w->getBlock() == block &&
                                          w->isBeforeInBlock(load);
                                 });
      if (!waited)
        return false;
    }
    for (Operation *r : readers)
      r->replaceUsesOfWith(t2, t1);
    for (Operation *w : waits)
      w->erase();
    load->erase();
    if (alloc->use_empty())
      alloc->erase();
    ++numReloads;
    return true;
  }

  void runOnOperation() override {
    SmallVector<DmaStartOp> loads;
    getOperation().walk([&](DmaStartOp op) { loads.push_back(op); });
    for (DmaStartOp load : loads)
      forwardReload(load);
    DominanceInfo dom(getOperation());
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<ElementwiseOp> copies;
      SmallVector<ElementwiseOp> widenings;
      getOperation().walk([&](ElementwiseOp op) {
        if (isPlainCopy(op))
          copies.push_back(op);
        else if (isWidening(op))
          widenings.push_back(op);
      });
      for (ElementwiseOp copy : copies)
        if (forward(copy) || retarget(copy, dom))
          changed = true;
      for (ElementwiseOp copy : widenings)
        if (forward(copy))
          changed = true;
      copies.clear();
      getOperation().walk([&](ElementwiseOp op) {
        // Only the rounding copies: narrow() erases widenings.
        auto [from, to] = copyTypes(op);
        if (from && from.isF32() && isNarrowFloat(to))
          copies.push_back(op);
      });
      for (ElementwiseOp copy : copies)
        if (narrow(copy, dom) || retarget(copy, dom))
          changed = true;
    }
  }
};
} // namespace
