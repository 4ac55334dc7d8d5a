//===- SliceSharding.cpp - shard interface of slices and concat -*- C++ -*-===//
//
// `tensor.extract_slice` (a fused QKV projection split into q, k and v,
// Llama's rotate_half), `tensor.insert_slice` (slice assignment) and
// `tensor.concat` are elementwise on every
// dimension they do not cut or join: those keep their split across the op.
// A sliced or concatenated dimension must be whole on every chip (its
// offsets are global), so its split is dropped and partitioning gathers it
// first. MLIR 22 has no sharding model for either op.
//
//===----------------------------------------------------------------------===//
#include "nova/Extensions/ReshapeSharding.h"

#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;

namespace {

/// Whether `slice` cuts dimension `dim` (offset, size or stride other than
/// the whole dimension).
bool cuts(tensor::ExtractSliceOp slice, int64_t dim) {
  ArrayRef<int64_t> offsets = slice.getStaticOffsets();
  ArrayRef<int64_t> sizes = slice.getStaticSizes();
  ArrayRef<int64_t> strides = slice.getStaticStrides();
  return offsets[dim] != 0 || strides[dim] != 1 ||
         sizes[dim] != slice.getSourceType().getDimSize(dim);
}

/// A slice the model handles: static offsets, sizes and strides.
bool isModelled(tensor::ExtractSliceOp slice) {
  return slice.getOffsets().empty() && slice.getSizes().empty() &&
         slice.getStrides().empty();
}

/// The source dimension of each result dimension (a rank-reducing slice
/// drops unit dimensions).
SmallVector<int64_t> sourceDims(tensor::ExtractSliceOp slice) {
  llvm::SmallBitVector dropped = slice.getDroppedDims();
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < slice.getSourceType().getRank(); ++d)
    if (!dropped.test(d))
      dims.push_back(d);
  return dims;
}

/// `rank` parallel loops: the ops here are elementwise on their loops.
SmallVector<utils::IteratorType> allParallel(int64_t rank) {
  return SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel);
}

/// Drops the splits of the dimensions `whole` says must not be split.
template <typename Pred>
FailureOr<shard::ShardingOption>
optionKeepingWhole(Operation *op, ArrayRef<shard::Sharding> operandShardings,
                   ArrayRef<shard::Sharding> resultShardings, Pred whole) {
  FailureOr<shard::ShardingOption> option =
      shard::detail::defaultGetShardingOption(op, operandShardings,
                                              resultShardings);
  if (failed(option) || option->empty)
    return option;
  for (auto [dim, axes] : llvm::enumerate(option->shardingArray))
    if (whole(int64_t(dim)))
      axes.clear();
  shard::removeTrailingEmptySubArray(option->shardingArray);
  return option;
}

/// Fails when a dimension that must be whole is split in `shardings`.
template <typename Pred>
LogicalResult checkWhole(Operation *op, ArrayRef<shard::Sharding> shardings,
                         Pred whole) {
  for (const shard::Sharding &sharding : shardings)
    for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes()))
      if (!axes.empty() && whole(int64_t(dim)))
        return op->emitOpError() << "cannot cut or join dimension " << dim
                                 << ", which is split across chips";
  return success();
}

struct ExtractSliceShardingModel
    : public shard::ShardingInterface::ExternalModel<ExtractSliceShardingModel,
                                                     tensor::ExtractSliceOp> {
  // Loops are the source's dimensions; a rank-reducing slice's result map
  // leaves out the unit dimensions it drops.
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return allParallel(cast<tensor::ExtractSliceOp>(op).getSourceType().getRank());
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    if (!isModelled(slice))
      return {}; // dynamic: not shardable (verify fails)
    MLIRContext *ctx = op->getContext();
    int64_t rank = slice.getSourceType().getRank();
    SmallVector<AffineExpr> result;
    for (int64_t d : sourceDims(slice))
      result.push_back(getAffineDimExpr(d, ctx));
    return {AffineMap::getMultiDimIdentityMap(rank, ctx),
            AffineMap::get(rank, 0, result, ctx)};
  }

  FailureOr<shard::ShardingOption>
  getShardingOption(Operation *op, ArrayRef<shard::Sharding> operandShardings,
                    ArrayRef<shard::Sharding> resultShardings) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    return optionKeepingWhole(op, operandShardings, resultShardings,
                              [&](int64_t d) {
                                return cuts(slice, d) || dropped.test(d);
                              });
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    SmallVector<int64_t> dims = sourceDims(slice);
    auto wholeSource = [&](int64_t d) { return cuts(slice, d); };
    auto wholeResult = [&](int64_t loop) { return cuts(slice, dims[loop]); };
    if (failed(checkWhole(op, operandShardings.take_front(1), wholeSource)) ||
        failed(checkWhole(op, resultShardings, wholeResult)))
      return failure();
    // Uncut dimensions take the local size of the partitioned source.
    Value source = partitionedOperands[0];
    auto localType = cast<RankedTensorType>(source.getType());
    SmallVector<int64_t> sizes(slice.getStaticSizes());
    for (int64_t d = 0; d < localType.getRank(); ++d)
      if (!cuts(slice, d))
        sizes[d] = localType.getDimSize(d);
    MLIRContext *ctx = builder.getContext();
    SmallVector<int64_t> resultShape;
    for (int64_t d : dims)
      resultShape.push_back(sizes[d]);
    auto resultType = RankedTensorType::get(
        resultShape, slice.getResultType().getElementType());
    auto local = tensor::ExtractSliceOp::create(
        builder, op->getLoc(), resultType, source,
        getAsIndexOpFoldResult(ctx, slice.getStaticOffsets()),
        getAsIndexOpFoldResult(ctx, sizes),
        getAsIndexOpFoldResult(ctx, slice.getStaticStrides()));
    partitionMap.map(op->getResult(0), local.getResult());
    partitionMap.map(op, local.getOperation());
    return success();
  }
};

/// Whether `insert` writes only part of dimension `dim` of its destination.
bool cuts(tensor::InsertSliceOp insert, int64_t dim) {
  return insert.getStaticOffsets()[dim] != 0 ||
         insert.getStaticStrides()[dim] != 1 ||
         insert.getStaticSizes()[dim] != insert.getDestType().getDimSize(dim);
}

/// `tensor.insert_slice` (slice assignment, `x[:, :2] = y`): the dimensions it
/// writes whole keep their split; a partly written one is whole per chip.
struct InsertSliceShardingModel
    : public shard::ShardingInterface::ExternalModel<InsertSliceShardingModel,
                                                     tensor::InsertSliceOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return allParallel(cast<tensor::InsertSliceOp>(op).getDestType().getRank());
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    if (!insert.getOffsets().empty() || !insert.getSizes().empty() ||
        !insert.getStrides().empty() ||
        insert.getSourceType().getRank() != insert.getDestType().getRank())
      return {}; // dynamic or rank-extending: not shardable (verify fails)
    AffineMap identity = AffineMap::getMultiDimIdentityMap(
        insert.getDestType().getRank(), op->getContext());
    return {identity, identity, identity};
  }

  FailureOr<shard::ShardingOption>
  getShardingOption(Operation *op, ArrayRef<shard::Sharding> operandShardings,
                    ArrayRef<shard::Sharding> resultShardings) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    return optionKeepingWhole(op, operandShardings, resultShardings,
                              [&](int64_t d) { return cuts(insert, d); });
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    auto insert = cast<tensor::InsertSliceOp>(op);
    auto whole = [&](int64_t d) { return cuts(insert, d); };
    if (failed(checkWhole(op, operandShardings, whole)) ||
        failed(checkWhole(op, resultShardings, whole)))
      return failure();
    Value source = partitionedOperands[0], dest = partitionedOperands[1];
    // Written whole, a dimension takes the local size of the partitioned source.
    MLIRContext *ctx = builder.getContext();
    auto local = tensor::InsertSliceOp::create(
        builder, op->getLoc(), source, dest,
        getAsIndexOpFoldResult(ctx, insert.getStaticOffsets()),
        getAsIndexOpFoldResult(ctx, cast<RankedTensorType>(source.getType()).getShape()),
        getAsIndexOpFoldResult(ctx, insert.getStaticStrides()));
    partitionMap.map(op->getResult(0), local.getResult());
    partitionMap.map(op, local.getOperation());
    return success();
  }
};

struct ConcatShardingModel
    : public shard::ShardingInterface::ExternalModel<ConcatShardingModel,
                                                     tensor::ConcatOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return allParallel(cast<tensor::ConcatOp>(op).getResultType().getRank());
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto concat = cast<tensor::ConcatOp>(op);
    if (!concat.getResultType().hasStaticShape())
      return {};
    AffineMap identity = AffineMap::getMultiDimIdentityMap(
        concat.getResultType().getRank(), op->getContext());
    return SmallVector<AffineMap>(op->getNumOperands() + 1, identity);
  }

  FailureOr<shard::ShardingOption>
  getShardingOption(Operation *op, ArrayRef<shard::Sharding> operandShardings,
                    ArrayRef<shard::Sharding> resultShardings) const {
    int64_t joined = cast<tensor::ConcatOp>(op).getDim();
    return optionKeepingWhole(op, operandShardings, resultShardings,
                              [&](int64_t d) { return d == joined; });
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    auto concat = cast<tensor::ConcatOp>(op);
    int64_t joined = concat.getDim();
    auto whole = [&](int64_t d) { return d == joined; };
    if (failed(checkWhole(op, operandShardings, whole)) ||
        failed(checkWhole(op, resultShardings, whole)))
      return failure();
    auto local = tensor::ConcatOp::create(builder, op->getLoc(), joined,
                                          partitionedOperands);
    partitionMap.map(op->getResult(0), local.getResult());
    partitionMap.map(op, local.getOperation());
    return success();
  }
};

} // namespace

void mlir::nova::registerSliceShardingModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ExtractSliceOp::attachInterface<ExtractSliceShardingModel>(*ctx);
    tensor::ConcatOp::attachInterface<ConcatShardingModel>(*ctx);
    tensor::InsertSliceOp::attachInterface<InsertSliceShardingModel>(*ctx);
  });
}
