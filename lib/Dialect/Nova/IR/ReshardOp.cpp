//===- ReshardOp.cpp - partitioning of nova.reshard -------------*- C++ -*-===//
//
// `nova.reshard` is where a value changes sharding on a grid of rank > 1.
// Its partition does the resharding that MLIR 22's shard-partition does only
// on 1-D grids, one grid axis at a time: per tensor dimension, the split axes
// beyond the prefix that source and target share are gathered (the last, the
// fastest-varying block index, first), then the target's remaining axes are
// sliced in order. Gathers move data; slices are local.
//
//===----------------------------------------------------------------------===//
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::nova;

namespace {

/// Per tensor dimension, the grid axes it is split over.
SmallVector<SmallVector<shard::GridAxis>> splitAxesOf(const shard::Sharding &sharding,
                                                      int64_t rank) {
  SmallVector<SmallVector<shard::GridAxis>> axes(rank);
  for (auto [dim, split] : llvm::enumerate(sharding.getSplitAxes()))
    if (static_cast<int64_t>(dim) < rank)
      axes[dim].assign(split.asArrayRef().begin(), split.asArrayRef().end());
  return axes;
}

bool hasHalosOrOffsets(const shard::Sharding &sharding) {
  return !sharding.getStaticHaloSizes().empty() ||
         !sharding.getStaticShardedDimsOffsets().empty() ||
         !sharding.getDynamicHaloSizes().empty() ||
         !sharding.getDynamicShardedDimsOffsets().empty();
}

} // namespace

SmallVector<utils::IteratorType> ReshardOp::getLoopIteratorTypes() {
  return SmallVector<utils::IteratorType>(getResult().getType().getRank(),
                                          utils::IteratorType::parallel);
}

SmallVector<AffineMap> ReshardOp::getIndexingMaps() {
  AffineMap identity =
      AffineMap::getMultiDimIdentityMap(getResult().getType().getRank(), getContext());
  return {identity, identity};
}

LogicalResult ReshardOp::partition(ArrayRef<Value> partitionedOperands,
                                   ArrayRef<shard::Sharding> operandShardings,
                                   ArrayRef<shard::Sharding> resultShardings,
                                   IRMapping &partitionMap,
                                   SymbolTableCollection &symbolTable,
                                   OpBuilder &builder) {
  const shard::Sharding &from = operandShardings[0];
  const shard::Sharding &to = resultShardings[0];
  if (!from || !to || from.getGridAttr() != to.getGridAttr())
    return emitOpError() << "needs a source and a target sharding on one grid";
  if (hasHalosOrOffsets(from) || hasHalosOrOffsets(to))
    return emitOpError() << "cannot reshard with halos or explicit shard offsets";
  shard::GridOp grid = shard::getGrid(getOperation(), from.getGridAttr(), symbolTable);
  ArrayRef<int64_t> gridShape = grid.getShape();
  auto wholeType = cast<RankedTensorType>(getSource().getType());
  int64_t rank = wholeType.getRank();
  SmallVector<SmallVector<shard::GridAxis>> current = splitAxesOf(from, rank);
  SmallVector<SmallVector<shard::GridAxis>> target = splitAxesOf(to, rank);

  OpBuilder::InsertionGuard guard(builder);
  Location loc = getLoc();
  Value value = partitionedOperands[0];
  // Gather what the target does not split the same way.
  for (int64_t dim = 0; dim < rank; ++dim) {
    size_t shared = 0;
    while (shared < current[dim].size() && shared < target[dim].size() &&
           current[dim][shared] == target[dim][shared])
      ++shared;
    while (current[dim].size() > shared) {
      shard::GridAxis axis = current[dim].pop_back_val();
      if (ShapedType::isDynamic(gridShape[axis]))
        return emitOpError() << "cannot reshard over grid axis " << axis
                             << " of dynamic size";
      auto type = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[dim] *= gridShape[axis];
      value = shard::AllGatherOp::create(
          builder, loc, RankedTensorType::get(shape, type.getElementType()),
          grid.getSymName(), ArrayRef<shard::GridAxis>{axis}, value, APInt(64, dim));
    }
  }
  // Then slice what the target splits and the value does not yet.
  for (int64_t dim = 0; dim < rank; ++dim) {
    for (size_t k = current[dim].size(); k < target[dim].size(); ++k) {
      shard::GridAxis axis = target[dim][k];
      auto type = cast<RankedTensorType>(value.getType());
      if (ShapedType::isDynamic(gridShape[axis]) ||
          type.getDimSize(dim) % gridShape[axis] != 0)
        return emitOpError() << "dimension " << dim << " of size " << type.getDimSize(dim)
                             << " does not split evenly over grid axis " << axis;
      value = shard::AllSliceOp::create(builder, loc, value, grid,
                                        ArrayRef<shard::GridAxis>{axis}, dim);
    }
  }
  ShapedType expected = shard::shardShapedType(wholeType, grid, to);
  if (value.getType() != expected)
    return emitOpError() << "resharding gave " << value.getType() << ", expected "
                         << expected;
  partitionMap.map(getResult(), value);
  return success();
}
