//===- WidenAllReduces.cpp - the nova-widen-all-reduces pass ----*- C++ -*-===//
//
// A sum all-reduced in a narrow float type and then widened (a bias
// gradient under bf16 autocast: each chip's partial sum is bf16, the
// optimizer reads it as f32) is widened first and all-reduced wide, as
// PyTorch's DistributedDataParallel reduces the f32 `.grad` each rank holds:
// the chips' partials are added without another bf16 rounding.
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAWIDENALLREDUCES
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// An elementwise generic that only extends its one input (`arith.extf`).
bool isWidening(linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 || !g.hasPureTensorSemantics() ||
      !llvm::all_of(g.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }) ||
      !llvm::all_of(g.getIteratorTypesArray(), linalg::isParallelIterator))
    return false;
  Block &body = g.getRegion().front();
  auto ext = dyn_cast<arith::ExtFOp>(body.front());
  return body.getOperations().size() == 2 && ext && ext.getIn() == body.getArgument(0) &&
         body.getTerminator()->getOperand(0) == ext.getResult();
}

/// A sum over some of the dimensions of one tensor (a bias gradient: the
/// chip's tokens summed), not a matmul's partial product (tensor
/// parallelism's activations, which PyTorch all-reduces in their own type).
bool isSum(Value v) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  return g && g.getNumDpsInputs() == 1 && g.getNumDpsInits() == 1 &&
         llvm::any_of(g.getIteratorTypesArray(), linalg::isReductionIterator);
}

struct WidenAllReducesPass
    : public nova::impl::NovaWidenAllReducesBase<WidenAllReducesPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<shard::AllReduceOp> reduces;
    getOperation().walk([&](shard::AllReduceOp op) { reduces.push_back(op); });
    for (shard::AllReduceOp reduce : reduces) {
      if (reduce.getReduction() != shard::ReductionKind::Sum || !reduce->hasOneUse())
        continue;
      auto widen = dyn_cast<linalg::GenericOp>(*reduce->user_begin());
      if (!widen || !isWidening(widen) || !isSum(reduce.getInput()))
        continue;
      // The widening moves to the all-reduce's input; its init must be
      // available there.
      Value init = widen.getDpsInits()[0];
      Operation *initDef = init.getDefiningOp();
      if (initDef && initDef->getBlock() == reduce->getBlock() &&
          reduce->isBeforeInBlock(initDef))
        initDef->moveBefore(reduce);
      else if (!initDef || initDef->getBlock() != reduce->getBlock())
        continue;
      rewriter.setInsertionPoint(reduce);
      auto wide = cast<linalg::GenericOp>(rewriter.clone(*widen));
      wide->setOperand(0, reduce.getInput());
      auto reduced = shard::AllReduceOp::create(
          rewriter, reduce.getLoc(), wide->getResult(0).getType(), reduce.getGridAttr(),
          reduce.getGridAxesAttr(), wide->getResult(0), reduce.getReductionAttr());
      rewriter.replaceOp(widen, reduced.getResult());
      rewriter.eraseOp(reduce);
      ++numWidened;
    }
  }
};

} // namespace
