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

bool usesIndex(linalg::LinalgOp op) {
  bool found = false;
  op->walk([&](linalg::IndexOp) { found = true; });
  return found;
}

/// Whether `use` addresses a tensor that partitioning split along with the
/// loop: a `tensor.extract` of a value from outside the op (a gather's
/// source) whose indexed dimension has the loop's local size. Such an index
/// must stay local; every other use (the index as a number) wants it global.
bool readsLocalSlice(OpOperand &use, int64_t localSize) {
  auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
  if (!extract || use.getOperandNumber() == 0)
    return false;
  auto type = cast<RankedTensorType>(extract.getTensor().getType());
  return type.getDimSize(use.getOperandNumber() - 1) == localSize;
}

struct RecordLoopRangesPass
    : public nova::impl::NovaRecordLoopRangesBase<RecordLoopRangesPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!usesIndex(op))
        return;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      if (llvm::any_of(ranges, ShapedType::isDynamic))
        return;
      op->setAttr(kRanges, DenseI64ArrayAttr::get(op->getContext(), ranges));
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
      SmallVector<int64_t> local = op.getStaticLoopRanges();
      if (local.size() != global.size())
        return op->emitError("loop count changed across partitioning");
      OpBuilder builder(op);
      Location loc = op->getLoc();
      SmallVector<Value> offsets(local.size());
      for (auto [d, sizes] : llvm::enumerate(llvm::zip(local, global.asArrayRef()))) {
        auto [here, whole] = sizes;
        if (here == whole)
          continue;
        if (!grid || ShapedType::isDynamic(here) || here == 0 || whole % here)
          return op->emitError("cannot place the indices of loop ")
                 << d << " split from " << whole << " to " << here;
        // The mesh axis the loop was split over: the one whose size is the ratio.
        int64_t ratio = whole / here, axis = -1;
        for (auto [a, size] : llvm::enumerate(grid.getShape()))
          if (size == ratio) {
            if (axis >= 0)
              return op->emitError("the indices of loop ")
                     << d << " are split " << ratio
                     << " ways, which more than one mesh axis could have done";
            axis = a;
          }
        if (axis < 0)
          return op->emitError("the indices of loop ")
                 << d << " are split " << ratio << " ways, over several mesh axes";
        // The chip's coordinate on `axis`, row-major as the shard dialect numbers chips.
        int64_t stride = 1;
        for (int64_t later : grid.getShape().drop_front(axis + 1))
          stride *= later;
        auto constant = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(builder, loc, v);
        };
        Value id = nova::ChipIdOp::create(builder, loc, builder.getIndexType());
        Value coord = arith::RemUIOp::create(
            builder, loc, arith::DivUIOp::create(builder, loc, id, constant(stride)),
            constant(ratio));
        offsets[d] = arith::MulIOp::create(builder, loc, coord, constant(here));
      }
      SmallVector<linalg::IndexOp> indices;
      op->walk([&](linalg::IndexOp index) { indices.push_back(index); });
      for (linalg::IndexOp index : indices) {
        int64_t dim = index.getDim();
        Value offset = offsets[dim];
        if (!offset)
          continue;
        OpBuilder b(index->getBlock(), std::next(index->getIterator()));
        auto shifted = arith::AddIOp::create(b, index.getLoc(), index.getResult(), offset);
        index.getResult().replaceUsesWithIf(shifted, [&](OpOperand &use) {
          return use.getOwner() != shifted && !readsLocalSlice(use, local[dim]);
        });
        ++numOffset;
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
