//===- CombineAllReduces.cpp - the nova-combine-all-reduces pass -*- C++ -*-===//
//
// all_reduce(a) + all_reduce(b) -> all_reduce(a + b): one collective instead
// of two, for the sums of partial results that tensor parallelism's backward
// makes (the q, k and v input gradients of a Megatron attention block). Under
// sequence parallelism each all-reduced partial is sliced before the sum
// (all_slice(all_reduce(a)) + all_slice(all_reduce(b))): the sum is taken
// whole and sliced once, all_slice(all_reduce(a + b)), which
// nova-form-reduce-scatter then makes one reduce-scatter.
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVACOMBINEALLREDUCES
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// An operand of the add: a sum all-reduce, optionally reshaped by an
/// expand or collapse, optionally sliced (the chip's block of a sequence
/// split), each link used only by the next.
struct Reduced {
  shard::AllReduceOp reduce;
  Operation *reshape = nullptr; // tensor.expand_shape / collapse_shape, optional.
  shard::AllSliceOp slice;      // optional
};

FailureOr<Reduced> matchReduced(Value v) {
  Reduced r;
  if (!v.hasOneUse())
    return failure();
  if ((r.slice = v.getDefiningOp<shard::AllSliceOp>())) {
    v = r.slice.getInput();
    if (!v.hasOneUse())
      return failure();
  }
  if (isa_and_present<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(v.getDefiningOp())) {
    r.reshape = v.getDefiningOp();
    v = r.reshape->getOperand(0);
    if (!v.hasOneUse())
      return failure();
  }
  r.reduce = v.getDefiningOp<shard::AllReduceOp>();
  if (!r.reduce || r.reduce.getReduction() != shard::ReductionKind::Sum ||
      r.reduce.getInput().getType() != r.reduce.getResult().getType())
    return failure();
  return r;
}

/// `yield in0 + in1` over identity maps with every loop parallel.
bool isElementwiseAdd(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      !op.hasPureTensorSemantics() || op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block &body = *op.getBlock();
  if (body.getOperations().size() != 2)
    return false;
  auto add = dyn_cast<arith::AddFOp>(&body.front());
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!add || yield.getOperand(0) != add.getResult())
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1);
  return (add.getLhs() == a && add.getRhs() == b) || (add.getLhs() == b && add.getRhs() == a);
}

/// The partial sum of `r` with `r`'s reshape applied.
Value reshapedPartial(IRRewriter &rewriter, Reduced r) {
  Value partial = r.reduce.getInput();
  if (!r.reshape)
    return partial;
  IRMapping map;
  map.map(r.reshape->getOperand(0), partial);
  return rewriter.clone(*r.reshape, map)->getResult(0);
}

bool combine(IRRewriter &rewriter, linalg::GenericOp add) {
  if (!isElementwiseAdd(add))
    return false;
  FailureOr<Reduced> lhs = matchReduced(add.getDpsInputs()[0]);
  FailureOr<Reduced> rhs = matchReduced(add.getDpsInputs()[1]);
  if (failed(lhs) || failed(rhs) || lhs->reduce == rhs->reduce ||
      lhs->reduce.getGridAttr() != rhs->reduce.getGridAttr() ||
      lhs->reduce.getGridAxes() != rhs->reduce.getGridAxes())
    return false;
  // Both sliced alike, or neither.
  if (bool(lhs->slice) != bool(rhs->slice))
    return false;
  if (lhs->slice && (lhs->slice.getGridAttr() != rhs->slice.getGridAttr() ||
                     lhs->slice.getGridAxes() != rhs->slice.getGridAxes() ||
                     lhs->slice.getSliceAxis() != rhs->slice.getSliceAxis()))
    return false;
  if (lhs->reduce->getBlock() != add->getBlock() || rhs->reduce->getBlock() != add->getBlock())
    return false;
  auto wholeType = [](Reduced r) -> Type {
    return r.reshape ? r.reshape->getResult(0).getType() : r.reduce.getResult().getType();
  };
  if (wholeType(*lhs) != wholeType(*rhs))
    return false;
  // Sum the partials at the add, then reduce (and slice) once.
  rewriter.setInsertionPoint(add);
  Value a = reshapedPartial(rewriter, *lhs), b = reshapedPartial(rewriter, *rhs);
  // Sliced, the sum is of the whole partials: a destination and a result of their shape.
  Value init;
  if (lhs->slice) {
    auto whole = cast<RankedTensorType>(a.getType());
    init = tensor::EmptyOp::create(rewriter, add.getLoc(), whole.getShape(),
                                   whole.getElementType());
  }
  auto summed = cast<linalg::GenericOp>(rewriter.clone(*add));
  summed->setOperand(0, a);
  summed->setOperand(1, b);
  if (init) {
    summed.getDpsInitsMutable()[0].set(init);
    summed->getResult(0).setType(init.getType());
  }
  Value result = shard::AllReduceOp::create(
      rewriter, lhs->reduce.getLoc(), summed->getResult(0).getType(), lhs->reduce.getGridAttr(),
      lhs->reduce.getGridAxesAttr(), summed->getResult(0), lhs->reduce.getReductionAttr());
  if (lhs->slice)
    result = shard::AllSliceOp::create(rewriter, lhs->slice.getLoc(), add.getResultTypes()[0],
                                       lhs->slice.getGridAttr(), lhs->slice.getGridAxesAttr(),
                                       result, lhs->slice.getSliceAxisAttr());
  rewriter.replaceOp(add, result);
  for (Reduced r : {*lhs, *rhs}) {
    if (r.slice)
      rewriter.eraseOp(r.slice);
    if (r.reshape)
      rewriter.eraseOp(r.reshape);
    rewriter.eraseOp(r.reduce);
  }
  return true;
}

struct CombineAllReducesPass
    : public nova::impl::NovaCombineAllReducesBase<CombineAllReducesPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // In program order, so a chain a + b + c folds into one all-reduce.
    SmallVector<linalg::GenericOp> adds;
    getOperation().walk([&](linalg::GenericOp op) { adds.push_back(op); });
    for (linalg::GenericOp add : adds)
      if (combine(rewriter, add))
        ++numCombined;
  }
};
} // namespace
