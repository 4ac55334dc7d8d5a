//===- FormReduceScatter.cpp - the nova-form-reduce-scatter pass -*- C++ -*-===//
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFORMREDUCESCATTER
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The chain `all_reduce -> [elementwise generic] -> [expand_shape] ->
/// all_slice`, each link used once.
struct Chain {
  shard::AllReduceOp reduce;
  linalg::GenericOp elementwise; // Optional.
  tensor::ExpandShapeOp expand;  // Optional.
  shard::AllSliceOp slice;
};

/// Whether `op` is elementwise on its input `reduced` (identity maps for it
/// and its single output, all loops parallel).
bool isElementwiseOn(linalg::GenericOp op, Value reduced) {
  if (op.getNumDpsInits() != 1 || !op.hasPureTensorSemantics() ||
      op.getNumReductionLoops() != 0)
    return false;
  AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
  if (!out.isIdentity())
    return false;
  bool found = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (input->get() == reduced) {
      if (!map.isIdentity() || found)
        return false;
      found = true;
    } else if (!map.isProjectedPermutation()) {
      return false;
    }
  }
  return found;
}

FailureOr<Chain> matchChain(shard::AllSliceOp slice) {
  Chain chain;
  chain.slice = slice;
  Value v = slice.getInput();
  if ((chain.expand = v.getDefiningOp<tensor::ExpandShapeOp>())) {
    if (!v.hasOneUse())
      return failure();
    v = chain.expand.getSrc();
  }
  if ((chain.elementwise = v.getDefiningOp<linalg::GenericOp>())) {
    if (!v.hasOneUse() || chain.elementwise->getNumResults() != 1)
      return failure();
    Value reduced;
    for (OpOperand *input : chain.elementwise.getDpsInputOperands())
      if (input->get().getDefiningOp<shard::AllReduceOp>())
        reduced = input->get();
    if (!reduced || !isElementwiseOn(chain.elementwise, reduced))
      return failure();
    v = reduced;
  }
  chain.reduce = v.getDefiningOp<shard::AllReduceOp>();
  if (!chain.reduce || !v.hasOneUse() ||
      chain.reduce.getGridAttr() != slice.getGridAttr() ||
      chain.reduce.getGridAxes() != slice.getGridAxes() ||
      !isa<RankedTensorType>(chain.reduce.getResult().getType()))
    return failure();
  return chain;
}

/// The elementwise op's indexing map of a non-reduced operand, rewritten
/// from the unexpanded loops to the expanded ones; failure when it indexes
/// a loop the expand splits, or the sliced one.
FailureOr<AffineMap> expandedMap(AffineMap map, Chain chain, int64_t rank,
                                 int64_t sliceAxis) {
  SmallVector<AffineExpr> results;
  MLIRContext *ctx = map.getContext();
  for (AffineExpr expr : map.getResults()) {
    unsigned loop = cast<AffineDimExpr>(expr).getPosition();
    int64_t to = loop;
    if (chain.expand) {
      auto groups = chain.expand.getReassociationIndices();
      if (groups[loop].size() != 1)
        return failure();
      to = groups[loop].front();
    }
    if (to == sliceAxis)
      return failure();
    results.push_back(getAffineDimExpr(to, ctx));
  }
  return AffineMap::get(rank, 0, results, ctx);
}

LogicalResult rewrite(Chain chain, IRRewriter &rewriter) {
  shard::AllSliceOp slice = chain.slice;
  auto localType = cast<RankedTensorType>(slice.getResult().getType());
  int64_t rank = localType.getRank();
  int64_t axis = slice.getSliceAxis().getSExtValue();

  // Check the elementwise op's other operands before touching anything.
  SmallVector<AffineMap> maps;
  if (linalg::GenericOp g = chain.elementwise) {
    for (OpOperand *input : g.getDpsInputOperands()) {
      if (input->get() == chain.reduce.getResult()) {
        maps.push_back(AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext()));
        continue;
      }
      FailureOr<AffineMap> map = expandedMap(g.getMatchingIndexingMap(input), chain,
                                             rank, axis);
      if (failed(map))
        return failure();
      maps.push_back(*map);
    }
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext()));
  }

  Location loc = slice.getLoc();
  rewriter.setInsertionPoint(slice);
  Value partial = chain.reduce.getInput();
  // The reduced element type: the elementwise op may cast it (the f32
  // partial of a bf16 matmul under autocast, rounded after the reduce).
  Type reducedElement = getElementTypeOrSelf(partial.getType());
  if (tensor::ExpandShapeOp e = chain.expand)
    partial = tensor::ExpandShapeOp::create(rewriter, e.getLoc(),
                                            e.getResultType().clone(reducedElement), partial,
                                            e.getReassociationIndices());
  Value scattered = shard::ReduceScatterOp::create(
      rewriter, chain.reduce.getLoc(), localType.clone(reducedElement),
      chain.reduce.getGridAttr(),
      chain.reduce.getGridAxesAttr(), partial, chain.reduce.getReductionAttr(),
      slice.getSliceAxisAttr());
  Value result = scattered;
  if (linalg::GenericOp g = chain.elementwise) {
    SmallVector<Value> inputs;
    for (OpOperand *input : g.getDpsInputOperands())
      inputs.push_back(input->get() == chain.reduce.getResult() ? scattered : input->get());
    Value init = tensor::EmptyOp::create(rewriter, g.getLoc(), localType.getShape(),
                                         localType.getElementType());
    auto local = linalg::GenericOp::create(
        rewriter, g.getLoc(), TypeRange{localType}, inputs, ValueRange{init}, maps,
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel));
    rewriter.cloneRegionBefore(g.getRegion(), local.getRegion(), local.getRegion().end());
    result = local.getResult(0);
  }
  rewriter.replaceOp(slice, result);
  if (chain.expand)
    rewriter.eraseOp(chain.expand);
  if (chain.elementwise)
    rewriter.eraseOp(chain.elementwise);
  rewriter.eraseOp(chain.reduce);
  return success();
}

// ---------------------------------------------------------------------------
// Slices hoisted to the all-reduce (sequence parallelism's LayerNorm backward,
// the row-parallel output's bias add and rounding): partitioning leaves an
// all-reduce of the whole [B * S, E] tensor, a chain of elementwise ops, an
// expand to [B, S, E], more elementwise and row-wise ops (the LayerNorm
// backward, some on the whole sequence), and each chip's slice of S taken late,
// sometimes of several values. Every chip then reduces and computes on the
// whole sequence and keeps a quarter.

/// Whether `a` and `b` cut alike (grid, its axes, the sliced dimension).
bool sameCut(shard::AllSliceOp a, shard::AllSliceOp b) {
  return a.getGrid() == b.getGrid() && a.getGridAxes() == b.getGridAxes() &&
         a.getSliceAxis() == b.getSliceAxis();
}

/// The users of `v` when every one is an all_slice cutting alike, else none.
SmallVector<shard::AllSliceOp> uniformSlices(Value v) {
  SmallVector<shard::AllSliceOp> slices;
  for (Operation *user : v.getUsers()) {
    auto s = dyn_cast<shard::AllSliceOp>(user);
    if (!s || (!slices.empty() && !sameCut(s, slices.front())))
      return {};
    slices.push_back(s);
  }
  return slices;
}

/// `type` with dimension `dim` divided by `parts`, or null if it does not divide.
RankedTensorType cutType(Type type, int64_t dim, int64_t parts) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || ranked.isDynamicDim(dim) || ranked.getDimSize(dim) % parts)
    return nullptr;
  SmallVector<int64_t> shape(ranked.getShape());
  shape[dim] /= parts;
  return ranked.clone(shape);
}

/// `slice(g(x, y, ...))` -> `g(slice(x), y, ...)` for the (alike) slices that
/// are all of `g`'s users, so `g` runs on the chip's part only: `g`'s loop
/// along the sliced dimension is parallel, each operand indexes that loop as
/// a plain dimension (sliced there too) or not at all (taken whole), and the
/// body reads no `linalg.index` (the slice would shift it).
LogicalResult hoistThroughGeneric(linalg::GenericOp g, ArrayRef<shard::AllSliceOp> slices,
                                  IRRewriter &rewriter) {
  if (g->getNumResults() != 1 || g.getNumDpsInits() != 1 || !g.hasPureTensorSemantics() ||
      !g.getBody()->getOps<linalg::IndexOp>().empty())
    return failure();
  shard::AllSliceOp first = slices.front();
  int64_t axis = first.getSliceAxis().getSExtValue();
  auto whole = cast<RankedTensorType>(first.getInput().getType());
  auto local = cast<RankedTensorType>(first.getResult().getType());
  if (whole.isDynamicDim(axis) || local.getDimSize(axis) <= 0 ||
      whole.getDimSize(axis) % local.getDimSize(axis))
    return failure();
  int64_t parts = whole.getDimSize(axis) / local.getDimSize(axis);
  AffineMap outMap = g.getIndexingMapMatchingResult(g->getResult(0));
  if (!outMap.isProjectedPermutation())
    return failure();
  unsigned loop = outMap.getDimPosition(axis);
  if (g.getIteratorTypesArray()[loop] != utils::IteratorType::parallel)
    return failure();
  // Per operand (inputs, then the init): the dimension to slice, or -1.
  SmallVector<int64_t> cut;
  SmallVector<RankedTensorType> cutTypes;
  for (OpOperand &operand : g->getOpOperands()) {
    AffineMap map = g.getMatchingIndexingMap(&operand);
    int64_t at = -1;
    for (auto [i, expr] : llvm::enumerate(map.getResults())) {
      if (!expr.isFunctionOfDim(loop))
        continue;
      if (!isa<AffineDimExpr>(expr) || at != -1)
        return failure();
      at = i;
    }
    RankedTensorType type;
    if (at != -1 && !(type = cutType(operand.get().getType(), at, parts)))
      return failure();
    cut.push_back(at);
    cutTypes.push_back(type);
  }
  if (cut.back() != axis)
    return failure();

  rewriter.setInsertionPoint(g);
  Location loc = first.getLoc();
  auto sliced = [&](Value v, int64_t dim, RankedTensorType type) -> Value {
    return shard::AllSliceOp::create(rewriter, loc, type, v, first.getGrid(),
                                     first.getGridAxes(), dim);
  };
  SmallVector<Value> inputs;
  for (OpOperand *input : g.getDpsInputOperands()) {
    int64_t i = input->getOperandNumber();
    inputs.push_back(cut[i] == -1 ? input->get() : sliced(input->get(), cut[i], cutTypes[i]));
  }
  // The init: a fresh (filled) empty tensor of the chip's part, else sliced.
  Value init = g.getDpsInitOperand(0)->get();
  RankedTensorType initType = cutTypes.back();
  Value localInit;
  if (init.getDefiningOp<tensor::EmptyOp>()) {
    localInit = tensor::EmptyOp::create(rewriter, g.getLoc(), initType.getShape(),
                                        initType.getElementType());
  } else if (auto fill = init.getDefiningOp<linalg::FillOp>();
             fill && fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>()) {
    Value empty = tensor::EmptyOp::create(rewriter, g.getLoc(), initType.getShape(),
                                          initType.getElementType());
    localInit = linalg::FillOp::create(rewriter, fill.getLoc(), fill.getInputs()[0], empty)
                    .getResult(0);
  } else {
    localInit = sliced(init, axis, initType);
  }
  auto localOp = linalg::GenericOp::create(rewriter, g.getLoc(), TypeRange{initType}, inputs,
                                           ValueRange{localInit}, g.getIndexingMapsArray(),
                                           g.getIteratorTypesArray());
  rewriter.cloneRegionBefore(g.getRegion(), localOp.getRegion(), localOp.getRegion().end());
  for (shard::AllSliceOp s : slices)
    rewriter.replaceOp(s, localOp.getResult(0));
  rewriter.eraseOp(g);
  return success();
}

/// Whether `g` sums its one input `v` into a zero-filled init along the loop
/// that indexes dimension `axis` of `v` (with any others): a bias gradient.
bool isSumAlong(linalg::GenericOp g, Value v, int64_t axis) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 || g->getNumResults() != 1 ||
      g.getDpsInputOperand(0)->get() != v || !g.hasPureTensorSemantics() ||
      !g.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  AffineMap in = g.getMatchingIndexingMap(g.getDpsInputOperand(0));
  AffineMap out = g.getIndexingMapMatchingResult(g->getResult(0));
  if (!in.isProjectedPermutation() || !out.isProjectedPermutation() ||
      axis >= in.getNumResults())
    return false;
  auto dim = dyn_cast<AffineDimExpr>(in.getResult(axis));
  if (!dim || g.getIteratorTypesArray()[dim.getPosition()] != utils::IteratorType::reduction)
    return false;
  auto fill = g.getDpsInitOperand(0)->get().getDefiningOp<linalg::FillOp>();
  if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
    return false;
  auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  Block *body = g.getBody();
  return add && llvm::range_size(body->without_terminator()) == 1 &&
         ((add.getLhs() == body->getArgument(0) && add.getRhs() == body->getArgument(1)) ||
          (add.getLhs() == body->getArgument(1) && add.getRhs() == body->getArgument(0)));
}

/// The users of `v` when they are alike slices and sums along the sliced
/// dimension (at least one slice); the sums become sums of the chip's slice,
/// all-reduced over the slice's grid axes (Megatron's bias gradient under
/// sequence parallelism), so that only slices use `v`. Else none.
SmallVector<shard::AllSliceOp> slicesAfterSums(Value v, IRRewriter &rewriter) {
  if (!v.getDefiningOp<linalg::GenericOp>() && !v.getDefiningOp<shard::AllReduceOp>())
    return {};
  SmallVector<shard::AllSliceOp> slices;
  SmallVector<linalg::GenericOp> sums;
  for (Operation *user : v.getUsers()) {
    if (auto s = dyn_cast<shard::AllSliceOp>(user)) {
      if (!slices.empty() && !sameCut(s, slices.front()))
        return {};
      slices.push_back(s);
    } else if (auto g = dyn_cast<linalg::GenericOp>(user)) {
      sums.push_back(g);
    } else {
      return {};
    }
  }
  if (slices.empty())
    return {};
  int64_t axis = slices.front().getSliceAxis().getSExtValue();
  for (linalg::GenericOp g : sums)
    if (!isSumAlong(g, v, axis))
      return {};
  for (linalg::GenericOp g : sums) {
    shard::AllSliceOp first = slices.front();
    rewriter.setInsertionPoint(g);
    Value part = shard::AllSliceOp::create(rewriter, first.getLoc(), first.getResult().getType(),
                                           v, first.getGrid(), first.getGridAxes(), axis);
    auto local = cast<linalg::GenericOp>(rewriter.clone(*g));
    local->setOperand(0, part);
    Value sum = shard::AllReduceOp::create(rewriter, g.getLoc(), local->getResult(0).getType(),
                                           first.getGridAttr(), first.getGridAxesAttr(),
                                           local->getResult(0),
                                           shard::ReductionKindAttr::get(
                                               rewriter.getContext(),
                                               shard::ReductionKind::Sum));
    rewriter.replaceOp(g, sum);
    slices.push_back(part.getDefiningOp<shard::AllSliceOp>());
  }
  return slices;
}

/// An all-reduce whose users are all (alike) slices -> one reduce-scatter.
LogicalResult scatterAllReduce(shard::AllReduceOp reduce, ArrayRef<shard::AllSliceOp> slices,
                               IRRewriter &rewriter) {
  shard::AllSliceOp first = slices.front();
  if (reduce.getGridAttr() != first.getGridAttr() ||
      reduce.getGridAxes() != first.getGridAxes())
    return failure();
  rewriter.setInsertionPoint(reduce);
  Value scattered = shard::ReduceScatterOp::create(
      rewriter, reduce.getLoc(), first.getResult().getType(), reduce.getGridAttr(),
      reduce.getGridAxesAttr(), reduce.getInput(), reduce.getReductionAttr(),
      first.getSliceAxisAttr());
  for (shard::AllSliceOp s : slices)
    rewriter.replaceOp(s, scattered);
  rewriter.eraseOp(reduce);
  return success();
}

/// Whether `v` (through elementwise and row-wise generics) reaches an all_slice.
bool reachesSlice(Value v, int depth = 8) {
  for (Operation *user : v.getUsers()) {
    if (isa<shard::AllSliceOp>(user))
      return true;
    if (depth > 0 && isa<linalg::GenericOp>(user) && user->getNumResults() == 1 &&
        reachesSlice(user->getResult(0), depth - 1))
      return true;
  }
  return false;
}

/// `expand(e_k(... e_1(all_reduce(p))))`, each link used once, each e_i
/// elementwise on the previous link (identity maps) with its other operands
/// indexing no dimension the expand splits -> `e_k'(... e_1'(all_reduce(
/// expand(p))))`, the ops at the expanded shape: a slice of the expanded
/// value can then be hoisted up to the all-reduce.
LogicalResult expandBeforeChain(tensor::ExpandShapeOp expand, IRRewriter &rewriter) {
  SmallVector<linalg::GenericOp> chain; // From the expand up.
  SmallVector<unsigned> links;          // The chained input of each.
  Value v = expand.getSrc();
  shard::AllReduceOp reduce;
  while (!(reduce = v.getDefiningOp<shard::AllReduceOp>())) {
    auto g = v.getDefiningOp<linalg::GenericOp>();
    if (!g || !v.hasOneUse() || g->getNumResults() != 1)
      return failure();
    std::optional<unsigned> link;
    for (OpOperand *input : g.getDpsInputOperands()) {
      Operation *def = input->get().getDefiningOp();
      if (def && isa<linalg::GenericOp, shard::AllReduceOp>(def) &&
          isElementwiseOn(g, input->get())) {
        if (link)
          return failure();
        link = input->getOperandNumber();
      }
    }
    if (!link)
      return failure();
    chain.push_back(g);
    links.push_back(*link);
    v = g->getOperand(*link);
  }
  if (!v.hasOneUse() || !isa<RankedTensorType>(reduce.getResult().getType()))
    return failure();
  auto groups = expand.getReassociationIndices();
  int64_t rank = expand.getResultType().getRank();
  // The other operands' maps at the expanded rank (checked before rewriting).
  SmallVector<SmallVector<AffineMap>> maps(chain.size());
  for (auto [g, link, out] : llvm::zip(chain, links, maps)) {
    for (OpOperand *input : g.getDpsInputOperands()) {
      if (input->getOperandNumber() == link) {
        out.push_back(AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext()));
        continue;
      }
      SmallVector<AffineExpr> results;
      for (AffineExpr expr : g.getMatchingIndexingMap(input).getResults()) {
        unsigned loop = cast<AffineDimExpr>(expr).getPosition();
        if (groups[loop].size() != 1)
          return failure();
        results.push_back(getAffineDimExpr(groups[loop].front(), rewriter.getContext()));
      }
      out.push_back(AffineMap::get(rank, 0, results, rewriter.getContext()));
    }
    out.push_back(AffineMap::getMultiDimIdentityMap(rank, rewriter.getContext()));
    // The body must not read its init (an elementwise op does not).
    if (g.getMatchingBlockArgument(g.getDpsInitOperand(0)).use_empty() == false)
      return failure();
  }

  rewriter.setInsertionPoint(expand);
  ArrayRef<int64_t> shape = expand.getResultType().getShape();
  Value partial = reduce.getInput();
  partial = tensor::ExpandShapeOp::create(
      rewriter, expand.getLoc(),
      expand.getResultType().clone(getElementTypeOrSelf(partial.getType())), partial, groups);
  Value value = shard::AllReduceOp::create(rewriter, reduce.getLoc(), partial.getType(),
                                           reduce.getGridAttr(), reduce.getGridAxesAttr(),
                                           partial, reduce.getReductionAttr());
  for (int i = chain.size() - 1; i >= 0; --i) {
    linalg::GenericOp g = chain[i];
    SmallVector<Value> inputs;
    for (OpOperand *input : g.getDpsInputOperands())
      inputs.push_back(input->getOperandNumber() == links[i] ? value : input->get());
    Type element = getElementTypeOrSelf(g->getResult(0).getType());
    Value init = tensor::EmptyOp::create(rewriter, g.getLoc(), shape, element);
    auto expanded = linalg::GenericOp::create(
        rewriter, g.getLoc(), TypeRange{RankedTensorType::get(shape, element)}, inputs,
        ValueRange{init}, maps[i],
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel));
    rewriter.cloneRegionBefore(g.getRegion(), expanded.getRegion(), expanded.getRegion().end());
    value = expanded.getResult(0);
  }
  rewriter.replaceOp(expand, value);
  for (linalg::GenericOp g : chain)
    rewriter.eraseOp(g);
  rewriter.eraseOp(reduce);
  return success();
}

/// Moves expands before their elementwise chains, then every group of alike
/// slices up through the generics that only they use, to a fixed point; an
/// all-reduce reached that way becomes a reduce-scatter. Returns the number
/// of reduce-scatters formed.
unsigned hoistSlices(func::FuncOp func, IRRewriter &rewriter) {
  SmallVector<tensor::ExpandShapeOp> expands;
  func.walk([&](tensor::ExpandShapeOp e) {
    if (reachesSlice(e.getResult()))
      expands.push_back(e);
  });
  for (tensor::ExpandShapeOp e : expands)
    (void)expandBeforeChain(e, rewriter);
  unsigned formed = 0;
  for (bool changed = true; changed;) {
    changed = false;
    SmallVector<Value> cut;
    llvm::SmallPtrSet<Value, 16> seen;
    func.walk([&](shard::AllSliceOp s) {
      if (seen.insert(s.getInput()).second)
        cut.push_back(s.getInput());
    });
    // A rewrite replaces slices, which may be the values of `cut` still to
    // visit (a slice of a slice, over another grid axis): walk again after
    // each one rather than read an erased value.
    for (Value v : cut) {
      SmallVector<shard::AllSliceOp> slices = uniformSlices(v);
      bool summed = false; // slicesAfterSums rewrote the sums.
      if (slices.empty())
        summed = !(slices = slicesAfterSums(v, rewriter)).empty();
      if (slices.empty())
        continue;
      changed = summed;
      if (auto g = v.getDefiningOp<linalg::GenericOp>()) {
        changed |= succeeded(hoistThroughGeneric(g, slices, rewriter));
      } else if (auto r = v.getDefiningOp<shard::AllReduceOp>()) {
        bool scattered = succeeded(scatterAllReduce(r, slices, rewriter));
        formed += scattered;
        changed |= scattered;
      }
      if (changed)
        break;
    }
  }
  // The whole-size inits the moved ops left behind.
  SmallVector<Operation *> dead;
  func.walk([&](Operation *op) {
    if (isa<tensor::EmptyOp, linalg::FillOp>(op) && op->use_empty())
      dead.push_back(op);
  });
  for (Operation *op : llvm::reverse(dead)) {
    SmallVector<Value> operands(op->getOperands());
    rewriter.eraseOp(op);
    for (Value v : operands)
      if (auto empty = v.getDefiningOp<tensor::EmptyOp>(); empty && empty->use_empty())
        rewriter.eraseOp(empty);
  }
  return formed;
}

struct FormReduceScatterPass
    : public nova::impl::NovaFormReduceScatterBase<FormReduceScatterPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    numFormed += hoistSlices(getOperation(), rewriter);
    SmallVector<shard::AllSliceOp> slices;
    getOperation().walk([&](shard::AllSliceOp op) { slices.push_back(op); });
    for (shard::AllSliceOp slice : slices) {
      FailureOr<Chain> chain = matchChain(slice);
      if (succeeded(chain) && succeeded(rewrite(*chain, rewriter)))
        ++numFormed;
    }
  }
};
} // namespace
