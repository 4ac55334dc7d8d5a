//===- SequenceParallelEmbedding.cpp - nova-sequence-parallel-embedding ---===//
//
// Megatron's sequence parallelism with a vocabulary-parallel embedding: the
// token ids split along the sequence over the axis that splits the table's
// rows. Propagation cannot keep both splits of the one-hot product (its rows
// by the sequence, its contraction by the vocabulary) and gathers the whole
// [tokens, vocabulary] one-hot; the blocks then run replicated. This pass
// gives the product Megatron's form before propagation: the ids gathered
// over the vocabulary's axes (a few kB), the product a partial sum over them,
// and its output (the embedding's [B, T, D]) annotated as the ids are split,
// which partitioning makes a reduce-scatter; the residual stream after it
// stays split along the sequence.
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"

#include "OneHot.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVASEQUENCEPARALLELEMBEDDING
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using mlir::nova::isElementwiseCast;
using mlir::nova::oneHotIdsOperand;

namespace {

/// `v` through casts: the user annotation it reads, or null.
shard::ShardOp annotationThroughCasts(Value v) {
  while (auto g = v.getDefiningOp<linalg::GenericOp>()) {
    if (!isElementwiseCast(g))
      return nullptr;
    v = g.getDpsInputs()[0];
  }
  auto annotation = v.getDefiningOp<shard::ShardOp>();
  return annotation && annotation.getAnnotateForUsers() ? annotation : nullptr;
}

/// The one `tensor.expand_shape` that `v` reaches through elementwise casts
/// (each value on the way has exactly one such user), or null.
tensor::ExpandShapeOp expandThroughCasts(Value v) {
  while (v) {
    Operation *next = nullptr;
    for (Operation *user : v.getUsers()) {
      auto g = dyn_cast<linalg::GenericOp>(user);
      if (!isa<tensor::ExpandShapeOp>(user) && !isElementwiseCast(g))
        continue;
      if (next && next != user)
        return nullptr;
      next = user;
    }
    if (auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(next))
      return expand;
    v = next ? next->getResult(0) : Value();
  }
  return nullptr;
}

struct SequenceParallelEmbeddingPass
    : public nova::impl::NovaSequenceParallelEmbeddingBase<SequenceParallelEmbeddingPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp mm) { matmuls.push_back(mm); });
    for (linalg::MatmulOp mm : matmuls) {
      if (!mm.hasPureTensorSemantics())
        continue;
      shard::ShardOp table = annotationThroughCasts(mm.getInputs()[1]);
      if (!table)
        continue;
      shard::Sharding tableSharding(table.getSharding());
      ArrayRef<shard::GridAxesAttr> tableAxes = tableSharding.getSplitAxes();
      if (tableAxes.empty() || tableAxes[0].empty())
        continue;
      ArrayRef<shard::GridAxis> vocab = tableAxes[0].asArrayRef();
      OpOperand *idsOperand = oneHotIdsOperand(mm.getInputs()[0]);
      if (!idsOperand)
        continue;
      auto ids = idsOperand->get().getDefiningOp<shard::ShardOp>();
      if (!ids || !ids.getAnnotateForUsers())
        continue;
      shard::Sharding idsSharding(ids.getSharding());
      if (idsSharding.getGridAttr() != tableSharding.getGridAttr())
        continue;
      auto idsType = cast<RankedTensorType>(ids.getType());
      // The ids' splits without the vocabulary's axes.
      MLIRContext *ctx = &getContext();
      SmallVector<shard::GridAxesAttr> gathered, outAxes;
      bool dropped = false;
      for (shard::GridAxesAttr axes : idsSharding.getSplitAxes()) {
        SmallVector<shard::GridAxis> kept;
        for (shard::GridAxis axis : axes.asArrayRef()) {
          if (llvm::is_contained(vocab, axis))
            dropped = true;
          else
            kept.push_back(axis);
        }
        gathered.push_back(shard::GridAxesAttr::get(ctx, kept));
        outAxes.push_back(axes);
      }
      if (!dropped)
        continue;
      // The product's output, through casts, expanded back to [ids..., D].
      // Other users (a training forward returns the cast [B * T, D] it saves
      // for the backward) read it as propagation places it.
      tensor::ExpandShapeOp expand = expandThroughCasts(mm.getResult(0));
      if (!expand)
        continue;
      ArrayRef<int64_t> outShape = expand.getResultType().getShape();
      if (outShape.size() != static_cast<size_t>(idsType.getRank()) + 1 ||
          outShape.drop_back() != idsType.getShape())
        continue;
      while (outAxes.size() < outShape.size())
        outAxes.push_back(shard::GridAxesAttr::get(ctx, ArrayRef<shard::GridAxis>{}));

      // The ids gathered over the vocabulary's axes for the one-hot.
      OpBuilder b(idsOperand->getOwner());
      Location loc = ids.getLoc();
      auto whole = shard::ShardingOp::create(
          b, loc, shard::Sharding::get(idsSharding.getGridAttr(), gathered));
      auto asSplit = shard::ShardOp::create(b, loc, ids.getResult(), ids.getSharding(),
                                            /*annotate_for_users=*/false);
      auto forOneHot = shard::ShardOp::create(b, loc, asSplit.getResult(), whole,
                                              /*annotate_for_users=*/true);
      idsOperand->set(forOneHot.getResult());
      // The embedding's output split as the ids are.
      b.setInsertionPointAfter(expand);
      loc = expand.getLoc();
      auto split = shard::ShardingOp::create(
          b, loc, shard::Sharding::get(idsSharding.getGridAttr(), outAxes));
      auto made = shard::ShardOp::create(b, loc, expand.getResult(), split,
                                         /*annotate_for_users=*/false);
      auto read = shard::ShardOp::create(b, loc, made.getResult(), split,
                                         /*annotate_for_users=*/true);
      expand.getResult().replaceAllUsesExcept(read.getResult(), made);
      ++numEmbeddings;
    }
  }
};

} // namespace
