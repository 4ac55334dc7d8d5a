//===- ReshapeSharding.cpp - shard interface of tensor reshapes -*- C++ -*-===//
//
// A reshape's iteration space is its expanded ("fine") shape: one parallel
// loop per fine dimension. A group of fine dimensions that collapses into one
// coarse dimension is split consistently on both sides when each chip's
// block of the group is contiguous in row-major order: every sharded fine
// dimension but the last has one element per chip, and every unsharded one
// before the last sharded has size 1. Then the coarse dimension is split
// over the concatenation of the group's axes, in order (the shard dialect
// linearizes a dimension's axes major to minor). E.g. [B, H] split
// [[dp], [tp]] collapses to B*H split [[dp, tp]] when B equals the dp size.
//
// A group whose split blocks are not contiguous keeps the splits of its
// leading dimensions that are; anything else (a split that does not fall on
// fine-dimension boundaries) propagates nothing, and partitioning reshards
// through the replicated tensor instead: correct, just not free.
//
//===----------------------------------------------------------------------===//
#include "nova/Extensions/ReshapeSharding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::nova;

namespace {

int64_t shardCount(ArrayRef<shard::GridAxis> axes, ArrayRef<int64_t> gridShape) {
  int64_t count = 1;
  for (shard::GridAxis axis : axes)
    count *= gridShape[axis];
  return count;
}

DimAxes padded(ArrayRef<shard::GridAxesAttr> splitAxes, int64_t rank) {
  DimAxes axes(rank);
  for (auto [dim, attr] : llvm::enumerate(splitAxes))
    if (static_cast<int64_t>(dim) < rank)
      axes[dim] = llvm::to_vector(attr.asArrayRef());
  return axes;
}

shard::Sharding toSharding(MLIRContext *ctx, FlatSymbolRefAttr grid, DimAxes axes) {
  shard::removeTrailingEmptySubArray(axes);
  if (axes.empty()) // A rank-0 tensor is replicated: `split_axes = [[]]`.
    axes.emplace_back();
  SmallVector<shard::GridAxesAttr> attrs;
  for (const auto &dimAxes : axes)
    attrs.push_back(shard::GridAxesAttr::get(ctx, dimAxes));
  return shard::Sharding::get(grid, attrs);
}

} // namespace

/// Whether each chip's block of `group` is contiguous in row-major order.
static bool isContiguousSplit(ArrayRef<int64_t> fineShape,
                              const ReassociationIndices &group,
                              const DimAxes &fineAxes, ArrayRef<int64_t> gridShape) {
  // The last sharded fine dimension of the group; everything before it must
  // hold one element per chip.
  int64_t lastSharded = -1;
  for (int64_t fine : group)
    if (!fineAxes[fine].empty())
      lastSharded = fine;
  for (int64_t fine : group) {
    int64_t count = shardCount(fineAxes[fine], gridShape);
    if (fineShape[fine] % count != 0)
      return false;
    if (fine < lastSharded && fineShape[fine] != count)
      return false;
  }
  return true;
}

std::optional<DimAxes>
nova::collapseSplitAxes(ArrayRef<int64_t> fineShape,
                        ArrayRef<ReassociationIndices> groups,
                        const DimAxes &fineAxes, ArrayRef<int64_t> gridShape) {
  DimAxes coarse(groups.size());
  for (auto [coarseDim, group] : llvm::enumerate(groups)) {
    if (!isContiguousSplit(fineShape, group, fineAxes, gridShape))
      return std::nullopt;
    for (int64_t fine : group)
      llvm::append_range(coarse[coarseDim], fineAxes[fine]);
  }
  return coarse;
}

std::optional<DimAxes>
nova::expandSplitAxes(ArrayRef<int64_t> fineShape,
                      ArrayRef<ReassociationIndices> groups,
                      const DimAxes &coarseAxes, ArrayRef<int64_t> gridShape) {
  DimAxes fine(fineShape.size());
  for (auto [coarseDim, group] : llvm::enumerate(groups)) {
    ArrayRef<shard::GridAxis> remaining = coarseAxes[coarseDim];
    for (int64_t dim : group) {
      if (remaining.empty())
        break;
      // Give this dimension the longest prefix of the axes that divides it;
      // the rest may go on only if this dimension is left one element per
      // chip, which keeps each chip's block contiguous.
      int64_t count = 1;
      while (!remaining.empty() &&
             fineShape[dim] % (count * gridShape[remaining.front()]) == 0) {
        count *= gridShape[remaining.front()];
        fine[dim].push_back(remaining.front());
        remaining = remaining.drop_front();
      }
      if (!remaining.empty() && count != fineShape[dim])
        return std::nullopt;
    }
    if (!remaining.empty())
      return std::nullopt;
  }
  return fine;
}

namespace {

/// Whether `op` is a cast alone (autocast's bf16 rounding): one input, all
/// loops parallel, identity maps, a body of one `arith.truncf` / `extf`.
bool isCast(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 || generic->getNumResults() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block *body = generic.getBody();
  return llvm::range_size(body->without_terminator()) == 1 &&
         isa<arith::TruncFOp, arith::ExtFOp>(body->front());
}

/// Whether `v` (a reshape's 2-D side) is an operand of a 2-D `linalg.matmul`,
/// directly or through shard annotations, autocast's casts and one transpose
/// (a weight gradient's `x^T`). Not a matmul's result: a row-parallel
/// layer's partial sums split along the sequence afterwards are Megatron's
/// reduce-scatter.
bool feedsMatmul(Value v, int depth = 0) {
  auto ranked = dyn_cast<RankedTensorType>(v.getType());
  if (!ranked || ranked.getRank() != 2 || depth > 6)
    return false;
  for (Operation *user : v.getUsers()) {
    if (isa<linalg::MatmulOp>(user))
      return true;
    if ((isa<shard::ShardOp, linalg::TransposeOp>(user) || isCast(user)) &&
        feedsMatmul(user->getResult(0), depth + 1))
      return true;
  }
  return false;
}

/// The fine (expanded) and coarse (collapsed) sides of a reshape.
struct ReshapeSides {
  RankedTensorType fine, coarse;
  SmallVector<ReassociationIndices> groups;
  unsigned fineIndex; // 0: the operand is fine (collapse), 1: the result is.
};

ReshapeSides sidesOf(Operation *op) {
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return {expand.getResultType(), expand.getSrcType(),
            llvm::to_vector(expand.getReassociationIndices()), 1};
  auto collapse = cast<tensor::CollapseShapeOp>(op);
  return {collapse.getSrcType(), collapse.getResultType(),
          llvm::to_vector(collapse.getReassociationIndices()), 0};
}

template <typename ReshapeOp>
struct ReshapeShardingModel
    : public shard::ShardingInterface::ExternalModel<ReshapeShardingModel<ReshapeOp>,
                                                     ReshapeOp> {
  SmallVector<utils::IteratorType> getLoopIteratorTypes(Operation *op) const {
    return SmallVector<utils::IteratorType>(sidesOf(op).fine.getRank(),
                                            utils::IteratorType::parallel);
  }

  // A collapse's fine indices are not affine in its coarse ones, so the maps
  // stay empty and every method below works on the reassociation instead.
  SmallVector<AffineMap> getIndexingMaps(Operation *) const { return {}; }

  FailureOr<shard::ShardingOption>
  getShardingOption(Operation *op, ArrayRef<shard::Sharding> operandShardings,
                    ArrayRef<shard::Sharding> resultShardings) const {
    ReshapeSides sides = sidesOf(op);
    if (!sides.fine.hasStaticShape() || !sides.coarse.hasStaticShape())
      return op->emitOpError("sharding a reshape needs static shapes");
    // The result's sharding first, as the default implementation does; a
    // replicated operand says nothing (its users may still split it).
    struct Known {
      shard::Sharding sharding;
      bool isOperand;
    };
    SmallVector<Known, 2> known;
    if (!resultShardings.empty() && resultShardings[0])
      known.push_back({resultShardings[0], false});
    if (!operandShardings.empty() && operandShardings[0] &&
        !shard::isFullReplication(operandShardings[0]))
      known.push_back({operandShardings[0], true});
    SymbolTableCollection symbols;
    for (auto [sharding, isOperand] : known) {
      shard::GridOp grid = shard::getGridOrNull(op, sharding.getGridAttr(), symbols);
      if (!grid)
        return op->emitOpError("unknown grid ") << sharding.getGridAttr();
      bool isFine = isOperand == (sides.fineIndex == 0);
      std::optional<DimAxes> fineAxes =
          isFine ? std::optional<DimAxes>(
                       padded(sharding.getSplitAxes(), sides.fine.getRank()))
                 : expandSplitAxes(sides.fine.getShape(), sides.groups,
                                   padded(sharding.getSplitAxes(),
                                          sides.coarse.getRank()),
                                   grid.getShape());
      if (!fineAxes) {
        // The split does not fall on fine-dimension boundaries: the reshape
        // runs replicated and partitioning reshards its operand or result.
        return shard::ShardingOption(shard::ShardingArray{{}}, sharding.getGridAttr());
      }
      // A group split into non-contiguous blocks (heads split, batch not;
      // the batch split over dp and the sequence over tp) has no collapsed
      // equivalent: its last split dimensions are gathered until the blocks
      // are contiguous (the batch keeps its split), and partitioning
      // reshards around the reshape.
      for (const ReassociationIndices &group : sides.groups)
        for (auto dim = group.rbegin(); dim != group.rend() &&
                                        !isContiguousSplit(sides.fine.getShape(), group,
                                                           *fineAxes, grid.getShape());
             ++dim)
          (*fineAxes)[*dim].clear();
      // The rows of a 2-D matmul's operand (a linear layer's tokens) keep the
      // split of their group's first split dimension only, as they must when that
      // dimension has more than one element per chip: propagation then
      // decides alike whatever the batch per chip. Merged, [B, S] split
      // [[dp], [tp]] with B == dp gives tokens split over both axes, and a
      // tp-split weight's matmul (forward or backward) gathers the weight or
      // the heads instead of the sequence: Megatron's sequence parallelism
      // lost at one sequence per chip. (Attention's [B, H] keeps the merge:
      // its batch matmuls take heads split over tp.)
      if (feedsMatmul(op->getResult(0)) || feedsMatmul(op->getOperand(0)))
        for (const ReassociationIndices &group : sides.groups) {
          bool split = false;
          for (int64_t dim : group) {
            if (split)
              (*fineAxes)[dim].clear();
            split |= !(*fineAxes)[dim].empty();
          }
        }
      shard::removeTrailingEmptySubArray(*fineAxes);
      return shard::ShardingOption(std::move(*fineAxes), sharding.getGridAttr());
    }
    return shard::ShardingOption::makeEmpty();
  }

  FailureOr<std::vector<shard::Sharding>>
  getShardingAnnotations(Operation *op, const shard::ShardingOption &option) const {
    ReshapeSides sides = sidesOf(op);
    SymbolTableCollection symbols;
    shard::GridOp grid = shard::getGridOrNull(op, option.grid, symbols);
    if (!grid)
      return failure();
    DimAxes fineAxes(sides.fine.getRank());
    for (auto [dim, axes] : llvm::enumerate(option.shardingArray))
      fineAxes[dim] = axes;
    std::optional<DimAxes> coarseAxes = collapseSplitAxes(
        sides.fine.getShape(), sides.groups, fineAxes, grid.getShape());
    if (!coarseAxes)
      return failure();
    MLIRContext *ctx = op->getContext();
    shard::Sharding fine = toSharding(ctx, option.grid, fineAxes);
    shard::Sharding coarse = toSharding(ctx, option.grid, *coarseAxes);
    if (sides.fineIndex == 0)
      return std::vector<shard::Sharding>{fine, coarse};
    return std::vector<shard::Sharding>{coarse, fine};
  }

  LogicalResult addShardingAnnotations(Operation *op, OpBuilder &b,
                                       const shard::ShardingOption &option) const {
    FailureOr<std::vector<shard::Sharding>> shardings =
        getShardingAnnotations(op, option);
    if (failed(shardings))
      return failure();
    shard::maybeInsertTargetShardingAnnotation((*shardings)[1], op->getResult(0), b);
    OpBuilder::InsertionGuard guard(b);
    shard::maybeInsertSourceShardingAnnotation((*shardings)[0], op->getOpOperand(0), b);
    return success();
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    ReshapeSides sides = sidesOf(op);
    shard::Sharding operandSharding = operandShardings[0];
    shard::Sharding resultSharding = resultShardings[0];
    shard::GridOp grid =
        shard::getGridOrNull(op, resultSharding.getGridAttr(), symbolTable);
    if (!grid)
      return op->emitOpError("result sharding names no known grid");
    // Partitioning resharded the operand to `operandSharding`; the local
    // reshape is right only if that matches the result's sharding.
    shard::Sharding fine = sides.fineIndex == 0 ? operandSharding : resultSharding;
    shard::Sharding coarse = sides.fineIndex == 0 ? resultSharding : operandSharding;
    std::optional<DimAxes> expected = collapseSplitAxes(
        sides.fine.getShape(), sides.groups,
        padded(fine.getSplitAxes(), sides.fine.getRank()), grid.getShape());
    if (!expected ||
        toSharding(op->getContext(), coarse.getGridAttr(), *expected) != coarse)
      return op->emitOpError("operand and result shardings do not describe the "
                             "same split of the data");
    auto localType = cast<RankedTensorType>(
        shard::shardType(op->getResult(0).getType(), grid, resultSharding));
    Value local;
    if (isa<tensor::ExpandShapeOp>(op))
      local = tensor::ExpandShapeOp::create(builder, op->getLoc(), localType,
                                            partitionedOperands[0], sides.groups);
    else
      local = tensor::CollapseShapeOp::create(builder, op->getLoc(), localType,
                                              partitionedOperands[0], sides.groups);
    partitionMap.map(op->getResult(0), local);
    return success();
  }
};

} // namespace

void nova::registerReshapeShardingModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ExpandShapeOp::attachInterface<
        ReshapeShardingModel<tensor::ExpandShapeOp>>(*ctx);
    tensor::CollapseShapeOp::attachInterface<
        ReshapeShardingModel<tensor::CollapseShapeOp>>(*ctx);
  });
}
