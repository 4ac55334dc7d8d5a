//===- PadSharding.cpp - shard interface of tensor.pad ----------*- C++ -*-===//
//
// A `tensor.pad` (a convolution's zero border) is elementwise on the
// dimensions it does not pad: those keep their split across the op. A padded
// dimension must be whole on every chip (splitting it would need halos), so
// its split is dropped and partitioning gathers it first.
//
//===----------------------------------------------------------------------===//
#include "nova/Extensions/ReshapeSharding.h"

#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;

namespace {

bool isPadded(tensor::PadOp pad, int64_t dim) {
  return pad.getStaticLow()[dim] != 0 || pad.getStaticHigh()[dim] != 0;
}

struct PadShardingModel
    : public shard::ShardingInterface::ExternalModel<PadShardingModel, tensor::PadOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return SmallVector<utils::IteratorType>(cast<tensor::PadOp>(op).getResultType().getRank(),
                                            utils::IteratorType::parallel);
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto pad = cast<tensor::PadOp>(op);
    if (!pad.getLow().empty() || !pad.getHigh().empty())
      return {}; // Dynamic padding: not shardable (verify fails cleanly).
    AffineMap identity =
        AffineMap::getMultiDimIdentityMap(pad.getResultType().getRank(), op->getContext());
    return {identity, identity};
  }

  FailureOr<shard::ShardingOption>
  getShardingOption(Operation *op, ArrayRef<shard::Sharding> operandShardings,
                    ArrayRef<shard::Sharding> resultShardings) const {
    auto pad = cast<tensor::PadOp>(op);
    FailureOr<shard::ShardingOption> option =
        shard::detail::defaultGetShardingOption(op, operandShardings, resultShardings);
    if (failed(option) || option->empty)
      return option;
    for (auto [dim, axes] : llvm::enumerate(option->shardingArray))
      if (isPadded(pad, dim))
        axes.clear();
    shard::removeTrailingEmptySubArray(option->shardingArray);
    return option;
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    auto pad = cast<tensor::PadOp>(op);
    for (const shard::Sharding &sharding : {operandShardings[0], resultShardings[0]})
      for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes()))
        if (!axes.empty() && isPadded(pad, dim))
          return op->emitOpError() << "cannot pad dimension " << dim
                                   << ", which is split across chips";
    shard::partitionTriviallyShardableOperation(*op, partitionedOperands, operandShardings,
                                                resultShardings, partitionMap, symbolTable,
                                                builder);
    return success();
  }
};

} // namespace

void mlir::nova::registerPadShardingModel(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::PadOp::attachInterface<PadShardingModel>(*ctx);
  });
}
