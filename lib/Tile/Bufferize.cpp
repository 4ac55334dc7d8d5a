//===- Bufferize.cpp - one-shot bufferize into HBM and SRAM -----*- C++ -*-===//
#include "nova/Tile/Passes.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Bufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "nova-bufferize"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVABUFFERIZE
#include "nova/Tile/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

/// True if the tensor created by `empty` only ever feeds computation in its
/// own block: it is (through destination-passing results) read as an input
/// of linalg ops and never returned, yielded, inserted or reshaped. Such a
/// tensor is a temporary between fused ops (e.g. a matmul tile read by its
/// epilogue when one tile covers the whole op and no loop was needed) and
/// can live in SRAM.
bool isBlockLocalTemporary(tensor::EmptyOp empty, int64_t budgetBytes) {
  RankedTensorType type = empty.getType();
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return false;
  int64_t bytes = type.getNumElements() *
                  std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
  if (bytes > budgetBytes)
    return false;
  SmallVector<Value> worklist = {empty.getResult()};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *owner = use.getOwner();
      if (owner->getBlock() != empty->getBlock())
        return false;
      auto linalgOp = dyn_cast<linalg::LinalgOp>(owner);
      if (!linalgOp)
        return false;
      if (linalgOp.isDpsInit(&use))
        worklist.push_back(linalgOp.getTiedOpResult(&use));
    }
  }
  return true;
}

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
    // Upstream's concat bufferization takes no memory space: write each
    // operand into a slice of one destination instead.
    tensor::populateDecomposeTensorConcatPatterns(patterns);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      return signalPassFailure();

    // Temporaries created inside a tile loop, or private to the fused ops
    // of one block, live in SRAM.
    TargetAttr target = lookupTarget(module);
    int64_t budget = target ? target.getSramBytes() / 8 : 0;
    IRRewriter rewriter(ctx);
    module.walk([&](tensor::EmptyOp empty) {
      if (!empty->getParentOfType<scf::ForOp>() &&
          !isBlockLocalTemporary(empty, budget))
        return;
      rewriter.setInsertionPoint(empty);
      auto alloc = rewriter.replaceOpWithNewOp<bufferization::AllocTensorOp>(
          empty, empty.getType(), empty.getDynamicSizes());
      alloc.setMemorySpaceAttr(sram);
      ++numSramTensors;
    });

    // Only a donated argument (nova.aliasing_output) may be written: the
    // runtime keeps every other input in HBM across runs and relies on it.
    for (auto func : module.getOps<func::FuncOp>())
      for (BlockArgument arg : func.getArguments())
        if (isa<TensorType>(arg.getType()) &&
            !func.getArgAttr(arg.getArgNumber(),
                NovaDialect::AliasingOutputAttrHelper::getNameStr()) &&
            !func.getArgAttr(arg.getArgNumber(),
                             bufferization::BufferizationDialect::
                                 kWritableAttrName))
          func.setArgAttr(arg.getArgNumber(),
                          bufferization::BufferizationDialect::kWritableAttrName,
                          BoolAttr::get(ctx, false));

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
