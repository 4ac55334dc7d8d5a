//===- EraseDeadGenericResults.cpp - drop dead generic results --*- C++ -*-===//
#include "nova/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#define DEBUG_TYPE "nova-erase-dead-generic-results"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAERASEDEADGENERICRESULTS
#include "nova/Transforms/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The payload ops yield operand `result` depends on, in block order, and
/// whether any of them (or the yielded value itself) reads another result's
/// init block argument.
bool sliceOfResult(linalg::GenericOp op, unsigned result,
                   llvm::SetVector<Operation *> &slice) {
  Block *body = op.getBody();
  unsigned ownArg = op.getNumDpsInputs() + result;
  auto readsOtherInit = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == body && arg.getArgNumber() >= op.getNumDpsInputs() &&
           arg.getArgNumber() != ownArg;
  };
  Value yielded = body->getTerminator()->getOperand(result);
  if (readsOtherInit(yielded))
    return false;
  SmallVector<Value> work{yielded};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != body || !slice.insert(def))
      continue;
    for (Value operand : def->getOperands()) {
      if (readsOtherInit(operand))
        return false;
      work.push_back(operand);
    }
  }
  // Block order, so that cloning sees definitions before uses.
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  slice.clear();
  slice.insert(ordered.begin(), ordered.end());
  return true;
}

/// Whether the result's payload slice reads its own init (an accumulator).
bool readsOwnInit(linalg::GenericOp op, unsigned result,
                  const llvm::SetVector<Operation *> &slice) {
  BlockArgument own = op.getBody()->getArgument(op.getNumDpsInputs() + result);
  if (op.getBody()->getTerminator()->getOperand(result) == own)
    return true;
  return llvm::any_of(slice, [&](Operation *inner) {
    return llvm::is_contained(inner->getOperands(), own);
  });
}

/// A result that accumulates nothing (no read of its init) and depends on
/// the loop indices of its own dimensions only, through a projected
/// permutation, is a parallel generic over its own shape: adaptive pooling's
/// window size, recomputed at every reduction step. Returns the position of
/// each loop in the result's map, or nothing.
std::optional<SmallVector<int64_t>>
ownDimsOnly(linalg::GenericOp op, unsigned result,
            const llvm::SetVector<Operation *> &slice) {
  AffineMap map = op.getIndexingMapsArray()[op.getNumDpsInputs() + result];
  if (!map.isProjectedPermutation() || readsOwnInit(op, result, slice))
    return std::nullopt;
  SmallVector<int64_t> position(op.getNumLoops(), -1);
  for (auto [i, expr] : llvm::enumerate(map.getResults()))
    position[cast<AffineDimExpr>(expr).getPosition()] = i;
  for (Operation *inner : slice) {
    for (Value operand : inner->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand); arg && arg.getOwner() == op.getBody())
        return std::nullopt;
    if (auto index = dyn_cast<linalg::IndexOp>(inner))
      if (position[index.getDim()] < 0)
        return std::nullopt;
  }
  return position;
}

/// Whether the loops of `op` all appear in the maps of its inputs and of the
/// init of `result` (so a generic with only those operands has loop bounds).
bool loopsCoveredWithout(linalg::GenericOp op, unsigned result) {
  llvm::SmallBitVector covered(op.getNumLoops());
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (unsigned i = 0; i < op.getNumDpsInputs(); ++i)
    for (AffineExpr e : maps[i].getResults())
      if (auto d = dyn_cast<AffineDimExpr>(e))
        covered.set(d.getPosition());
  for (AffineExpr e : maps[op.getNumDpsInputs() + result].getResults())
    if (auto d = dyn_cast<AffineDimExpr>(e))
      covered.set(d.getPosition());
  return covered.all();
}

/// A generic whose results are computed independently (each from the inputs,
/// the loop indices and its own init only: adaptive pooling's sum and its
/// window size) becomes one generic per result. An accumulating result keeps
/// the loops and inputs; one that depends on its own dimensions only becomes a
/// parallel generic over them.
bool splitIndependentResults(linalg::GenericOp op, RewriterBase &rewriter) {
  unsigned numResults = op->getNumResults();
  if (numResults < 2 || !op.hasPureTensorSemantics())
    return false;
  // Side effects (bounds checks) would be duplicated or lost: keep whole.
  for (Operation &inner : op.getBody()->without_terminator())
    if (!isMemoryEffectFree(&inner))
      return false;
  SmallVector<llvm::SetVector<Operation *>> slices(numResults);
  SmallVector<std::optional<SmallVector<int64_t>>> parallelDims(numResults);
  for (unsigned r = 0; r < numResults; ++r) {
    if (!sliceOfResult(op, r, slices[r]))
      return false;
    parallelDims[r] = ownDimsOnly(op, r, slices[r]);
    bool accumulates = op.getNumReductionLoops() > 0 && readsOwnInit(op, r, slices[r]);
    if (!parallelDims[r] && !(accumulates && loopsCoveredWithout(op, r)))
      return false;
  }

  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<AffineMap> allMaps = op.getIndexingMapsArray();
  SmallVector<AffineMap> inputMaps(allMaps.begin(), allMaps.begin() + numInputs);
  Block *old = op.getBody();
  SmallVector<Value> replacements;
  rewriter.setInsertionPoint(op);
  for (unsigned r = 0; r < numResults; ++r) {
    Value init = op.getDpsInits()[r];
    Value yielded = old->getTerminator()->getOperand(r);
    linalg::GenericOp single;
    if (parallelDims[r]) {
      const SmallVector<int64_t> &position = *parallelDims[r];
      int64_t rank = allMaps[numInputs + r].getNumResults();
      SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
      single = linalg::GenericOp::create(
          rewriter, op.getLoc(), TypeRange{op->getResult(r).getType()}, ValueRange{},
          ValueRange{init},
          ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(rank)}, parallel,
          [&](OpBuilder &b, Location loc, ValueRange) {
            IRMapping mapping;
            for (Operation *inner : slices[r]) {
              if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
                mapping.map(index.getResult(),
                            linalg::IndexOp::create(b, loc, position[index.getDim()]));
                continue;
              }
              b.clone(*inner, mapping);
            }
            linalg::YieldOp::create(b, loc, mapping.lookupOrDefault(yielded));
          });
    } else {
      SmallVector<AffineMap> maps = inputMaps;
      maps.push_back(allMaps[numInputs + r]);
      single = linalg::GenericOp::create(
          rewriter, op.getLoc(), TypeRange{op->getResult(r).getType()},
          op.getDpsInputs(), ValueRange{init}, maps, op.getIteratorTypesArray(),
          [&](OpBuilder &b, Location loc, ValueRange args) {
            IRMapping mapping;
            for (unsigned i = 0; i < numInputs; ++i)
              mapping.map(old->getArgument(i), args[i]);
            mapping.map(old->getArgument(numInputs + r), args.back());
            for (Operation *inner : slices[r])
              b.clone(*inner, mapping);
            linalg::YieldOp::create(b, loc, mapping.lookupOrDefault(yielded));
          });
    }
    replacements.push_back(single->getResult(0));
  }
  rewriter.replaceOp(op, replacements);
  return true;
}

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

    SmallVector<linalg::GenericOp> multi;
    func.walk([&](linalg::GenericOp op) {
      if (op->getNumResults() > 1)
        multi.push_back(op);
    });
    IRRewriter rewriter(func.getContext());
    bool split = false;
    for (linalg::GenericOp op : multi)
      split |= splitIndependentResults(op, rewriter);
    // The split generics carry every input; drop those each one ignores.
    if (split) {
      RewritePatternSet cleanup(&getContext());
      linalg::populateEraseUnusedOperandsAndResultsPatterns(cleanup);
      if (failed(applyPatternsGreedily(func, std::move(cleanup))))
        return signalPassFailure();
    }

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
