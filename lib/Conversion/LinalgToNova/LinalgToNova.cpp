//===- LinalgToNova.cpp - the convert-linalg-to-nova pass -------*- C++ -*-===//
#include "nova/Dialect/Nova/IR/NovaAttentionTrainOps.h"
#include "nova/Conversion/LinalgToNova/LinalgToNova.h"
#include "Patterns.h"
#include "nova/Conversion/Passes.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Rewrite/PatternApplicator.h"

#define DEBUG_TYPE "convert-linalg-to-nova"

namespace mlir::nova {
#define GEN_PASS_DEF_CONVERTLINALGTONOVA
#include "nova/Conversion/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

void mlir::nova::populateLinalgToNovaPatterns(RewritePatternSet &patterns,
                                              TargetAttr target) {
  lowering::populateAttentionToNovaPatterns(patterns, target);
  lowering::populateAttentionBackwardToNovaPatterns(patterns, target);
  lowering::populateScatterToNovaPatterns(patterns, target);
  lowering::populateMatmulToNovaPatterns(patterns, target);
  lowering::populateGenericToNovaPatterns(patterns);
  lowering::populateNamedOpsToNovaPatterns(patterns);
}

std::string mlir::nova::whyNotLowerableToNova(Operation *op) {
  if (isa<linalg::GenericOp>(op))
    return lowering::whyGenericNotLowerable(op);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    if (!linalgOp.hasPureBufferSemantics())
      return "it still works on tensors (run nova-tile and nova-bufferize "
             "first)";
    if (auto matmul = dyn_cast<linalg::MatmulOp>(op))
      return lowering::whyMatmulNotLowerable(matmul);
    if (isa<linalg::BatchMatmulOp, linalg::FillOp,
            linalg::TransposeOp, linalg::CopyOp>(op))
      return "";
    return "'" + op->getName().getStringRef().str() +
           "' has no nova lowering";
  }
  return "";
}

namespace {
/// A PatternRewriter for driving patterns op by op.
struct DirectRewriter : public PatternRewriter {
  explicit DirectRewriter(MLIRContext *ctx) : PatternRewriter(ctx) {}
};

struct ConvertLinalgToNovaPass
    : public nova::impl::ConvertLinalgToNovaBase<ConvertLinalgToNovaPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    TargetAttr target = lookupTarget(func);
    if (!target) {
      func.emitError() << "convert-linalg-to-nova needs a #nova.target on the "
                          "module; run --nova-attach-target first";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    DirectRewriter rewriter(ctx);

    // Named elementwise/reduction ops go through their generic form.
    SmallVector<linalg::LinalgOp> named;
    func.walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::GenericOp, linalg::MatmulOp, linalg::BatchMatmulOp,
               linalg::FillOp, linalg::TransposeOp, linalg::CopyOp>(op) &&
          !linalg::isaContractionOpInterface(op))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      (void)linalg::generalizeNamedOp(rewriter, op);
    }

    // Every op that must go, with a reason when it cannot.
    SmallVector<Operation *> ops;
    bool failedAny = false;
    func.walk([&](Operation *op) {
      if (!isa<linalg::LinalgOp, memref::CopyOp, AttentionOp, AttentionLseOp,
               AttentionBackwardOp, ScatterAddOp>(op))
        return;
      std::string why = whyNotLowerableToNova(op);
      if (!why.empty()) {
        op->emitOpError() << "cannot be lowered to nova: " << why;
        failedAny = true;
        return;
      }
      ops.push_back(op);
    });
    if (failedAny)
      return signalPassFailure();

    RewritePatternSet patterns(ctx);
    populateLinalgToNovaPatterns(patterns, target);
    FrozenRewritePatternSet frozen(std::move(patterns));
    PatternApplicator applicator(frozen);
    applicator.applyDefaultCostModel();
    // Bottom-up, so that an op still sees the fill that initialised its
    // output (and can fold it) before that fill is lowered.
    llvm::SmallPtrSet<Operation *, 8> erased;
    for (Operation *op : llvm::reverse(ops)) {
      if (erased.contains(op))
        continue;
      // Fills folded into their consumer are erased by it.
      struct Listener : public RewriterBase::Listener {
        llvm::SmallPtrSetImpl<Operation *> &erased;
        Listener(llvm::SmallPtrSetImpl<Operation *> &e) : erased(e) {}
        void notifyOperationErased(Operation *op) override { erased.insert(op); }
      } listener(erased);
      rewriter.setListener(&listener);
      if (failed(applicator.matchAndRewrite(op, rewriter))) {
        op->emitOpError() << "failed to lower to nova";
        failedAny = true;
      } else {
        ++numConverted;
      }
      rewriter.setListener(nullptr);
    }
    if (failedAny)
      return signalPassFailure();
    func.walk([&](Operation *op) {
      if (isa<DmaStartOp>(op))
        ++numDmas;
      else if (isa<MatmulOp>(op))
        ++numMatmuls;
    });
  }
};
} // namespace
