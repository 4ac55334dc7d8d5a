//===- CollapseBatchDims.cpp - batch matmuls as the named op ----*- C++ -*-===//
//
// nova-collapse-batch-dims:
//   linalg.generic on [B, H, M, K] x [B, H, K, N] (one loop per batch dim)
// ->
//   linalg.batch_matmul on [B*H, M, K] x [B*H, K, N] (collapsed batch),
// so that the single-chip pipeline sees the named op it tiles. Its inverse,
// for sharding, is nova-expand-batch-dims (lib/Partition).
//
//===----------------------------------------------------------------------===//
#include "nova/Normalize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "nova/Utils/BatchMatmul.h"

#define DEBUG_TYPE "nova-collapse-batch-dims"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVACOLLAPSEBATCHDIMS
#include "nova/Normalize/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// `value`, or the source of an `arith.extf` of it to `type`.
Value skipExtend(Value value, Type type) {
  if (auto ext = value.getDefiningOp<arith::ExtFOp>())
    if (ext.getType() == type)
      return ext.getIn();
  return value;
}

/// True when `body` is `yield out + in0 * in1` (float), each input
/// optionally extended to the accumulator's type first (mixed precision:
/// what nova-expand-batch-dims writes for bf16 operands and an f32 result,
/// and what batch_matmul's own semantics do).
bool isMulAddBody(Block &body) {
  Value in0 = body.getArgument(0), in1 = body.getArgument(1), out = body.getArgument(2);
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  if (!yield || yield.getNumOperands() != 1)
    return false;
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value product = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if ((add.getLhs() == out) == (add.getRhs() == out))
    return false;
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Type acc = out.getType();
  Value lhs = skipExtend(mul.getLhs(), acc), rhs = skipExtend(mul.getRhs(), acc);
  bool mulOk = (lhs == in0 && rhs == in1) || (lhs == in1 && rhs == in0);
  // Nothing else in the body: the mul, the add and the extensions.
  size_t extends = (lhs != mul.getLhs()) + (rhs != mul.getRhs());
  return mulOk && body.getOperations().size() == 3 + extends;
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
          !llvm::equal(op.getIndexingMapsArray(), nova::contractionMaps(ctx, batchDims)) ||
          !isMulAddBody(*op.getBlock()))
        continue;
      auto resultType = cast<RankedTensorType>(op.getResultTypes()[0]);
      if (!resultType.hasStaticShape())
        continue;
      SmallVector<ReassociationIndices> groups = nova::batchGroups(batchDims);
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
