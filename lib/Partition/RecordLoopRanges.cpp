//===- RecordLoopRanges.cpp - loop ranges before partitioning ---*- C++ -*-===//
//
// shard-partition gives a linalg op its chip's slice of the iteration space
// but leaves the `linalg.index` ops of its body alone, so an iota on a split
// dimension (torch.arange, one_hot's class ids, a causal mask's positions)
// counts from 0 on every chip: silently wrong numbers. Two passes bracket
// partitioning: this one, nova-record-loop-ranges, stores each such op's
// global loop ranges; nova-offset-split-indices (OffsetSplitIndices.cpp)
// adds the chip's offset (its coordinate on the split axis, from
// nova.chip_id, x the local range) to each index of a loop that came out
// smaller.
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"
#include "LoopRanges.h"

#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVARECORDLOOPRANGES
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

bool gathers(Operation *op) {
  bool found = false;
  op->walk([&](tensor::ExtractOp) { found = true; });
  return found;
}

/// An op whose body reads linalg.index and gathers nothing: its indices are
/// numbers (an iota). In a gather (`tensor.extract` of a captured tensor) an
/// index may also address the chip's own slice, where it must stay local, so
/// gathers are left as partitioning makes them.
bool computesFromIndices(linalg::LinalgOp op) {
  bool index = false;
  op->walk([&](linalg::IndexOp) { index = true; });
  return index && !gathers(op);
}

/// Whether `gather` reads `source` at position `dim` from the chip's own
/// slice: the captured tensor is annotated split along `dim` (partitioning
/// hands the body its local block). A tensor made inside the gather's body
/// (torch's index tensors) is whole; a captured one without an annotation
/// is taken as split (the indices stay local, as partitioning leaves them).
bool readsLocalSlice(Operation *gather, Value source, unsigned dim) {
  if (gather->isAncestor(source.getParentRegion()->getParentOp()))
    return false;
  auto annotation = source.getDefiningOp<shard::ShardOp>();
  if (!annotation)
    return true;
  ArrayRef<shard::GridAxesAttr> axes = shard::Sharding(annotation.getSharding()).getSplitAxes();
  return dim < axes.size() && !axes[dim].empty();
}

/// Whether `gather` (a linalg op whose body has `tensor.extract`s) uses the
/// values of `operand` to address the chip's own slice of what it reads: they
/// reach (through the body's scalar ops) an index of an extract whose source
/// is split along that position. Indices into a whole (replicated) table,
/// such as the positions of a learned position embedding under sequence
/// parallelism, are global and are not such a use.
bool addressesLocalSlice(linalg::LinalgOp gather, OpOperand &operand) {
  if (!gather.isDpsInput(&operand))
    return true;
  BlockArgument arg = gather.getMatchingBlockArgument(&operand);
  SmallVector<Value> work{arg};
  DenseSet<Value> seen{arg};
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
        unsigned first = extract.getIndices().getBeginOperandIndex();
        if (use.getOperandNumber() >= first &&
            readsLocalSlice(gather, extract.getTensor(),
                            use.getOperandNumber() - first))
          return true;
        continue;
      }
      if (user->getNumRegions() || user->hasTrait<OpTrait::IsTerminator>())
        continue;
      for (Value result : user->getResults())
        if (seen.insert(result).second)
          work.push_back(result);
    }
  }
  return false;
}

/// Whether the indices `op` computes reach a gather that reads the chip's
/// own slice with them: followed through the elementwise and reshaping ops
/// that use them, up to the first reduction or contraction (past which they
/// are no longer positions). Such indices address the chip's slice of what
/// the gather reads (a mask's rows under data parallelism), so they must
/// stay local.
bool feedsGather(linalg::LinalgOp op) {
  SmallVector<Operation *> work{op};
  DenseSet<Operation *> seen{op};
  while (!work.empty() && seen.size() < 64) {
    Operation *current = work.pop_back_val();
    for (OpOperand &use : current->getUses()) {
      Operation *user = use.getOwner();
      if (!seen.insert(user).second)
        continue;
      auto linalgUser = dyn_cast<linalg::LinalgOp>(user);
      if (linalgUser && gathers(user)) {
        if (addressesLocalSlice(linalgUser, use))
          return true;
        continue;
      }
      if (isa<tensor::ExtractOp>(user))
        return true;
      if (linalgUser && (linalgUser.getNumReductionLoops() > 0 ||
                         isa<linalg::ContractionOpInterface>(user)))
        continue;
      work.push_back(user);
    }
  }
  return false;
}

/// The grid axes each loop of `op` is split over, as its sharding
/// annotations say (its results' own annotations, its operands'
/// annotations for users, read through the indexing maps); empty for a
/// loop no annotation splits. On a grid of rank > 1 the ratio of the global
/// to the local range cannot tell the axes apart (2 x 2: dp or tp).
SmallVector<SmallVector<int16_t>> loopAxes(linalg::LinalgOp op) {
  SmallVector<SmallVector<int16_t>> axes(op.getNumLoops());
  auto take = [&](Value sharding, AffineMap map) {
    auto definition = sharding.getDefiningOp<shard::ShardingOp>();
    if (!definition)
      return;
    for (auto [dim, split] : llvm::enumerate(shard::Sharding(definition).getSplitAxes())) {
      if (split.empty() || dim >= map.getNumResults())
        continue;
      auto loop = dyn_cast<AffineDimExpr>(map.getResult(dim));
      if (loop && axes[loop.getPosition()].empty())
        axes[loop.getPosition()].assign(split.asArrayRef().begin(), split.asArrayRef().end());
    }
  };
  for (OpResult result : op->getResults()) {
    if (!result.hasOneUse())
      continue;
    auto annotation = dyn_cast<shard::ShardOp>(*result.getUsers().begin());
    if (annotation && !annotation.getAnnotateForUsers())
      take(annotation.getSharding(), op.getIndexingMapMatchingResult(result));
  }
  for (OpOperand &operand : op->getOpOperands()) {
    auto annotation = operand.get().getDefiningOp<shard::ShardOp>();
    if (annotation && annotation.getAnnotateForUsers())
      take(annotation.getSharding(), op.getMatchingIndexingMap(&operand));
  }
  return axes;
}

struct RecordLoopRangesPass
    : public nova::impl::NovaRecordLoopRangesBase<RecordLoopRangesPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!computesFromIndices(op) || feedsGather(op))
        return;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (llvm::any_of(ranges, ShapedType::isDynamic))
        return;
      MLIRContext *ctx = op->getContext();
      op->setAttr(nova::kLoopRangesAttrName, DenseI64ArrayAttr::get(ctx, ranges));
      SmallVector<Attribute> axes;
      for (ArrayRef<int16_t> loop : loopAxes(op))
        axes.push_back(DenseI16ArrayAttr::get(ctx, loop));
      op->setAttr(nova::kLoopAxesAttrName, ArrayAttr::get(ctx, axes));
      ++numRecorded;
    });
  }
};

} // namespace
