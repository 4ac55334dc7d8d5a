//===- Bufferize.cpp - one-shot bufferize into HBM and SRAM -----*- C++ -*-===//
#include "nova/Tile/Passes.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Bufferize.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Dominance.h"
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

/// The operand where the computation of `value` starts from a fresh tensor:
/// following destination-passing results (a linalg op's tied init, an
/// scf.for's init) back to a function-level `tensor.empty`; null when the
/// chain ends anywhere else.
OpOperand *freshDestination(Value value) {
  while (auto result = dyn_cast<OpResult>(value)) {
    Operation *owner = result.getOwner();
    OpOperand *init = nullptr;
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(owner);
        linalgOp && linalgOp.hasPureTensorSemantics())
      init = linalgOp.getDpsInitOperand(result.getResultNumber());
    else if (auto loop = dyn_cast<scf::ForOp>(owner))
      init = &loop.getInitArgsMutable()[result.getResultNumber()];
    if (!init)
      return nullptr;
    if (auto empty = init->get().getDefiningOp<tensor::EmptyOp>())
      return empty->getParentOfType<scf::ForOp>() ? nullptr : init;
    value = init->get();
  }
  return nullptr;
}

/// A tensor inserted at the origin of a wider one at function level (a
/// matmul operand zero-padded by nova-pad-matmul): where its computation
/// starts from a fresh tensor, it starts from that slice of the wider tensor
/// instead, so that bufferization computes it in place rather than copying
/// it over (the 50257-word LM head's bf16 weight, 77 MB in one DMA that
/// nothing overlapped). Upstream's empty-tensor elimination would also
/// rewrite the empty tiles inside tile loops, which must stay in SRAM.
void computeInPlaceOfPadding(ModuleOp module, RewriterBase &rewriter) {
  SmallVector<tensor::InsertSliceOp> inserts;
  module.walk([&](tensor::InsertSliceOp insert) {
    if (!insert->getParentOfType<scf::ForOp>() &&
        insert.getSourceType().getRank() == insert.getDestType().getRank() &&
        llvm::all_of(insert.getStaticOffsets(),
                     [](int64_t o) { return o == 0; }) &&
        insert.getSourceType().hasStaticShape())
      inserts.push_back(insert);
  });
  DominanceInfo dominance(module);
  for (tensor::InsertSliceOp insert : inserts) {
    OpOperand *init = freshDestination(insert.getSource());
    if (!init || !dominance.properlyDominates(insert.getDest(), init->getOwner()))
      continue;
    rewriter.setInsertionPoint(init->getOwner());
    init->set(tensor::ExtractSliceOp::create(
        rewriter, insert.getLoc(), insert.getSourceType(), insert.getDest(),
        insert.getMixedOffsets(), insert.getMixedSizes(),
        insert.getMixedStrides()));
    // Readers after the insertion read the same values from the wider
    // tensor: one-shot bufferization would otherwise count the insertion
    // as a write between the computation and those reads, and copy (the
    // LM head's dX = dY W reads the bf16 weight after the forward).
    Value source = insert.getSource();
    rewriter.setInsertionPointAfter(insert);
    Value later;
    for (OpOperand &use : llvm::make_early_inc_range(source.getUses())) {
      if (use.getOwner() == insert ||
          !dominance.properlyDominates(insert.getOperation(), use.getOwner()))
        continue;
      if (!later)
        later = tensor::ExtractSliceOp::create(
            rewriter, insert.getLoc(), insert.getSourceType(),
            insert.getResult(), insert.getMixedOffsets(),
            insert.getMixedSizes(), insert.getMixedStrides());
      use.set(later);
    }
  }
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

    // After the folds above: they would fold a reader's slice of the padded
    // tensor back into the value inserted there.
    IRRewriter rewriter(ctx);
    computeInPlaceOfPadding(module, rewriter);

    // Temporaries created inside a tile loop, or private to the fused ops
    // of one block, live in SRAM.
    TargetAttr target = lookupTarget(module);
    int64_t budget = target ? target.getSramBytes() / 8 : 0;
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
