//===- BatchDims.cpp - batch matmuls with one loop per batch dim -*- C++ -*-===//
//
// nova-expand-batch-dims and its inverse nova-collapse-batch-dims. Both move
// between
//   linalg.batch_matmul on [B*H, M, K] x [B*H, K, N] (collapsed batch)
// and
//   linalg.generic on [B, H, M, K] x [B, H, K, N] (one loop per batch dim),
// the first so that sharding can split H alone, the second so that the
// single-chip pipeline sees the named op it tiles.
//
//===----------------------------------------------------------------------===//
#include "nova/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAEXPANDBATCHDIMS
#define GEN_PASS_DEF_NOVACOLLAPSEBATCHDIMS
#include "nova/Transforms/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// `(b..., m, n, k) -> (b..., m, k), (b..., k, n), (b..., m, n)`.
SmallVector<AffineMap> contractionMaps(MLIRContext *ctx, int64_t batchDims) {
  int64_t loops = batchDims + 3;
  SmallVector<AffineExpr> batch;
  for (int64_t d = 0; d < batchDims; ++d)
    batch.push_back(getAffineDimExpr(d, ctx));
  AffineExpr m = getAffineDimExpr(batchDims, ctx);
  AffineExpr n = getAffineDimExpr(batchDims + 1, ctx);
  AffineExpr k = getAffineDimExpr(batchDims + 2, ctx);
  auto map = [&](AffineExpr a, AffineExpr b) {
    SmallVector<AffineExpr> results(batch);
    results.append({a, b});
    return AffineMap::get(loops, 0, results, ctx);
  };
  return {map(m, k), map(k, n), map(m, n)};
}

/// [[0, ..., batchDims - 1], [batchDims], [batchDims + 1]].
SmallVector<ReassociationIndices> batchGroups(int64_t batchDims) {
  ReassociationIndices batch;
  for (int64_t d = 0; d < batchDims; ++d)
    batch.push_back(d);
  return {batch, {batchDims}, {batchDims + 1}};
}

/// The source of `value` when it collapses leading batch dimensions (and
/// nothing else) of a static rank-4+ tensor; null otherwise.
tensor::CollapseShapeOp batchCollapse(Value value) {
  auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || !collapse.getSrcType().hasStaticShape())
    return nullptr;
  int64_t batchDims = collapse.getSrcType().getRank() - 2;
  if (batchDims < 2 || collapse.getReassociationIndices() != batchGroups(batchDims))
    return nullptr;
  return collapse;
}

/// `transpose(collapse(x))` that keeps the collapsed batch dimension first
/// -> `collapse(transpose(x))`: the backward of attention transposes the
/// saved [B*H, S, D] operands before its batch matmuls, and the collapse
/// must reach the matmul for it to be expanded (else sharding gathers the
/// heads of q, k and v to form B*H).
bool sinkCollapseBelowTranspose(IRRewriter &rewriter, linalg::TransposeOp op) {
  if (!op.hasPureTensorSemantics())
    return false;
  tensor::CollapseShapeOp collapse = batchCollapse(op.getInput());
  ArrayRef<int64_t> perm = op.getPermutation();
  if (!collapse || perm.size() != 3 || perm[0] != 0)
    return false;
  RankedTensorType srcType = collapse.getSrcType();
  int64_t batchDims = srcType.getRank() - 2;
  SmallVector<int64_t> expandedPerm;
  for (int64_t d = 0; d < batchDims; ++d)
    expandedPerm.push_back(d);
  for (int64_t d : perm.drop_front())
    expandedPerm.push_back(batchDims + d - 1);
  SmallVector<int64_t> shape;
  for (int64_t d : expandedPerm)
    shape.push_back(srcType.getDimSize(d));
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value init = tensor::EmptyOp::create(rewriter, loc, shape, srcType.getElementType());
  auto transposed =
      linalg::TransposeOp::create(rewriter, loc, collapse.getSrc(), init, expandedPerm);
  Value collapsed = tensor::CollapseShapeOp::create(
      rewriter, loc, op.getResultTypes()[0], transposed->getResult(0), batchGroups(batchDims));
  rewriter.replaceOp(op, collapsed);
  return true;
}

struct ExpandBatchDimsPass
    : public nova::impl::NovaExpandBatchDimsBase<ExpandBatchDimsPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);
    SmallVector<linalg::TransposeOp> transposes;
    getOperation().walk([&](linalg::TransposeOp op) { transposes.push_back(op); });
    for (linalg::TransposeOp op : transposes)
      if (sinkCollapseBelowTranspose(rewriter, op))
        ++numTransposesSunk;
    SmallVector<linalg::BatchMatmulOp> matmuls;
    getOperation().walk([&](linalg::BatchMatmulOp op) { matmuls.push_back(op); });
    for (linalg::BatchMatmulOp op : matmuls) {
      auto resultType = dyn_cast<RankedTensorType>(op.getResultTypes()[0]);
      if (!op.hasPureTensorSemantics() || !resultType ||
          !isa<FloatType>(resultType.getElementType()) ||
          !llvm::equal(op.getIndexingMapsArray(),
                       linalg::BatchMatmulOp::getDefaultIndexingMaps(ctx)))
        continue;
      tensor::CollapseShapeOp lhs = batchCollapse(op.getInputs()[0]);
      tensor::CollapseShapeOp rhs = batchCollapse(op.getInputs()[1]);
      if (!lhs || !rhs)
        continue;
      RankedTensorType lhsType = lhs.getSrcType(), rhsType = rhs.getSrcType();
      int64_t batchDims = lhsType.getRank() - 2;
      if (rhsType.getRank() != lhsType.getRank() ||
          lhsType.getShape().take_front(batchDims) !=
              rhsType.getShape().take_front(batchDims) ||
          lhsType.getElementType() != resultType.getElementType() ||
          rhsType.getElementType() != resultType.getElementType())
        continue;

      Location loc = op.getLoc();
      rewriter.setInsertionPoint(op);
      SmallVector<int64_t> shape(lhsType.getShape().take_front(batchDims));
      shape.append({resultType.getDimSize(1), resultType.getDimSize(2)});
      auto expandedType = RankedTensorType::get(shape, resultType.getElementType());
      SmallVector<ReassociationIndices> groups = batchGroups(batchDims);
      Value init = tensor::ExpandShapeOp::create(rewriter, loc, expandedType,
                                                 op.getOutputs()[0], groups);
      SmallVector<utils::IteratorType> iterators(batchDims + 2,
                                                 utils::IteratorType::parallel);
      iterators.push_back(utils::IteratorType::reduction);
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{expandedType},
          ValueRange{lhs.getSrc(), rhs.getSrc()}, ValueRange{init},
          contractionMaps(ctx, batchDims), iterators,
          [](OpBuilder &b, Location l, ValueRange args) {
            Value product = arith::MulFOp::create(b, l, args[0], args[1]);
            Value sum = arith::AddFOp::create(b, l, args[2], product);
            linalg::YieldOp::create(b, l, sum);
          });
      Value collapsed = tensor::CollapseShapeOp::create(
          rewriter, loc, resultType, generic.getResult(0), groups);
      rewriter.replaceOp(op, collapsed);
      ++numExpanded;
    }
  }
};

/// True when `body` is `yield out + in0 * in1` (float).
bool isMulAddBody(Block &body) {
  if (body.getOperations().size() != 3)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(&body.front());
  auto add = dyn_cast_if_present<arith::AddFOp>(mul ? mul->getNextNode() : nullptr);
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!mul || !add || !yield || yield.getNumOperands() != 1 ||
      yield.getOperand(0) != add.getResult())
    return false;
  Value in0 = body.getArgument(0), in1 = body.getArgument(1), out = body.getArgument(2);
  bool mulOk = (mul.getLhs() == in0 && mul.getRhs() == in1) ||
               (mul.getLhs() == in1 && mul.getRhs() == in0);
  bool addOk = (add.getLhs() == out && add.getRhs() == mul.getResult()) ||
               (add.getRhs() == out && add.getLhs() == mul.getResult());
  return mulOk && addOk;
}

struct CollapseBatchDimsPass
    : public nova::impl::NovaCollapseBatchDimsBase<CollapseBatchDimsPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      int64_t batchDims = static_cast<int64_t>(op.getNumLoops()) - 3;
      if (batchDims < 2 || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
          !op.hasPureTensorSemantics() ||
          !llvm::equal(op.getIndexingMapsArray(), contractionMaps(ctx, batchDims)) ||
          !isMulAddBody(*op.getBlock()))
        continue;
      auto resultType = cast<RankedTensorType>(op.getResultTypes()[0]);
      if (!resultType.hasStaticShape())
        continue;
      SmallVector<ReassociationIndices> groups = batchGroups(batchDims);
      Location loc = op.getLoc();
      rewriter.setInsertionPoint(op);
      auto collapse = [&](Value v) -> Value {
        return tensor::CollapseShapeOp::create(rewriter, loc, v, groups);
      };
      Value init = collapse(op.getDpsInits()[0]);
      auto matmul = linalg::BatchMatmulOp::create(
          rewriter, loc, TypeRange{init.getType()},
          ValueRange{collapse(op.getDpsInputs()[0]), collapse(op.getDpsInputs()[1])},
          ValueRange{init});
      Value expanded = tensor::ExpandShapeOp::create(
          rewriter, loc, resultType, matmul.getResult(0), groups);
      rewriter.replaceOp(op, expanded);
      ++numCollapsed;
    }
  }
};

} // namespace
