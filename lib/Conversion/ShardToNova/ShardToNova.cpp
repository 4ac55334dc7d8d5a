//===- ShardToNova.cpp - the convert-shard-to-nova pass ---------*- C++ -*-===//
#include "nova/Conversion/ShardToNova/ShardToNova.h"
#include "nova/Conversion/Passes.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Transforms/DialectConversion.h"

#define DEBUG_TYPE "convert-shard-to-nova"

namespace mlir::nova {
#define GEN_PASS_DEF_CONVERTSHARDTONOVA
#include "nova/Conversion/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {
struct ConvertShardToNovaPass
    : public nova::impl::ConvertShardToNovaBase<ConvertShardToNovaPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Diagnose every op that cannot be lowered, at its location, before
    // rewriting anything.
    // Not loaded: the module has no shard op, so there is nothing to do.
    Dialect *shardDialect = getContext().getLoadedDialect<shard::ShardDialect>();
    if (!shardDialect)
      return;
    bool failed = false;
    module.walk([&](Operation *op) {
      if (op->getDialect() != shardDialect)
        return;
      std::string why = whyNotLowerableShardOp(op);
      if (why.empty()) {
        if (!isa<shard::GridOp>(op))
          ++numCollectives;
        return;
      }
      op->emitOpError() << "cannot be lowered to nova: " << why;
      failed = true;
    });
    if (failed)
      return signalPassFailure();

    // Chunks of one all-reduce land in one buffer, before the rest is
    // converted one collective at a time.
    IRRewriter rewriter(&getContext());
    SmallVector<tensor::ConcatOp> concats;
    module.walk([&](tensor::ConcatOp concat) { concats.push_back(concat); });
    for (tensor::ConcatOp concat : concats)
      if (succeeded(lowerConcatenatedAllReduces(rewriter, concat)))
        ++numChunked;

    ConversionTarget target(getContext());
    target.addIllegalDialect<shard::ShardDialect>();
    target.addLegalOp<shard::GridOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    RewritePatternSet patterns(&getContext());
    populateShardToNovaPatterns(patterns);
    if (mlir::failed(
            applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // Nothing refers to the grids any more.
    module.walk([](shard::GridOp grid) { grid.erase(); });
  }
};
} // namespace
