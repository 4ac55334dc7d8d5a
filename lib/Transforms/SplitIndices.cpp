//===- SplitIndices.cpp - linalg.index across shard-partition -*- C++ -*-===//
//
// shard-partition gives a linalg op its chip's slice of the iteration space
// but leaves the `linalg.index` ops of its body alone, so an iota on a split
// dimension (torch.arange, one_hot's class ids, a causal mask's positions)
// counts from 0 on every chip: silently wrong numbers. These two passes
// bracket partitioning: nova-record-loop-ranges stores each such op's global
// loop ranges; nova-offset-split-indices adds the chip's offset
// (its coordinate on the split axis, from nova.chip_id, x the local range) to each index of a loop that came out
// smaller.
//
//===----------------------------------------------------------------------===//
#include "nova/Transforms/Passes.h"

#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVARECORDLOOPRANGES
#define GEN_PASS_DEF_NOVAOFFSETSPLITINDICES
#include "nova/Transforms/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

// Not `nova.`-prefixed: the nova dialect verifies its own attribute names.
constexpr StringLiteral kRanges = "nova_loop_ranges";
// Per loop, the grid axes its annotations split it over (major first).
constexpr StringLiteral kAxes = "nova_loop_axes";

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
      op->setAttr(kRanges, DenseI64ArrayAttr::get(ctx, ranges));
      SmallVector<Attribute> axes;
      for (ArrayRef<int16_t> loop : loopAxes(op))
        axes.push_back(DenseI16ArrayAttr::get(ctx, loop));
      op->setAttr(kAxes, ArrayAttr::get(ctx, axes));
      ++numRecorded;
    });
  }
};

struct OffsetSplitIndicesPass
    : public nova::impl::NovaOffsetSplitIndicesBase<OffsetSplitIndicesPass> {
  using Base::Base;
  void runOnOperation() override {
    auto module = getOperation()->getParentOfType<ModuleOp>();
    shard::GridOp grid;
    if (module)
      module.walk([&](shard::GridOp g) { grid = g; });
    WalkResult result = getOperation().walk([&](linalg::LinalgOp op) -> WalkResult {
      auto global = op->getAttrOfType<DenseI64ArrayAttr>(kRanges);
      if (!global)
        return WalkResult::advance();
      op->removeAttr(kRanges);
      auto recordedAxes = op->getAttrOfType<ArrayAttr>(kAxes);
      op->removeAttr(kAxes);
      SmallVector<int64_t> local = op.getStaticLoopRanges();
      if (local.size() != global.size())
        return op->emitError("loop count changed across partitioning");
      OpBuilder builder(op);
      Location loc = op->getLoc();
      SmallVector<Value> offsets(local.size());
      auto constant = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(builder, loc, v);
      };
      Value id;
      // The chip's coordinate on grid axis `axis`, row-major as the shard
      // dialect numbers chips.
      auto coordinate = [&](int64_t axis) -> Value {
        if (!id)
          id = nova::ChipIdOp::create(builder, loc, builder.getIndexType());
        int64_t stride = 1;
        for (int64_t later : grid.getShape().drop_front(axis + 1))
          stride *= later;
        return arith::RemUIOp::create(
            builder, loc, arith::DivUIOp::create(builder, loc, id, constant(stride)),
            constant(grid.getShape()[axis]));
      };
      for (auto [d, sizes] : llvm::enumerate(llvm::zip(local, global.asArrayRef()))) {
        auto [here, whole] = sizes;
        if (here == whole)
          continue;
        if (!grid || ShapedType::isDynamic(here) || here == 0 || whole % here)
          return op->emitError("cannot place the indices of loop ")
                 << d << " split from " << whole << " to " << here;
        int64_t ratio = whole / here;
        // The grid axes the loop was split over: as its annotations said,
        // else the one axis whose size is the ratio.
        SmallVector<int64_t> axes;
        if (recordedAxes && d < recordedAxes.size())
          for (int16_t axis : cast<DenseI16ArrayAttr>(recordedAxes[d]).asArrayRef())
            axes.push_back(axis);
        if (!axes.empty()) {
          int64_t chips = 1;
          for (int64_t axis : axes)
            chips *= grid.getShape()[axis];
          if (chips != ratio)
            return op->emitError("the indices of loop ")
                   << d << " are split " << ratio << " ways, but its sharding splits it "
                   << chips << " ways";
        } else {
          for (auto [a, size] : llvm::enumerate(grid.getShape()))
            if (size == ratio) {
              if (!axes.empty())
                return op->emitError("the indices of loop ")
                       << d << " are split " << ratio
                       << " ways, which more than one mesh axis could have done";
              axes.push_back(a);
            }
          if (axes.empty())
            return op->emitError("the indices of loop ")
                   << d << " are split " << ratio << " ways, over several mesh axes";
        }
        // The chip's block along the loop: its coordinates over `axes`, major first.
        Value block = coordinate(axes.front());
        for (int64_t axis : llvm::drop_begin(axes))
          block = arith::AddIOp::create(
              builder, loc,
              arith::MulIOp::create(builder, loc, block, constant(grid.getShape()[axis])),
              coordinate(axis));
        offsets[d] = arith::MulIOp::create(builder, loc, block, constant(here));
      }
      SmallVector<linalg::IndexOp> indices;
      op->walk([&](linalg::IndexOp index) { indices.push_back(index); });
      for (linalg::IndexOp index : indices) {
        Value offset = offsets[index.getDim()];
        if (!offset)
          continue;
        OpBuilder b(index->getBlock(), std::next(index->getIterator()));
        auto shifted = arith::AddIOp::create(b, index.getLoc(), index.getResult(), offset);
        index.getResult().replaceAllUsesExcept(shifted, shifted);
        ++numOffset;
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
