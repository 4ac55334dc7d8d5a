//===- FoldExtIntoMatmul.cpp - bf16/f16 matmuls at their own rate -*- C++ -*-===//
#include "nova/Normalize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "nova-fold-ext-into-matmul"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFOLDEXTINTOMATMUL
#include "nova/Normalize/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The narrow-float tensor that `v` widens to f32 with an elementwise
/// `arith.extf` generic (identity maps, nothing else in the body), or null.
Value narrowSource(Value v) {
  auto generic = v.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 || generic->getNumResults() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return Value();
  Block *body = generic.getBody();
  if (body->getOperations().size() != 2)
    return Value();
  auto ext = dyn_cast<arith::ExtFOp>(body->front());
  if (!ext || ext.getIn() != body->getArgument(0) ||
      body->getTerminator()->getOperand(0) != ext.getResult() ||
      !ext.getType().isF32())
    return Value();
  Value in = generic.getDpsInputs()[0];
  Type elt = getElementTypeOrSelf(in.getType());
  return (elt.isBF16() || elt.isF16()) ? in : Value();
}

template <typename MatmulTy>
bool fold(IRRewriter &rewriter, MatmulTy op) {
  if (!op.hasPureTensorSemantics())
    return false;
  Value a = narrowSource(op.getInputs()[0]);
  Value b = narrowSource(op.getInputs()[1]);
  if (!a || !b || getElementTypeOrSelf(a.getType()) != getElementTypeOrSelf(b.getType()))
    return false;
  rewriter.setInsertionPoint(op);
  auto narrow = MatmulTy::create(rewriter, op.getLoc(), op.getResultTypes(),
                                 ValueRange{a, b}, op.getOutputs());
  narrow->setAttrs(op->getAttrs());
  rewriter.replaceOp(op, narrow->getResults());
  return true;
}

struct FoldExtIntoMatmulPass
    : public nova::impl::NovaFoldExtIntoMatmulBase<FoldExtIntoMatmulPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      bool folded = false;
      if (auto mm = dyn_cast<linalg::MatmulOp>(op))
        folded = fold(rewriter, mm);
      else if (auto bmm = dyn_cast<linalg::BatchMatmulOp>(op))
        folded = fold(rewriter, bmm);
      numFolded += folded;
    }
  }
};

} // namespace
