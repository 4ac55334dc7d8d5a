//===- FuseVectorPairs.cpp - two elementwise ops as one pass ----*- C++ -*-===//
//
// A binary elementwise op whose result tile is read once, by the next binary
// elementwise op, costs the vector unit a pass over the tile that a
// two-stage instruction (VFUSED) does not (Passes.td has the rules).
//
//===----------------------------------------------------------------------===//
#include "nova/Tile/Passes.h"

#include "BufferEffects.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"
#include "nova/Dialect/Nova/IR/VectorPairs.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#define DEBUG_TYPE "nova-fuse-vector-pairs"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFUSEVECTORPAIRS
#include "nova/Tile/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::tile;

namespace {

bool commutes(ElementwiseKind kind) {
  return kind == ElementwiseKind::Add || kind == ElementwiseKind::Mul ||
         kind == ElementwiseKind::Max || kind == ElementwiseKind::Min;
}

/// One stage of a pair: `kind(main, other)`, `other` a buffer or (null) the
/// op's immediate.
struct Stage {
  ElementwiseKind kind;
  Value main, other;
  Attribute scalar;
};

/// `op` as a stage whose main operand is `main` (swapping a commutative
/// kind's operands), if it is a binary float stage of a pair.
std::optional<Stage> stageOf(ElementwiseOp op, Value main) {
  ElementwiseKind kind = op.getKind();
  if (!isPairStageKind(kind))
    return std::nullopt;
  auto inputs = op.getInputs();
  if (op.getScalarAttr()) {
    if (inputs.size() != 1 || inputs[0] != main)
      return std::nullopt;
    return Stage{kind, main, Value(), op.getScalarAttr()};
  }
  if (inputs.size() != 2 || inputs[0] == inputs[1])
    return std::nullopt;
  if (inputs[0] == main)
    return Stage{kind, main, inputs[1], Attribute()};
  if (inputs[1] == main && commutes(kind))
    return Stage{kind, main, inputs[0], Attribute()};
  return std::nullopt;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<MemRefType>(v.getType()).getShape();
}

/// The first stage's main operand: an input with the output's shape.
Value mainInputOf(ElementwiseOp op) {
  ArrayRef<int64_t> shape = shapeOf(op.getOutput());
  for (Value in : op.getInputs())
    if (shapeOf(in) == shape)
      return in;
  return Value();
}

/// `y` may be written while `x` is read element by element: it is `x`, or
/// no view of `x`'s buffer.
bool writableBeside(Value y, Value x) {
  return !x || y == x || rootOf(y) != rootOf(x);
}

/// The pair `first` then `second` through the fresh tile `tmp`, or null.
Operation *fuse(ElementwiseOp first, ElementwiseOp second, Value tmp) {
  std::optional<Stage> s0 = stageOf(first, mainInputOf(first));
  std::optional<Stage> s1 = stageOf(second, tmp);
  if (!s0 || !s0->main || !s1)
    return nullptr;
  // The inputs and %t have one float type, %y any float type (the second
  // stage's f32 result is rounded to it, as the second op rounded it).
  Value y = second.getOutput();
  Type elt = cast<MemRefType>(s0->main.getType()).getElementType();
  if (!isa<FloatType>(elt) ||
      !isa<FloatType>(cast<MemRefType>(y.getType()).getElementType()) ||
      shapeOf(tmp) != shapeOf(y))
    return nullptr;
  SmallVector<Value> inputs = {s0->main};
  for (Value v : {s0->other, s1->other})
    if (v)
      inputs.push_back(v);
  int fullRate = 0;
  for (Value v : inputs) {
    if (cast<MemRefType>(v.getType()).getElementType() != elt)
      return nullptr;
    fullRate += isFullRate(shapeOf(v), shapeOf(y));
  }
  if (cast<MemRefType>(tmp.getType()).getElementType() != elt ||
      fullRate > kPairFullRateOperands)
    return nullptr;
  // The first stage's operands are read where the second op was.
  for (Value v : {s0->main, s0->other})
    if (v && touchedBetween(first, second, rootOf(v), /*reads=*/false))
      return nullptr;
  for (Value v : inputs)
    if (!writableBeside(y, v))
      return nullptr;
  OpBuilder b(second);
  auto pair = ElementwisePairOp::create(
      b, second.getLoc(), ElementwiseKindAttr::get(b.getContext(), s0->kind),
      ElementwiseKindAttr::get(b.getContext(), s1->kind), inputs, y,
      s0->scalar, s1->scalar);
  return pair.getOperation();
}

/// The pair through `alloc`, if its only users are one elementwise op
/// writing it and a later one in the same block reading it.
bool fuseThrough(memref::AllocOp alloc) {
  Value tmp = alloc.getResult();
  ElementwiseOp writer, reader;
  for (Operation *user : tmp.getUsers()) {
    auto e = dyn_cast<ElementwiseOp>(user);
    if (!e)
      return false;
    bool writes = e.getOutput() == tmp;
    if (writes == llvm::is_contained(e.getInputs(), tmp))
      return false; // reads and writes it, or neither
    ElementwiseOp &slot = writes ? writer : reader;
    if (slot)
      return false;
    slot = e;
  }
  if (!writer || !reader || writer->getBlock() != reader->getBlock() ||
      !writer->isBeforeInBlock(reader))
    return false;
  Operation *pair = fuse(writer, reader, tmp);
  if (!pair)
    return false;
  reader.erase();
  writer.erase();
  alloc.erase();
  return true;
}

struct FuseVectorPairs
    : nova::impl::NovaFuseVectorPairsBase<FuseVectorPairs> {
  void runOnOperation() override {
    SmallVector<memref::AllocOp> allocs;
    getOperation().walk([&](memref::AllocOp a) { allocs.push_back(a); });
    for (memref::AllocOp alloc : allocs)
      if (fuseThrough(alloc))
        ++numPairs;
  }
};

} // namespace
