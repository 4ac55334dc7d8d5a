//===- CombineAllReduces.cpp - the nova-combine-all-reduces pass -*- C++ -*-===//
//
// all_reduce(a) + all_reduce(b) -> all_reduce(a + b): one collective instead
// of two, for the sums of partial results that tensor parallelism's backward
// makes (the q, k and v input gradients of a Megatron attention block). Under
// sequence parallelism each all-reduced partial is sliced before the sum
// (all_slice(all_reduce(a)) + all_slice(all_reduce(b))): the sum is taken
// whole and sliced once, all_slice(all_reduce(a + b)), which
// nova-form-reduce-scatter then makes one reduce-scatter. Under bf16
// autocast each reduced partial is rounded to bf16 and widened back before
// the sum (`extf(truncf(all_reduce(a)))`, each input gradient a bf16
// tensor); the combined sum is rounded once instead,
// `extf(truncf(all_reduce(a + b)))`, as Megatron's fused QKV projection
// rounds its one input gradient.
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
  // A round trip through a narrower float (`truncf` right after the reduce,
  // `extf` back before the slice), optional: both or neither.
  linalg::GenericOp narrow, widen;
};

/// An elementwise generic whose body is only `Cast` of its one input.
template <typename Cast>
bool isCastOnly(linalg::GenericOp g) {
  if (!g || g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 || g->getNumResults() != 1 ||
      !g.hasPureTensorSemantics() || g.getNumReductionLoops() != 0 ||
      !llvm::all_of(g.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }))
    return false;
  Block &body = *g.getBlock();
  auto cast = dyn_cast<Cast>(&body.front());
  return body.getOperations().size() == 2 && cast &&
         cast->getOperand(0) == body.getArgument(0) &&
         body.getTerminator()->getOperand(0) == cast->getResult(0);
}

FailureOr<Reduced> matchReduced(Value v) {
  Reduced r;
  if (!v.hasOneUse())
    return failure();
  if ((r.slice = v.getDefiningOp<shard::AllSliceOp>())) {
    v = r.slice.getInput();
    if (!v.hasOneUse())
      return failure();
  }
  if (auto widen = v.getDefiningOp<linalg::GenericOp>(); isCastOnly<arith::ExtFOp>(widen)) {
    r.widen = widen;
    v = widen.getDpsInputs()[0];
    if (!v.hasOneUse())
      return failure();
  }
  if (isa_and_present<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(v.getDefiningOp())) {
    r.reshape = v.getDefiningOp();
    v = r.reshape->getOperand(0);
    if (!v.hasOneUse())
      return failure();
  }
  if (r.widen) {
    auto narrow = v.getDefiningOp<linalg::GenericOp>();
    if (!isCastOnly<arith::TruncFOp>(narrow))
      return failure();
    r.narrow = narrow;
    v = narrow.getDpsInputs()[0];
    if (!v.hasOneUse() ||
        getElementTypeOrSelf(v.getType()) != getElementTypeOrSelf(r.widen->getResult(0).getType()))
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
  Operation *reshape = rewriter.clone(*r.reshape, map);
  // Reshaped before the rounding: in the partial's element type.
  Value result = reshape->getResult(0);
  result.setType(cast<RankedTensorType>(result.getType())
                     .clone(getElementTypeOrSelf(partial.getType())));
  return result;
}

/// `like` (a one-cast elementwise generic) applied to `v`, into `element`.
Value castTo(IRRewriter &rewriter, linalg::GenericOp like, Value v, Type element) {
  auto type = cast<RankedTensorType>(v.getType());
  Value init = tensor::EmptyOp::create(rewriter, like.getLoc(), type.getShape(), element);
  AffineMap id = rewriter.getMultiDimIdentityMap(type.getRank());
  Operation *castOp = &like.getBlock()->front();
  auto g = linalg::GenericOp::create(
      rewriter, like.getLoc(), TypeRange{init.getType()}, ValueRange{v}, ValueRange{init},
      ArrayRef<AffineMap>{id, id},
      SmallVector<utils::IteratorType>(type.getRank(), utils::IteratorType::parallel),
      [&](OpBuilder &b, Location loc, ValueRange args) {
        OperationState state(loc, castOp->getName());
        state.addOperands(args[0]);
        state.addTypes(element);
        state.addAttributes(castOp->getAttrs());
        linalg::YieldOp::create(b, loc, b.create(state)->getResult(0));
      });
  return g.getResult(0);
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
    Type t = r.reshape ? r.reshape->getResult(0).getType() : r.reduce.getResult().getType();
    return r.widen ? cast<RankedTensorType>(t).clone(
                         getElementTypeOrSelf(r.widen->getResult(0).getType()))
                   : t;
  };
  if (wholeType(*lhs) != wholeType(*rhs) || bool(lhs->narrow) != bool(rhs->narrow) ||
      (lhs->narrow && getElementTypeOrSelf(lhs->narrow->getResult(0).getType()) !=
                          getElementTypeOrSelf(rhs->narrow->getResult(0).getType())))
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
  if (lhs->narrow) {
    // The sum rounded once, as one input gradient.
    Type narrow = getElementTypeOrSelf(lhs->narrow->getResult(0).getType());
    result = castTo(rewriter, lhs->narrow, result, narrow);
    result = castTo(rewriter, lhs->widen, result,
                    getElementTypeOrSelf(lhs->widen->getResult(0).getType()));
  }
  if (lhs->slice)
    result = shard::AllSliceOp::create(rewriter, lhs->slice.getLoc(), add.getResultTypes()[0],
                                       lhs->slice.getGridAttr(), lhs->slice.getGridAxesAttr(),
                                       result, lhs->slice.getSliceAxisAttr());
  rewriter.replaceOp(add, result);
  for (Reduced r : {*lhs, *rhs}) {
    if (r.slice)
      rewriter.eraseOp(r.slice);
    if (r.widen)
      rewriter.eraseOp(r.widen);
    if (r.reshape)
      rewriter.eraseOp(r.reshape);
    if (r.narrow)
      rewriter.eraseOp(r.narrow);
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
