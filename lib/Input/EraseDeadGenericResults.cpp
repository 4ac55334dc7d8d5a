//===- EraseDeadGenericResults.cpp - drop dead generic results --*- C++ -*-===//
#include "nova/Input/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

#define DEBUG_TYPE "nova-erase-dead-generic-results"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAERASEDEADGENERICRESULTS
#include "nova/Input/Passes.h.inc"
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

/// `select(cmpf P(v, out), v, out)` (or its operands swapped in the compare)
/// in a reduction payload: a running maximum (`max` true) or minimum of `v`.
struct SelectExtremum {
  arith::SelectOp select;
  arith::CmpFOp cmp;
  Value value;
  bool max;
};

std::optional<SelectExtremum> matchSelectExtremum(Value yielded, BlockArgument out) {
  auto select = yielded.getDefiningOp<arith::SelectOp>();
  if (!select || select.getFalseValue() != out)
    return std::nullopt;
  auto cmp = select.getCondition().getDefiningOp<arith::CmpFOp>();
  if (!cmp)
    return std::nullopt;
  Value v = select.getTrueValue();
  bool greater;
  switch (cmp.getPredicate()) {
  case arith::CmpFPredicate::OGT:
  case arith::CmpFPredicate::OGE:
  case arith::CmpFPredicate::UGT:
  case arith::CmpFPredicate::UGE:
    greater = true;
    break;
  case arith::CmpFPredicate::OLT:
  case arith::CmpFPredicate::OLE:
  case arith::CmpFPredicate::ULT:
  case arith::CmpFPredicate::ULE:
    greater = false;
    break;
  default:
    return std::nullopt;
  }
  bool max;
  if (cmp.getLhs() == v && cmp.getRhs() == out)
    max = greater;
  else if (cmp.getLhs() == out && cmp.getRhs() == v)
    max = !greater;
  else
    return std::nullopt;
  // The running value feeds the compare and the select only.
  for (Operation *user : out.getUsers())
    if (user != cmp && user != select)
      return std::nullopt;
  return SelectExtremum{select, cmp, v, max};
}

/// The value as the reduction kinds of the vector unit read it:
/// maximumf/minimumf, which propagate NaN as eager's max pooling does (the
/// compare-and-select form skips a NaN).
Value extremum(OpBuilder &b, Location loc, bool max, Value v, Value out) {
  if (max)
    return arith::MaximumFOp::create(b, loc, v, out);
  return arith::MinimumFOp::create(b, loc, v, out);
}

/// A reduction that keeps a running maximum with compare and select becomes
/// a maximumf reduction (adaptive max pooling without its indices).
bool selectToExtremum(linalg::GenericOp op, RewriterBase &rewriter) {
  if (op->getNumResults() != 1 || op.getNumReductionLoops() == 0)
    return false;
  Block *body = op.getBody();
  BlockArgument out = body->getArgument(op.getNumDpsInputs());
  Operation *yield = body->getTerminator();
  std::optional<SelectExtremum> m = matchSelectExtremum(yield->getOperand(0), out);
  if (!m || !isa<FloatType>(out.getType()))
    return false;
  rewriter.setInsertionPoint(m->select);
  Value e = extremum(rewriter, m->select.getLoc(), m->max, m->value, out);
  rewriter.modifyOpInPlace(yield, [&] { yield->setOperand(0, e); });
  rewriter.eraseOp(m->select);
  rewriter.eraseOp(m->cmp);
  return true;
}

/// A maximum and the index of its first occurrence, coupled through one
/// compare (torch-mlir's adaptive max pooling with indices):
///   v' = select(v > out_v, v, out_v); i' = select(v > out_v, idx, out_i)
/// becomes two reductions: the maximum m, then the smallest idx whose v
/// equals m (or is NaN, when m is: eager returns the NaN's index). Eager
/// scans a window in increasing index order, so the smallest index of the
/// maximum is the one it returns.
bool splitArgExtremum(linalg::GenericOp op, RewriterBase &rewriter) {
  if (op->getNumResults() != 2 || op.getNumReductionLoops() == 0 ||
      !op.hasPureTensorSemantics())
    return false;
  for (Operation &inner : op.getBody()->without_terminator())
    if (!isMemoryEffectFree(&inner))
      return false;
  Block *old = op.getBody();
  unsigned numInputs = op.getNumDpsInputs();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  for (unsigned v = 0; v < 2; ++v) {
    unsigned i = 1 - v;
    BlockArgument outV = old->getArgument(numInputs + v);
    BlockArgument outI = old->getArgument(numInputs + i);
    std::optional<SelectExtremum> m =
        matchSelectExtremum(old->getTerminator()->getOperand(v), outV);
    if (!m || !isa<FloatType>(outV.getType()))
      continue;
    auto selectI = old->getTerminator()->getOperand(i).getDefiningOp<arith::SelectOp>();
    auto indexType = dyn_cast<IntegerType>(outI.getType());
    if (!selectI || !indexType || selectI.getCondition() != m->cmp.getResult() ||
        selectI.getFalseValue() != outI || !outI.hasOneUse() ||
        maps[numInputs + v] != maps[numInputs + i])
      continue;
    Value index = selectI.getTrueValue();
    auto cloneBody = [&](OpBuilder &b, IRMapping &mapping) {
      for (Operation &inner : old->without_terminator())
        if (&inner != m->select.getOperation() && &inner != m->cmp.getOperation() &&
            &inner != selectI.getOperation())
          b.clone(inner, mapping);
    };
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    SmallVector<AffineMap> inputMaps(maps.begin(), maps.begin() + numInputs);
    SmallVector<AffineMap> maxMaps = inputMaps;
    maxMaps.push_back(maps[numInputs + v]);
    auto maxOp = linalg::GenericOp::create(
        rewriter, loc, TypeRange{op->getResult(v).getType()}, op.getDpsInputs(),
        ValueRange{op.getDpsInits()[v]}, maxMaps, op.getIteratorTypesArray(),
        [&](OpBuilder &b, Location l, ValueRange args) {
          IRMapping mapping;
          for (unsigned k = 0; k < numInputs; ++k)
            mapping.map(old->getArgument(k), args[k]);
          mapping.map(outV, args.back());
          cloneBody(b, mapping);
          linalg::YieldOp::create(
              b, l, extremum(b, l, m->max, mapping.lookupOrDefault(m->value), args.back()));
        });
    // The index: the smallest idx at which the value is the extremum.
    auto resultType = cast<RankedTensorType>(op->getResult(i).getType());
    Value big = arith::ConstantOp::create(
        rewriter, loc, rewriter.getIntegerAttr(indexType, APInt::getSignedMaxValue(indexType.getWidth())));
    Value empty = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(), indexType);
    Value filled = linalg::FillOp::create(rewriter, loc, big, empty).getResult(0);
    SmallVector<Value> inputs(op.getDpsInputs());
    inputs.push_back(maxOp->getResult(0));
    SmallVector<AffineMap> indexMaps = inputMaps;
    indexMaps.push_back(maps[numInputs + v]);
    indexMaps.push_back(maps[numInputs + i]);
    auto indexOp = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultType}, inputs, ValueRange{filled}, indexMaps,
        op.getIteratorTypesArray(), [&](OpBuilder &b, Location l, ValueRange args) {
          IRMapping mapping;
          for (unsigned k = 0; k < numInputs; ++k)
            mapping.map(old->getArgument(k), args[k]);
          cloneBody(b, mapping);
          Value x = mapping.lookupOrDefault(m->value);
          Value eq = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, x, args[numInputs]);
          // x != x: NaN (the vector unit compares, it has no ordered-ness test).
          Value nan = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, x, x);
          Value hit = arith::OrIOp::create(b, l, eq, nan);
          Value bigIn = arith::ConstantOp::create(
              b, l, b.getIntegerAttr(indexType, APInt::getSignedMaxValue(indexType.getWidth())));
          Value candidate =
              arith::SelectOp::create(b, l, hit, mapping.lookupOrDefault(index), bigIn);
          linalg::YieldOp::create(b, l, Value(arith::MinSIOp::create(b, l, candidate, args.back())));
        });
    SmallVector<Value> replacements(2);
    replacements[v] = maxOp->getResult(0);
    replacements[i] = indexOp->getResult(0);
    rewriter.replaceOp(op, replacements);
    return true;
  }
  return false;
}

/// `v` as sum(coef[d] * linalg.index d) + constant, through index_cast,
/// addi and muli by constants; nullopt for anything else.
struct IndexForm {
  llvm::SmallDenseMap<unsigned, int64_t> coef;
  int64_t constant = 0;
};

std::optional<IndexForm> indexForm(Value v) {
  if (auto cast = v.getDefiningOp<arith::IndexCastOp>())
    return indexForm(cast.getIn());
  if (std::optional<int64_t> c = getConstantIntValue(v)) {
    IndexForm f;
    f.constant = *c;
    return f;
  }
  if (auto index = v.getDefiningOp<linalg::IndexOp>()) {
    IndexForm f;
    f.coef[index.getDim()] = 1;
    return f;
  }
  if (auto add = v.getDefiningOp<arith::AddIOp>()) {
    std::optional<IndexForm> a = indexForm(add.getLhs()), b = indexForm(add.getRhs());
    if (!a || !b)
      return std::nullopt;
    for (auto [d, c] : b->coef)
      a->coef[d] += c;
    a->constant += b->constant;
    return a;
  }
  if (auto mul = v.getDefiningOp<arith::MulIOp>()) {
    std::optional<IndexForm> a = indexForm(mul.getLhs()), b = indexForm(mul.getRhs());
    if (!a || !b || (!a->coef.empty() && !b->coef.empty()))
      return std::nullopt;
    if (!a->coef.empty())
      std::swap(a, b);
    // a is the constant factor.
    for (auto &[d, c] : b->coef)
      c *= a->constant;
    b->constant *= a->constant;
    return b;
  }
  return std::nullopt;
}

/// Whether `idx` is non-negative and strictly increasing in the order the
/// reduction loops visit their iterations (outer to inner), so that the
/// first iteration with some property is the one of smallest idx.
bool increasesWithReduction(linalg::GenericOp op, Value idx) {
  std::optional<IndexForm> form = indexForm(idx);
  if (!form)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t low = form->constant;
  for (auto [d, c] : form->coef)
    if (c < 0 || ShapedType::isDynamic(ranges[d]))
      return false;
  // Inner to outer: each dim's step must exceed everything the dims inside
  // it can add.
  int64_t span = 0;
  for (int64_t d = ranges.size() - 1; d >= 0; --d) {
    if (iterators[d] != utils::IteratorType::reduction || ranges[d] == 1)
      continue;
    int64_t c = form->coef.lookup(d);
    if (c <= span)
      return false;
    span += c * (ranges[d] - 1);
  }
  return low >= 0;
}

/// torch-mlir's "first index where the window value equals its maximum"
/// (adaptive max pooling's indices, from an init of `none` = -1):
///   s = select(cond, idx, out); yield select(out == none, s, out)
/// becomes the smallest idx with cond (a minsi reduction from the integer
/// maximum), then `none` where no iteration matched. Equal when idx grows
/// with the reduction's iteration order and never equals `none`.
bool firstMatchToMinIndex(linalg::GenericOp op, RewriterBase &rewriter) {
  if (op->getNumResults() != 1 || op.getNumReductionLoops() == 0 ||
      !op.hasPureTensorSemantics())
    return false;
  Block *old = op.getBody();
  unsigned numInputs = op.getNumDpsInputs();
  BlockArgument out = old->getArgument(numInputs);
  auto indexType = dyn_cast<IntegerType>(out.getType());
  auto outer = old->getTerminator()->getOperand(0).getDefiningOp<arith::SelectOp>();
  if (!indexType || !outer || outer.getFalseValue() != out)
    return false;
  auto isNone = outer.getCondition().getDefiningOp<arith::CmpIOp>();
  auto inner = outer.getTrueValue().getDefiningOp<arith::SelectOp>();
  if (!isNone || isNone.getPredicate() != arith::CmpIPredicate::eq || !inner ||
      inner.getFalseValue() != out)
    return false;
  Value noneValue = isNone.getLhs() == out ? isNone.getRhs() : isNone.getLhs();
  std::optional<int64_t> none = getConstantIntValue(noneValue);
  auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
  std::optional<int64_t> init =
      fill ? getConstantIntValue(fill.getInputs()[0]) : std::nullopt;
  if (!none || *none >= 0 || !init || *init != *none ||
      (isNone.getLhs() != out && isNone.getRhs() != out))
    return false;
  // The running index feeds these three ops only.
  for (Operation *user : out.getUsers())
    if (user != outer && user != inner && user != isNone)
      return false;
  for (Operation &o : old->without_terminator())
    if (!isMemoryEffectFree(&o))
      return false;
  Value idx = inner.getTrueValue();
  if (!increasesWithReduction(op, idx))
    return false;

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto bigAttr = rewriter.getIntegerAttr(
      indexType, APInt::getSignedMaxValue(indexType.getWidth()));
  Value big = arith::ConstantOp::create(rewriter, loc, bigAttr);
  Value empty = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(), indexType);
  Value filled = linalg::FillOp::create(rewriter, loc, big, empty).getResult(0);
  auto minOp = linalg::GenericOp::create(
      rewriter, loc, TypeRange{resultType}, op.getDpsInputs(), ValueRange{filled},
      op.getIndexingMapsArray(), op.getIteratorTypesArray(),
      [&](OpBuilder &b, Location l, ValueRange args) {
        IRMapping mapping;
        for (unsigned k = 0; k < numInputs; ++k)
          mapping.map(old->getArgument(k), args[k]);
        for (Operation &o : old->without_terminator())
          if (&o != outer.getOperation() && &o != inner.getOperation() &&
              &o != isNone.getOperation())
            b.clone(o, mapping);
        Value bigIn = arith::ConstantOp::create(b, l, bigAttr);
        Value candidate = arith::SelectOp::create(
            b, l, mapping.lookupOrDefault(inner.getCondition()),
            mapping.lookupOrDefault(idx), bigIn);
        linalg::YieldOp::create(
            b, l, Value(arith::MinSIOp::create(b, l, candidate, args.back())));
      });
  // No match: `none`.
  AffineMap id = rewriter.getMultiDimIdentityMap(resultType.getRank());
  SmallVector<utils::IteratorType> parallel(resultType.getRank(),
                                            utils::IteratorType::parallel);
  Value outEmpty = tensor::EmptyOp::create(rewriter, loc, resultType.getShape(), indexType);
  auto noneOp = linalg::GenericOp::create(
      rewriter, loc, TypeRange{resultType}, minOp->getResults(), ValueRange{outEmpty},
      ArrayRef<AffineMap>{id, id}, parallel,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value bigIn = arith::ConstantOp::create(b, l, bigAttr);
        Value noneIn = arith::ConstantOp::create(
            b, l, b.getIntegerAttr(indexType, *none));
        Value missed = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, args[0], bigIn);
        linalg::YieldOp::create(
            b, l, Value(arith::SelectOp::create(b, l, missed, noneIn, args[0])));
      });
  rewriter.replaceOp(op, noneOp->getResults());
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
      split |= splitArgExtremum(op, rewriter) || splitIndependentResults(op, rewriter);
    SmallVector<linalg::GenericOp> single;
    func.walk([&](linalg::GenericOp op) { single.push_back(op); });
    for (linalg::GenericOp op : single)
      (void)(selectToExtremum(op, rewriter) || firstMatchToMinIndex(op, rewriter));
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
