//===- FormReduceScatter.cpp - the nova-form-reduce-scatter pass -*- C++ -*-===//
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFORMREDUCESCATTER
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The chain `all_reduce -> [elementwise generic] -> [expand_shape] ->
/// all_slice`, each link used once.
struct Chain {
  shard::AllReduceOp reduce;
  linalg::GenericOp elementwise; // Optional.
  tensor::ExpandShapeOp expand;  // Optional.
  shard::AllSliceOp slice;
};

/// Whether `op` is elementwise on its input `reduced` (identity maps for it
/// and its single output, all loops parallel).
bool isElementwiseOn(linalg::GenericOp op, Value reduced) {
  if (op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics() ||
      op.getNumReductionLoops() != 0)
    return false;
  AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
  if (!out.isIdentity())
    return false;
  bool found = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (input->get() == reduced) {
      if (!map.isIdentity() || found)
        return false;
      found = true;
    } else if (!map.isProjectedPermutation()) {
      return false;
    }
  }
  return found;
}

FailureOr<Chain> matchChain(shard::AllSliceOp slice) {
  Chain chain;
  chain.slice = slice;
  Value v = slice.getInput();
  if ((chain.expand = v.getDefiningOp<tensor::ExpandShapeOp>())) {
    if (!v.hasOneUse())
      return failure();
    v = chain.expand.getSrc();
  }
  if ((chain.elementwise = v.getDefiningOp<linalg::GenericOp>())) {
    if (!v.hasOneUse() || chain.elementwise->getNumResults() != 1)
      return failure();
    Value reduced;
    for (OpOperand *input : chain.elementwise.getDpsInputOperands())
      if (input->get().getDefiningOp<shard::AllReduceOp>())
        reduced = input->get();
    if (!reduced || !isElementwiseOn(chain.elementwise, reduced))
      return failure();
    v = reduced;
  }
  chain.reduce = v.getDefiningOp<shard::AllReduceOp>();
  if (!chain.reduce || !v.hasOneUse() ||
      chain.reduce.getGridAttr() != slice.getGridAttr() ||
      chain.reduce.getGridAxes() != slice.getGridAxes() ||
      !isa<RankedTensorType>(chain.reduce.getResult().getType()))
    return failure();
  return chain;
}

/// The elementwise op's indexing map of a non-reduced operand, rewritten
/// from the unexpanded loops to the expanded ones; failure when it indexes
/// a loop the expand splits, or the sliced one.
FailureOr<AffineMap> expandedMap(AffineMap map, Chain chain, int64_t rank,
                                 int64_t sliceAxis) {
  SmallVector<AffineExpr> results;
  MLIRContext *ctx = map.getContext();
  for (AffineExpr expr : map.getResults()) {
    unsigned loop = cast<AffineDimExpr>(expr).getPosition();
    int64_t to = loop;
    if (chain.expand) {
      auto groups = chain.expand.getReassociationIndices();
      if (groups[loop].size() != 1)
        return failure();
      to = groups[loop].front();
    }
    if (to == sliceAxis)
      return failure();
    results.push_back(getAffineDimExpr(to, ctx));
  }
  return AffineMap::get(rank, 0, results, ctx);
}

LogicalResult rewrite(Chain chain, IRRewriter &rewriter) {
  shard::AllSliceOp slice = chain.slice;
  auto localType = cast<RankedTensorType>(slice.getResult().getType());
  int64_t rank = localType.getRank();
  int64_t axis = slice.getSliceAxis().getSExtValue();

  // Check the elementwise op's other operands before touching anything.
  SmallVector<AffineMap> maps;
  if (linalg::GenericOp g = chain.elementwise) {
    for (OpOperand *input : g.getDpsInputOperands()) {
      if (input->get() == chain.reduce.getResult()) {
        maps.push_back(AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext()));
        continue;
      }
      FailureOr<AffineMap> map = expandedMap(g.getMatchingIndexingMap(input), chain,
                                             rank, axis);
      if (failed(map))
        return failure();
      maps.push_back(*map);
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext()));
  }

  Location loc = slice.getLoc();
  rewriter.setInsertionPoint(slice);
  Value partial = chain.reduce.getInput();
  // The reduced element type: the elementwise op may cast it (the f32
  // partial of a bf16 matmul under autocast, rounded after the reduce).
  Type reducedElement = getElementTypeOrSelf(partial.getType());
  if (tensor::ExpandShapeOp e = chain.expand)
    partial = tensor::ExpandShapeOp::create(rewriter, e.getLoc(),
                                            e.getResultType().clone(reducedElement), partial,
                                            e.getReassociationIndices());
  Value scattered = shard::ReduceScatterOp::create(
      rewriter, chain.reduce.getLoc(), localType.clone(reducedElement),
      chain.reduce.getGridAttr(),
      chain.reduce.getGridAxesAttr(), partial, chain.reduce.getReductionAttr(),
      slice.getSliceAxisAttr());
  Value result = scattered;
  if (linalg::GenericOp g = chain.elementwise) {
    SmallVector<Value> inputs;
    for (OpOperand *input : g.getDpsInputOperands())
      inputs.push_back(input->get() == chain.reduce.getResult() ? scattered : input->get());
    Value init = tensor::EmptyOp::create(rewriter, g.getLoc(), localType.getShape(),
                                         localType.getElementType());
    auto local = linalg::GenericOp::create(
        rewriter, g.getLoc(), TypeRange{localType}, inputs, ValueRange{init}, maps,
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel));
    rewriter.cloneRegionBefore(g.getRegion(), local.getRegion(), local.getRegion().end());
    result = local.getResult(0);
  }
  rewriter.replaceOp(slice, result);
  if (chain.expand)
    rewriter.eraseOp(chain.expand);
  if (chain.elementwise)
    rewriter.eraseOp(chain.elementwise);
  rewriter.eraseOp(chain.reduce);
  return success();
}

struct FormReduceScatterPass
    : public nova::impl::NovaFormReduceScatterBase<FormReduceScatterPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<shard::AllSliceOp> slices;
    getOperation().walk([&](shard::AllSliceOp op) { slices.push_back(op); });
    for (shard::AllSliceOp slice : slices) {
      FailureOr<Chain> chain = matchChain(slice);
      if (succeeded(chain) && succeeded(rewrite(*chain, rewriter)))
        ++numFormed;
    }
  }
};
} // namespace
