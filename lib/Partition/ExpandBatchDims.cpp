//===- ExpandBatchDims.cpp - a loop per batch dimension ---------*- C++ -*-===//
//
// nova-expand-batch-dims:
//   linalg.batch_matmul on [B*H, M, K] x [B*H, K, N] (collapsed batch)
// ->
//   linalg.generic on [B, H, M, K] x [B, H, K, N] (one loop per batch dim),
// so that sharding can split H alone (operands narrower than the result,
// bf16 accumulated in f32, extended in the body). Its inverse, for the
// single-chip pipeline, is nova-collapse-batch-dims (lib/Normalize).
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "nova/Utils/BatchMatmul.h"

#define DEBUG_TYPE "nova-expand-batch-dims"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAEXPANDBATCHDIMS
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The source of `value` when it collapses leading batch dimensions (and
/// nothing else) of a static rank-4+ tensor; null otherwise.
tensor::CollapseShapeOp batchCollapse(Value value) {
  auto collapse = value.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || !collapse.getSrcType().hasStaticShape())
    return nullptr;
  int64_t batchDims = collapse.getSrcType().getRank() - 2;
  if (batchDims < 2 || collapse.getReassociationIndices() != nova::batchGroups(batchDims))
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
  Value collapsed =
      tensor::CollapseShapeOp::create(rewriter, loc, op.getResultTypes()[0],
                                      transposed->getResult(0), nova::batchGroups(batchDims));
  rewriter.replaceOp(op, collapsed);
  return true;
}

/// `elementwise(collapse(x))` -> `collapse(elementwise(x))` for a unary
/// elementwise generic (identity maps, no linalg.index) reading a batch
/// collapse: under autocast the f32 scores of q @ k^T are rounded to bf16
/// on the collapsed [B*H, S, S] tensor before their view back to
/// [B, H, S, S], and the collapse must reach that view to fold away (else
/// sharding gathers the heads to form B*H).
bool sinkCollapseBelowElementwise(IRRewriter &rewriter, linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumResults() != 1 || op.getNumLoops() != op.getNumParallelLoops() ||
      !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }) ||
      !op.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  tensor::CollapseShapeOp collapse = batchCollapse(op.getDpsInputs()[0]);
  if (!collapse)
    return false;
  RankedTensorType srcType = collapse.getSrcType();
  auto resultType = cast<RankedTensorType>(op.getResultTypes()[0]);
  auto expandedType = RankedTensorType::get(srcType.getShape(), resultType.getElementType());
  SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  Value init = tensor::ExpandShapeOp::create(rewriter, loc, expandedType, op.getDpsInits()[0],
                                             groups);
  int64_t rank = srcType.getRank();
  SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(rewriter, loc, TypeRange{expandedType},
                                           ValueRange{collapse.getSrc()}, ValueRange{init}, maps,
                                           iterators);
  rewriter.inlineRegionBefore(op.getRegion(), generic.getRegion(), generic.getRegion().end());
  Value collapsed =
      tensor::CollapseShapeOp::create(rewriter, loc, resultType, generic.getResult(0), groups);
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
      // Mixed precision (bf16 operands accumulated in f32, as autocast's
      // attention gives) is the same contraction with the operands extended
      // in the body, as the named op's semantics extend them.
      auto widens = [&](Type element) {
        auto from = dyn_cast<FloatType>(element);
        auto to = cast<FloatType>(resultType.getElementType());
        return from && (from == to || from.getWidth() < to.getWidth());
      };
      if (rhsType.getRank() != lhsType.getRank() ||
          lhsType.getShape().take_front(batchDims) !=
              rhsType.getShape().take_front(batchDims) ||
          !widens(lhsType.getElementType()) || !widens(rhsType.getElementType()))
        continue;

      Location loc = op.getLoc();
      rewriter.setInsertionPoint(op);
      SmallVector<int64_t> shape(lhsType.getShape().take_front(batchDims));
      shape.append({resultType.getDimSize(1), resultType.getDimSize(2)});
      auto expandedType = RankedTensorType::get(shape, resultType.getElementType());
      SmallVector<ReassociationIndices> groups = nova::batchGroups(batchDims);
      Value init = tensor::ExpandShapeOp::create(rewriter, loc, expandedType,
                                                 op.getOutputs()[0], groups);
      SmallVector<utils::IteratorType> iterators(batchDims + 2,
                                                 utils::IteratorType::parallel);
      iterators.push_back(utils::IteratorType::reduction);
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{expandedType},
          ValueRange{lhs.getSrc(), rhs.getSrc()}, ValueRange{init},
          nova::contractionMaps(ctx, batchDims), iterators,
          [](OpBuilder &b, Location l, ValueRange args) {
            Type acc = args[2].getType();
            auto extend = [&](Value v) -> Value {
              if (v.getType() == acc)
                return v;
              return arith::ExtFOp::create(b, l, acc, v);
            };
            Value product = arith::MulFOp::create(b, l, extend(args[0]), extend(args[1]));
            Value sum = arith::AddFOp::create(b, l, args[2], product);
            linalg::YieldOp::create(b, l, sum);
          });
      Value collapsed = tensor::CollapseShapeOp::create(
          rewriter, loc, resultType, generic.getResult(0), groups);
      rewriter.replaceOp(op, collapsed);
      ++numExpanded;
    }
    // Casts of the expanded results (autocast's), in program order so that
    // a chain of them moves together.
    SmallVector<linalg::GenericOp> elementwise;
    getOperation().walk([&](linalg::GenericOp op) { elementwise.push_back(op); });
    for (linalg::GenericOp op : elementwise)
      sinkCollapseBelowElementwise(rewriter, op);
  }
};

} // namespace
