//===- Bufferize.cpp - one-shot bufferize into HBM and SRAM -----*- C++ -*-===//
#include "nova/Dialect/Nova/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/Transforms/Bufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "nova-bufferize"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVABUFFERIZE
#include "nova/Dialect/Nova/Transforms/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {
struct BufferizePass : public nova::impl::NovaBufferizeBase<BufferizePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto hbm = MemorySpaceAttr::get(ctx, MemorySpace::HBM);
    auto sram = MemorySpaceAttr::get(ctx, MemorySpace::SRAM);

    // Tile-sized temporaries: extract_slice(tensor.empty) -> tensor.empty.
    RewritePatternSet patterns(ctx);
    tensor::populateFoldTensorEmptyPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();

    // Temporaries created inside a tile loop live in SRAM.
    IRRewriter rewriter(ctx);
    module.walk([&](tensor::EmptyOp empty) {
      if (!empty->getParentOfType<scf::ForOp>())
        return;
      rewriter.setInsertionPoint(empty);
      auto alloc = rewriter.replaceOpWithNewOp<bufferization::AllocTensorOp>(
          empty, empty.getType(), empty.getDynamicSizes());
      alloc.setMemorySpaceAttr(sram);
      ++numSramTensors;
    });

    bufferization::OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(
        bufferization::LayoutMapOption::IdentityLayoutMap);
    options.defaultMemorySpaceFn =
        [hbm](TensorType) -> std::optional<Attribute> { return hbm; };
    options.allowReturnAllocsFromLoops = true;
    bufferization::BufferizationState state;
    bufferization::BufferizationStatistics statistics;
    if (failed(bufferization::runOneShotModuleBufferize(module, options, state,
                                                        &statistics)))
      return signalPassFailure();
    numAllocs += statistics.numBufferAlloc;
    module.walk([&](memref::CopyOp) { ++numCopies; });
  }
};
} // namespace
