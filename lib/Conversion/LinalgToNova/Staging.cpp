//===- Staging.cpp - moving linalg operands on chip -------------*- C++ -*-===//
#include "Staging.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

using namespace mlir;
using namespace mlir::nova;

bool staging::isOnChip(Value buffer) {
  auto space = getMemorySpace(cast<MemRefType>(buffer.getType()));
  return space == MemorySpace::SRAM || space == MemorySpace::ACC;
}

ArrayRef<int64_t> staging::shapeOf(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getShape();
}

Value staging::allocTile(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                         Type elementType, MemorySpace space) {
  auto type = MemRefType::get(shape, elementType, MemRefLayoutAttrInterface(),
                              MemorySpaceAttr::get(b.getContext(), space));
  return memref::AllocOp::create(b, loc, type);
}

void staging::copy(OpBuilder &b, Location loc, Value from, Value to) {
  if (isOnChip(from) && isOnChip(to)) {
    ElementwiseOp::create(b, loc, ElementwiseKind::Copy, ValueRange{from}, to,
                          /*scalar=*/nullptr);
    return;
  }
  Value token = DmaStartOp::create(b, loc,
                                   from, to, /*peer=*/IntegerAttr());
  WaitOp::create(b, loc, ValueRange{token});
}

Value staging::stageIn(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (isOnChip(buffer) && type.getLayout().isIdentity())
    return buffer;
  Value tile = allocTile(b, loc, type.getShape(), type.getElementType());
  copy(b, loc, buffer, tile);
  return tile;
}

void staging::StagedOutput::finish(OpBuilder &b, Location loc) const {
  if (tile != buffer)
    copy(b, loc, tile, buffer);
}

staging::StagedOutput staging::stageOut(OpBuilder &b, Location loc,
                                        Value buffer, bool load) {
  auto type = cast<MemRefType>(buffer.getType());
  if (isOnChip(buffer) && type.getLayout().isIdentity() &&
      getMemorySpace(type) == MemorySpace::SRAM)
    return {buffer, buffer};
  Value tile = allocTile(b, loc, type.getShape(), type.getElementType());
  if (load)
    copy(b, loc, buffer, tile);
  return {buffer, tile};
}

Value staging::reshapeTile(OpBuilder &b, Location loc, Value tile,
                           ArrayRef<int64_t> shape) {
  auto type = cast<MemRefType>(tile.getType());
  if (type.getShape() == shape)
    return tile;
  auto resultType =
      MemRefType::get(shape, type.getElementType(),
                      MemRefLayoutAttrInterface(), type.getMemorySpace());
  // A scalar (rank 0) and a shape of ones convert with no reassociation
  // groups at all (a full reduction's result, e.g. a mean).
  if (type.getRank() == 0)
    return memref::ExpandShapeOp::create(b, loc, resultType, tile,
                                         ArrayRef<ReassociationIndices>{});
  if (shape.empty())
    return memref::CollapseShapeOp::create(b, loc, tile,
                                           ArrayRef<ReassociationIndices>{});
  Value flat = tile;
  if (type.getRank() != 1) {
    SmallVector<ReassociationIndices> all(1);
    for (int64_t i = 0; i < type.getRank(); ++i)
      all.back().push_back(i);
    flat = memref::CollapseShapeOp::create(b, loc, tile, all);
  }
  if (shape.size() == 1)
    return flat;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t i = 0; i < (int64_t)shape.size(); ++i)
    all.back().push_back(i);
  return memref::ExpandShapeOp::create(b, loc, resultType, flat, all);
}

Operation *staging::precedingFill(Operation *op, Value buffer,
                                  payload::Scalar *value) {
  Operation *prev = op->getPrevNode();
  if (!prev)
    return nullptr;
  if (auto fill = dyn_cast<linalg::FillOp>(prev)) {
    if (fill.getOutputs().front() != buffer)
      return nullptr;
    auto cst = fill.getInputs().front().getDefiningOp<arith::ConstantOp>();
    if (!cst)
      return nullptr;
    std::optional<payload::Scalar> v = payload::scalarOf(cst.getValue());
    if (!v)
      return nullptr;
    if (value)
      *value = *v;
    return fill;
  }
  if (auto fill = dyn_cast<FillOp>(prev)) {
    if (fill.getOutput() != buffer)
      return nullptr;
    if (value)
      *value = *payload::scalarOf(fill.getValue());
    return fill;
  }
  return nullptr;
}
