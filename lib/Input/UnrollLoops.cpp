//===- UnrollLoops.cpp - unroll torch-mlir's scf.for loops ------*- C++ -*-===//
//
// torch-mlir lowers a few ops (det, slogdet, stft) to scf.for loops over
// tensors. The tile pipeline takes straight-line programs, so a loop with a
// constant trip count is unrolled completely; the induction variable becomes
// a constant in each copy, and canonicalization then folds the slices whose
// sizes depended on it into static shapes. Functions without loops are left
// untouched (no canonicalization runs on them here).
//
//===----------------------------------------------------------------------===//
#include "nova/Input/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "nova-unroll-loops"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAUNROLLLOOPS
#include "nova/Input/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// Every loaded dialect's and op's canonicalization patterns, as the
/// canonicalizer collects them.
FrozenRewritePatternSet canonicalizationPatterns(MLIRContext *ctx) {
  RewritePatternSet patterns(ctx);
  for (Dialect *dialect : ctx->getLoadedDialects())
    dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName op : ctx->getRegisteredOperations())
    op.getCanonicalizationPatterns(patterns, ctx);
  return FrozenRewritePatternSet(std::move(patterns));
}

struct UnrollLoopsPass
    : public nova::impl::NovaUnrollLoopsBase<UnrollLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // Innermost loops first: an outer loop's body is then straight-line.
    SmallVector<scf::ForOp> loops;
    // A loop over layers (nova-roll-layers) stays a loop.
    fn.walk<WalkOrder::PostOrder>([&](scf::ForOp loop) {
      if (!loop->hasAttr(nova::NovaDialect::LayersAttrHelper::getNameStr()))
        loops.push_back(loop);
    });
    bool ok = true;
    for (scf::ForOp loop : loops) {
      std::optional<APInt> trips = loop.getStaticTripCount();
      if (!trips) {
        loop.emitError() << "'scf.for' with a trip count that is not a "
                            "constant; nova unrolls loops of constant trip "
                            "count only";
        ok = false;
        continue;
      }
      if (trips->getZExtValue() > static_cast<uint64_t>(maxIterations)) {
        loop.emitError() << "'scf.for' with " << trips->getZExtValue()
                         << " iterations; nova unrolls loops of at most "
                         << static_cast<int64_t>(maxIterations) << " (max-iterations)";
        ok = false;
        continue;
      }
      if (failed(loopUnrollFull(loop))) {
        loop.emitError("'scf.for' could not be unrolled");
        ok = false;
        continue;
      }
      ++numUnrolled;
    }
    // Other scf ops (while, if, forall) have no lowering either.
    fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (!isa_and_nonnull<scf::SCFDialect>(op->getDialect()) ||
          isa<scf::YieldOp, scf::ForOp>(op))
        return WalkResult::advance();
      op->emitError() << "'" << op->getName()
                      << "' has no nova lowering; only scf.for loops of "
                         "constant trip count are taken (unrolled)";
      ok = false;
      return WalkResult::skip(); // its regions' ops need no second error
    });
    if (!ok)
      return signalPassFailure();
    if (numUnrolled == 0)
      return;
    if (failed(applyPatternsGreedily(fn, canonicalizationPatterns(&getContext()))))
      return signalPassFailure();
  }
};

} // namespace
