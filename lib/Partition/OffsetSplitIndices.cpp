//===- OffsetSplitIndices.cpp - linalg.index after partitioning -*- C++ -*-===//
//
// nova-offset-split-indices: after shard-partition, adds each chip's offset
// (its coordinate on the split axis, from nova.chip_id, x the local range)
// to each `linalg.index` of a loop that came out smaller than the global
// range nova-record-loop-ranges stored before it (RecordLoopRanges.cpp says
// why).
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"
#include "LoopRanges.h"

#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "nova-offset-split-indices"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAOFFSETSPLITINDICES
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

struct OffsetSplitIndicesPass
    : public nova::impl::NovaOffsetSplitIndicesBase<OffsetSplitIndicesPass> {
  using Base::Base;
  void runOnOperation() override {
    auto module = getOperation()->getParentOfType<ModuleOp>();
    shard::GridOp grid;
    if (module)
      module.walk([&](shard::GridOp g) { grid = g; });
    WalkResult result = getOperation().walk([&](linalg::LinalgOp op) -> WalkResult {
      auto global = op->getAttrOfType<DenseI64ArrayAttr>(nova::kLoopRangesAttrName);
      if (!global)
        return WalkResult::advance();
      op->removeAttr(nova::kLoopRangesAttrName);
      auto recordedAxes = op->getAttrOfType<ArrayAttr>(nova::kLoopAxesAttrName);
      op->removeAttr(nova::kLoopAxesAttrName);
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
