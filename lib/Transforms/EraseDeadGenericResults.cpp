//===- EraseDeadGenericResults.cpp - drop dead generic results --*- C++ -*-===//
#include "nova/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "nova-erase-dead-generic-results"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAERASEDEADGENERICRESULTS
#include "nova/Transforms/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

int64_t countGenericResults(func::FuncOp func) {
  int64_t count = 0;
  func.walk([&](linalg::GenericOp op) { count += op->getNumResults(); });
  return count;
}

struct EraseDeadGenericResultsPass
    : public nova::impl::NovaEraseDeadGenericResultsBase<
          EraseDeadGenericResultsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t before = countGenericResults(func);

    // Upstream pattern: drops results with no uses whose payload cycle
    // (out block argument -> op -> yield) feeds nothing else, then the
    // greedy driver erases the payload ops left without uses.
    RewritePatternSet patterns(&getContext());
    linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();

    numErasedResults += before - countGenericResults(func);

    bool failed = false;
    func.walk([&](linalg::GenericOp op) {
      if (op->getNumResults() > 1) {
        op.emitError() << "linalg.generic has " << op->getNumResults()
                       << " live results; nova normal form needs one result "
                          "per generic";
        failed = true;
      }
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
