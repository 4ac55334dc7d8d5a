//===- ConvSharding.cpp - shard interface of convolutions -------*- C++ -*-===//
//
// Upstream's linalg sharding model refuses to partition any op whose
// indexing maps are not projected permutations, and a convolution's input
// is read at `oh + kh`. Yet splitting a loop that every operand indexes by a
// plain dimension (the batch; the output channels) needs nothing but local
// shapes. This model keeps upstream's propagation (the default interface
// implementation, from the op's loops and maps) and partitions such splits
// trivially; a split of a reduction loop or of a loop that appears inside a
// sum (a window) is refused at the op.
//
// It must be attached before upstream's model (the first attachment of an
// interface wins): nova-opt registers Nova's extensions first.
//
//===----------------------------------------------------------------------===//
#include "nova/Extensions/ReshapeSharding.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;

namespace {

/// Whether loop `loop` is indexed by a bare dimension wherever it appears.
bool onlyBareUses(ArrayRef<AffineMap> maps, unsigned loop) {
  for (AffineMap map : maps)
    for (AffineExpr expr : map.getResults())
      if (expr.isFunctionOfDim(loop) && !isa<AffineDimExpr>(expr))
        return false;
  return true;
}

template <typename ConvOp>
struct ConvShardingModel
    : public shard::ShardingInterface::ExternalModel<ConvShardingModel<ConvOp>, ConvOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return cast<linalg::LinalgOp>(op).getIteratorTypesArray();
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
    // Results are indexed like their destination operands.
    for (OpOperand &init : linalgOp.getDpsInitsMutable())
      maps.push_back(maps[init.getOperandNumber()]);
    return maps;
  }

  FailureOr<shard::ShardingOption>
  getShardingOption(Operation *op, ArrayRef<shard::Sharding> operandShardings,
                    ArrayRef<shard::Sharding> resultShardings) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
    // A split of an operand dimension read through a window (oh + kh) says
    // nothing about the loops: drop it before the default deduction (which
    // would fail on it), so that the operand is gathered instead.
    SmallVector<shard::Sharding, 4> operands(operandShardings);
    for (auto [index, sharding] : llvm::enumerate(operands)) {
      if (!sharding || index >= maps.size())
        continue;
      SmallVector<shard::GridAxesAttr> axes(sharding.getSplitAxes());
      for (auto [dim, dimAxes] : llvm::enumerate(axes))
        if (!isa<AffineDimExpr>(maps[index].getResult(dim)))
          dimAxes = shard::GridAxesAttr::get(op->getContext(), ArrayRef<shard::GridAxis>{});
      // Trailing unsplit dimensions are left out: the default deduction
      // looks at every dimension it is given, split or not.
      while (axes.size() > 1 && axes.back().empty())
        axes.pop_back();
      sharding = shard::Sharding::get(sharding.getGridAttr(), axes);
    }
    FailureOr<shard::ShardingOption> option =
        shard::detail::defaultGetShardingOption(op, operands, resultShardings);
    if (failed(option) || option->empty)
      return option;
    // Only loops that partition trivially keep their split.
    SmallVector<utils::IteratorType> iterators = linalgOp.getIteratorTypesArray();
    for (auto [loop, axes] : llvm::enumerate(option->shardingArray))
      if (iterators[loop] != utils::IteratorType::parallel || !onlyBareUses(maps, loop))
        axes.clear();
    shard::removeTrailingEmptySubArray(option->shardingArray);
    return option;
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    auto linalgOp = cast<linalg::LinalgOp>(op);
    SmallVector<AffineMap> maps = linalgOp.getIndexingMapsArray();
    // Every split tensor dimension must be a bare, parallel loop.
    SmallVector<shard::Sharding, 4> shardings(operandShardings);
    llvm::append_range(shardings, resultShardings);
    SmallVector<AffineMap> allMaps = getIndexingMaps(op);
    for (auto [sharding, map] : llvm::zip(shardings, allMaps)) {
      if (!sharding)
        continue;
      for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes())) {
        if (axes.empty())
          continue;
        auto loop = dyn_cast<AffineDimExpr>(map.getResult(dim));
        if (!loop || !onlyBareUses(maps, loop.getPosition()) ||
            linalgOp.getIteratorTypesArray()[loop.getPosition()] !=
                utils::IteratorType::parallel)
          return op->emitOpError()
                 << "cannot split dimension " << dim
                 << " of an operand across chips: it is read through a window "
                    "or reduced (only batch and output-channel splits partition)";
      }
    }
    shard::partitionTriviallyShardableOperation(*op, partitionedOperands, operandShardings,
                                                resultShardings, partitionMap, symbolTable,
                                                builder);
    return success();
  }
};

template <typename... Ops>
void attach(MLIRContext *ctx) {
  (Ops::template attachInterface<ConvShardingModel<Ops>>(*ctx), ...);
}

} // namespace

void mlir::nova::registerConvShardingModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    attach<linalg::Conv1DNcwFcwOp, linalg::Conv2DNchwFchwOp, linalg::Conv2DNhwcHwcfOp,
           linalg::Conv2DNhwcFhwcOp, linalg::Conv3DNcdhwFcdhwOp,
           linalg::DepthwiseConv2DNhwcHwcOp, linalg::DepthwiseConv2DNchwChwOp,
           linalg::PoolingNchwMaxOp, linalg::PoolingNchwSumOp, linalg::PoolingNhwcMaxOp,
           linalg::PoolingNhwcSumOp>(ctx);
  });
}
