//===- FuseElementwise.cpp - controlled elementwise fusion ------*- C++ -*-===//
#include "nova/Normalize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "nova-fuse-elementwise"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFUSEELEMENTWISE
#include "nova/Normalize/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// A linalg.generic (never a named op) whose loops are all parallel.
bool isElementwiseGeneric(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic &&
         generic.getNumLoops() == generic.getNumParallelLoops() &&
         generic->getNumResults() == 1;
}

/// Fuse only an elementwise generic producer with a single use into a
/// generic consumer: duplicating work or rewriting named ops (matmul,
/// transpose, broadcast) into generics is never wanted.
bool controlFusion(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  return isElementwiseGeneric(producer) && producer->hasOneUse() &&
         isa<linalg::GenericOp>(fused->getOwner());
}

/// Fold a reshape into a generic by collapsing the generic's loops only
/// when the reshape sits between two generics, the producer elementwise.
/// - consumer generic reading `expand_shape(generic)`: fused is the
///   generic's operand, its producer the expand_shape;
/// - `collapse_shape(generic)` read by a generic: fused is the
///   collapse_shape's operand, its producer the generic.
bool controlReshapeFolding(OpOperand *fused) {
  Operation *owner = fused->getOwner();
  Operation *producer = fused->get().getDefiningOp();
  if (auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(producer)) {
    // Collapsing the consumer onto a contraction's result lets nova-tile
    // fuse the contraction into its epilogue (the reshape moves after it).
    Operation *source = expand.getSrc().getDefiningOp();
    auto contraction = dyn_cast_or_null<linalg::LinalgOp>(source);
    bool fromContraction =
        contraction && linalg::isaContractionOpInterface(contraction);
    return isa<linalg::GenericOp>(owner) &&
           (isElementwiseGeneric(source) ||
            (fromContraction && isElementwiseGeneric(owner))) &&
           expand->hasOneUse();
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(owner))
    return isElementwiseGeneric(producer) && producer->hasOneUse() &&
           llvm::all_of(collapse->getUsers(), [](Operation *user) {
             return isa<linalg::GenericOp>(user);
           });
  return false;
}

/// A fused producer whose payload holds `cf.assert` (torch-mlir's bounds
/// checks of a gather) has side effects, so fusion leaves it behind with its
/// result unused; the consumer it was fused into holds the same checks on the
/// same inputs. Such leftovers are erased; any other generic is kept.
void eraseFusedCheckLeftovers(func::FuncOp func) {
  SmallVector<linalg::GenericOp> generics;
  func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
  auto messages = [](linalg::GenericOp op) {
    llvm::SmallSetVector<StringRef, 4> msgs;
    op.getBody()->walk([&](cf::AssertOp check) { msgs.insert(check.getMsg()); });
    return msgs;
  };
  for (linalg::GenericOp op : generics) {
    if (!op->use_empty() || !op.hasPureTensorSemantics())
      continue;
    auto mine = messages(op);
    if (mine.empty())
      continue;
    bool onlyChecks = llvm::all_of(op.getBody()->without_terminator(), [](Operation &inner) {
      return isa<cf::AssertOp>(inner) || isMemoryEffectFree(&inner);
    });
    if (!onlyChecks)
      continue;
    bool covered = llvm::any_of(generics, [&](linalg::GenericOp other) {
      if (other == op || other->getBlock() != op->getBlock() || other->use_empty())
        return false;
      auto theirs = messages(other);
      return llvm::all_of(mine, [&](StringRef m) { return theirs.contains(m); }) &&
             llvm::all_of(op.getDpsInputs(), [&](Value in) {
               return llvm::is_contained(other.getDpsInputs(), in);
             });
    });
    if (covered)
      op->erase();
  }
}

/// A generic without loops (torch-mlir's reduction of a 0-d tensor) whose
/// payload reads its init reads one value: the init is then an input too.
/// Otherwise fusing it into a consumer keeps its result alive (upstream fusion
/// preserves a producer whose init is read), leaving a generic with several
/// results. (Generics with loops that read their init, such as the running
/// sums over pooling taps, keep it: they update it in place.)
void readZeroDimInitsAsInputs(func::FuncOp func) {
  SmallVector<linalg::GenericOp> generics;
  func.walk([&](linalg::GenericOp op) {
    if (op.hasPureTensorSemantics() && op.getNumLoops() == 0 &&
        llvm::any_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
          return !op.getMatchingBlockArgument(&init).use_empty();
        }))
      generics.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  for (linalg::GenericOp op : generics) {
    SmallVector<Value> inputs = op.getDpsInputs();
    SmallVector<AffineMap> allMaps = op.getIndexingMapsArray();
    SmallVector<AffineMap> maps(allMaps.begin(),
                                allMaps.begin() + op.getNumDpsInputs());
    SmallVector<std::pair<BlockArgument, int64_t>> reads;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      BlockArgument arg = op.getMatchingBlockArgument(&init);
      if (arg.use_empty())
        continue;
      reads.push_back({arg, static_cast<int64_t>(inputs.size())});
      inputs.push_back(init.get());
      maps.push_back(op.getMatchingIndexingMap(&init));
    }
    for (OpOperand &init : op.getDpsInitsMutable())
      maps.push_back(op.getMatchingIndexingMap(&init));
    rewriter.setInsertionPoint(op);
    auto fused = linalg::GenericOp::create(
        rewriter, op.getLoc(), op->getResultTypes(), inputs, op.getDpsInits(),
        maps, op.getIteratorTypesArray());
    rewriter.inlineRegionBefore(op.getRegion(), fused.getRegion(),
                                fused.getRegion().begin());
    Block &body = fused.getRegion().front();
    for (auto [arg, position] : reads) {
      BlockArgument input = body.insertArgument(
          static_cast<unsigned>(position), arg.getType(), arg.getLoc());
      arg.replaceAllUsesWith(input);
    }
    rewriter.replaceOp(op, fused->getResults());
  }
}

int64_t countGenerics(func::FuncOp func) {
  int64_t count = 0;
  func.walk([&](linalg::GenericOp) { ++count; });
  return count;
}

/// `(x >> k) & (2^(w-k) - 1)` with an arithmetic shift is the logical shift
/// `x >>> k`: one ISA op (`shru`) instead of two. torch has no unsigned shift,
/// so every logical shift it traces arrives in this form (the dropout
/// generator's SplitMix64, nova.frontend.random_bits: three per element).
struct MaskedArithmeticShiftIsLogical : OpRewritePattern<arith::AndIOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::AndIOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<IntegerType>(op.getType());
    if (!type)
      return failure();
    unsigned width = type.getWidth();
    for (auto [shifted, masked] : {std::pair{op.getLhs(), op.getRhs()},
                                   std::pair{op.getRhs(), op.getLhs()}}) {
      auto shift = shifted.getDefiningOp<arith::ShRSIOp>();
      APInt amount, mask;
      if (!shift || !matchPattern(shift.getRhs(), m_ConstantInt(&amount)) ||
          !matchPattern(masked, m_ConstantInt(&mask)))
        continue;
      uint64_t k = amount.getZExtValue();
      if (k == 0 || k >= width || mask != APInt::getLowBitsSet(width, width - k))
        continue;
      rewriter.replaceOpWithNewOp<arith::ShRUIOp>(op, shift.getLhs(),
                                                  shift.getRhs());
      return success();
    }
    return failure();
  }
};

/// An elementwise generic that reads only a leading slice of a tensor (a
/// padded matmul's result cut back to its real width, nova-pad-matmul) runs
/// over the whole tensor and its result is sliced instead. With the slice
/// between them nova-tile could not fuse the generic into the matmul's tile
/// loop as its epilogue: the LM head's `logits.float()` at GPT-2's 50257
/// words wrote the [2048 x 50304] f32 product to HBM, read it back and copied
/// it to a [2048 x 50257] tensor (1.2 GB a step). Only a slice that is the
/// tensor's one use and covers all but at most an eighth of it: the padded
/// lanes are computed and dropped, the others are computed as before.
struct SliceAfterElementwise : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!isElementwiseGeneric(op) || op.getNumDpsInputs() == 0 ||
        op.getNumDpsInits() != 1 ||
        !llvm::all_of(op.getIndexingMapsArray(),
                      [](AffineMap map) { return map.isIdentity(); }))
      return failure();
    Value narrow = op.getDpsInputs()[0];
    auto slice = narrow.getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !llvm::all_of(op.getDpsInputs(),
                                [&](Value v) { return v == narrow; }) ||
        !slice.getSource().hasOneUse() ||
        op.payloadUsesValueFromOperand(op.getDpsInitOperand(0)))
      return failure();
    auto sliceType = cast<RankedTensorType>(slice.getType());
    auto wideType = cast<RankedTensorType>(slice.getSource().getType());
    if (!sliceType.hasStaticShape() || !wideType.hasStaticShape() ||
        sliceType.getRank() != wideType.getRank() ||
        !llvm::all_of(slice.getMixedOffsets(),
                      [](OpFoldResult o) { return isZeroInteger(o); }) ||
        !llvm::all_of(slice.getMixedStrides(),
                      [](OpFoldResult s) { return isOneInteger(s); }) ||
        8 * (wideType.getNumElements() - sliceType.getNumElements()) >
            sliceType.getNumElements())
      return failure();
    // The dropped lanes are computed too: nothing there may trap (an
    // integer division by a padded zero).
    for (Operation &inner : op.getBody()->without_terminator())
      if (!isMemoryEffectFree(&inner) ||
          isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
              arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(inner))
        return failure();
    Location loc = op.getLoc();
    auto outType = cast<RankedTensorType>(op->getResult(0).getType());
    Value empty = tensor::EmptyOp::create(rewriter, loc, wideType.getShape(),
                                          outType.getElementType());
    SmallVector<Value> inputs(op.getNumDpsInputs(), slice.getSource());
    auto wide = linalg::GenericOp::create(
        rewriter, loc, TypeRange{empty.getType()}, inputs, ValueRange{empty},
        op.getIndexingMapsArray(), op.getIteratorTypesArray());
    rewriter.cloneRegionBefore(op.getRegion(), wide.getRegion(),
                               wide.getRegion().end());
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, outType, wide.getResult(0), slice.getMixedOffsets(),
        slice.getMixedSizes(), slice.getMixedStrides());
    return success();
  }
};

struct FuseElementwisePass
    : public nova::impl::NovaFuseElementwiseBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    numGenericsBefore += countGenerics(func);
    readZeroDimInitsAsInputs(func);
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, controlFusion);
    patterns.add<MaskedArithmeticShiftIsLogical>(&getContext());
    if (foldReshapes)
      linalg::populateFoldReshapeOpsByCollapsingPatterns(patterns,
                                                        controlReshapeFolding);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, &getContext());
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns,
                                                         &getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();
    // Slices move after the generics that read them once fusion has built
    // those generics (a slice in the middle of a chain would stop it), then
    // the moved generics fuse with any elementwise consumer of the result.
    RewritePatternSet slices(&getContext());
    slices.add<SliceAfterElementwise>(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(slices, controlFusion);
    if (failed(applyPatternsGreedily(func, std::move(slices))))
      return signalPassFailure();
    eraseFusedCheckLeftovers(func);
    numGenericsAfter += countGenerics(func);
  }
};

} // namespace
