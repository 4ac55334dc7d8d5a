//===- FoldTransposeIntoMatmul.cpp - x @ W.T without a copy -----*- C++ -*-===//
#include "nova/Normalize/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "nova-fold-transpose-into-matmul"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFOLDTRANSPOSEINTOMATMUL
#include "nova/Normalize/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The indexing maps of `C[m, n] += A[m, k] * B[n, k]`.
SmallVector<AffineMap> transposedBMaps(MLIRContext *ctx) {
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  return {AffineMap::get(3, 0, {m, k}, ctx), AffineMap::get(3, 0, {n, k}, ctx),
          AffineMap::get(3, 0, {m, n}, ctx)};
}

struct FoldTransposeIntoMatmulPass
    : public nova::impl::NovaFoldTransposeIntoMatmulBase<
          FoldTransposeIntoMatmulPass> {
  using Base::Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    IRRewriter rewriter(ctx);
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    for (linalg::MatmulOp op : matmuls) {
      if (!op.hasPureTensorSemantics() ||
          !llvm::equal(op.getIndexingMapsArray(),
                       linalg::MatmulOp::getDefaultIndexingMaps(ctx)))
        continue;
      auto transpose = op.getInputs()[1].getDefiningOp<linalg::TransposeOp>();
      if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
        continue;
      // Dead users do not count: nova-fold-ext-into-matmul leaves the
      // widening of a bf16 weight (x @ W.T under autocast) unused behind it.
      for (Operation *user : llvm::make_early_inc_range(transpose->getUsers()))
        if (user != op && isOpTriviallyDead(user))
          rewriter.eraseOp(user);
      if (!transpose->hasOneUse())
        continue;
      rewriter.setInsertionPoint(op);
      auto folded = linalg::MatmulOp::create(
          rewriter, op.getLoc(), op.getResultTypes(),
          ValueRange{op.getInputs()[0], transpose.getInput()}, op.getOutputs());
      SmallVector<Attribute> maps;
      for (AffineMap map : transposedBMaps(ctx))
        maps.push_back(AffineMapAttr::get(map));
      folded.setIndexingMapsAttr(ArrayAttr::get(ctx, maps));
      rewriter.replaceOp(op, folded.getResults());
      rewriter.eraseOp(transpose);
      ++numFolded;
    }
  }
};
} // namespace
