//===- FuseAttention.cpp - matmul-softmax-matmul -> nova.attention -C++ -*-===//
//
// Recognises attention in the shape torch-mlir and Nova's normal form give
// it (SDPA's math path, or scores masked by hand and passed to softmax):
//
//   S = batch_matmul(Q, Kt)             scores
//   X = generic(S [, C])                scale, and a mask from constant C
//   m = reduce_max(X)                   softmax ...
//   E = generic(X, m)   exp(x - m)
//   l = reduce_sum(E)
//   P = generic(E, l [, g])  e / l      (g: SDPA's "row fully masked" guard)
//   O = batch_matmul(P, V)
//
// with reshapes of the leading (batch, head) dimensions in between. What each
// generic computes is checked by folding its scalar body on probe values, not
// by matching op names, so any spelling of the same arithmetic is taken. A
// mask is accepted when it is exactly causal (key j hidden from query i iff
// j > i); no row is then fully masked, so the guard is always false.
//
// In a training step P has other users: autograd's backward of the chain
// (matchBackward). When they are exactly that, the forward becomes
// nova.attention_lse and the backward nova.attention_backward, which
// recomputes P from the log-sum-exp: no T x T tensor is kept between them.
//
//===----------------------------------------------------------------------===//
#include "nova/Tile/Passes.h"

#include "nova/Dialect/Nova/IR/NovaAttentionTrainOps.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

#define DEBUG_TYPE "nova-fuse-attention"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFUSEATTENTION
#include "nova/Tile/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The ops of one matched attention, for the single-use check and erasure.
struct Chain {
  llvm::SetVector<Operation *> ops;
};

/// Follows expand/collapse_shape ops that only regroup leading dimensions
/// (the last two stay as they are) or add or drop a row value's trailing
/// unit dimension, recording them in `chain`.
Value throughBatchReshapes(Value v, Chain &chain) {
  while (Operation *def = v.getDefiningOp()) {
    SmallVector<ReassociationIndices> groups;
    Value source;
    int64_t rank;
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
      groups = collapse.getReassociationIndices();
      source = collapse.getSrc();
      rank = collapse.getSrcType().getRank();
    } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
      groups = expand.getReassociationIndices();
      source = expand.getSrc();
      rank = expand.getResultType().getRank();
    } else {
      break;
    }
    // A row value [..., T] <-> [..., T, 1] (a keep-dim reduction's result).
    bool unitRow = false;
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
      unitRow = expand.getResultType().getShape().back() == 1 &&
                groups.back() == ReassociationIndices{rank - 2, rank - 1};
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
      unitRow = collapse.getSrcType().getShape().back() == 1 &&
                groups.back() == ReassociationIndices{rank - 2, rank - 1};
    // The last two dimensions keep their sizes: each of their groups is
    // the dimension itself, possibly with unit dimensions before it.
    ArrayRef<int64_t> wide = isa<tensor::CollapseShapeOp>(def)
                                 ? cast<tensor::CollapseShapeOp>(def).getSrcType().getShape()
                                 : cast<tensor::ExpandShapeOp>(def).getResultType().getShape();
    auto ownGroup = [&](const ReassociationIndices &group, int64_t dim) {
      return group.back() == dim &&
             llvm::all_of(ArrayRef(group).drop_back(),
                          [&](int64_t i) { return wide[i] == 1; });
    };
    bool leading = groups.size() >= 3 && ownGroup(groups.back(), rank - 1) &&
                   ownGroup(groups[groups.size() - 2], rank - 2);
    if (!unitRow && !leading)
      break;
    if (unitRow && !llvm::all_of(ArrayRef(groups).drop_back(),
                                 [](const ReassociationIndices &g) {
                                   return g.size() == 1;
                                 }))
      break;
    chain.ops.insert(def);
    v = source;
  }
  return v;
}

double valueOf(Attribute a) {
  if (auto f = dyn_cast_if_present<FloatAttr>(a))
    return f.getValueAsDouble();
  if (auto i = dyn_cast_if_present<IntegerAttr>(a))
    return i.getType().isInteger(1) ? (i.getValue().isZero() ? 0.0 : 1.0)
                                    : (double)i.getValue().getSExtValue();
  return std::nan("");
}

/// `v`'s value as folding found it in `values`, or as a constant; null when
/// neither knows it.
Attribute knownValue(const DenseMap<Value, Attribute> &values, Value v) {
  if (auto it = values.find(v); it != values.end())
    return it->second;
  Attribute a;
  if (matchPattern(v, m_Constant(&a)))
    return a;
  return {};
}

/// Folds the scalar body of `g` on constant block arguments (inputs, then
/// the output); nullopt when some op of the body does not fold.
std::optional<double> evaluate(linalg::GenericOp g, ArrayRef<double> args) {
  Block &body = g.getRegion().front();
  if (args.size() != body.getNumArguments())
    return std::nullopt;
  DenseMap<Value, Attribute> values;
  for (auto [arg, x] : llvm::zip(body.getArguments(), args)) {
    Type t = arg.getType();
    if (auto ft = dyn_cast<FloatType>(t))
      values[arg] = FloatAttr::get(ft, x);
    else if (t.isInteger(1))
      values[arg] = IntegerAttr::get(t, x != 0.0 ? 1 : 0);
    else if (auto it = dyn_cast<IntegerType>(t))
      values[arg] = IntegerAttr::get(it, (int64_t)x);
    else
      return std::nullopt;
  }
  auto lookup = [&](Value v) { return knownValue(values, v); };
  for (Operation &op : body.without_terminator()) {
    if (op.getNumResults() != 1 || op.getNumRegions() != 0)
      return std::nullopt;
    SmallVector<Attribute> operands;
    for (Value o : op.getOperands())
      operands.push_back(lookup(o));
    if (llvm::any_of(operands, [](Attribute a) { return !a; }))
      return std::nullopt;
    SmallVector<OpFoldResult> folded;
    if (failed(op.fold(operands, folded)) || folded.size() != 1)
      return std::nullopt;
    Attribute result = isa<Attribute>(folded[0])
                           ? cast<Attribute>(folded[0])
                           : lookup(cast<Value>(folded[0]));
    if (!result)
      return std::nullopt;
    values[op.getResult(0)] = result;
  }
  return valueOf(lookup(body.getTerminator()->getOperand(0)));
}

bool close(std::optional<double> got, double want) {
  if (!got)
    return false;
  if (std::isinf(want))
    return *got == want;
  return std::abs(*got - want) <= 1e-6 * std::max(1.0, std::abs(want));
}

bool allParallel(linalg::GenericOp g) {
  return llvm::all_of(g.getIteratorTypesArray(), linalg::isParallelIterator);
}

/// `(d0, ..., dn) -> (d0, ..., dn-1)` or `-> (d0, ..., dn-1, 0)`: a row's
/// value, broadcast along (or reduced over) the last dimension.
bool isRowMap(AffineMap map) {
  unsigned n = map.getNumDims();
  if (map.getNumResults() != n - 1 && map.getNumResults() != n)
    return false;
  for (unsigned i = 0; i + 1 < n; ++i)
    if (map.getResult(i) != getAffineDimExpr(i, map.getContext()))
      return false;
  if (map.getNumResults() == n) {
    auto c = dyn_cast<AffineConstantExpr>(map.getResult(n - 1));
    return c && c.getValue() == 0;
  }
  return true;
}

/// The constant a linalg.fill writes into `init`, if it is one.
std::optional<double> fillValue(Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return std::nullopt;
  Attribute a;
  if (!matchPattern(fill.getInputs().front(), m_Constant(&a)))
    return std::nullopt;
  return valueOf(a);
}

/// A row reduction over the last dimension of one input, started from a
/// fill of `init`, whose body folds as `combine` on the probes.
linalg::GenericOp matchRowReduction(Value v, double init,
                                    function_ref<double(double, double)> combine) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1)
    return {};
  SmallVector<utils::IteratorType> it = g.getIteratorTypesArray();
  if (it.empty() || !linalg::isReductionIterator(it.back()) ||
      !llvm::all_of(ArrayRef(it).drop_back(), linalg::isParallelIterator))
    return {};
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (!maps[0].isIdentity() || !isRowMap(maps[1]))
    return {};
  std::optional<double> start = fillValue(g.getDpsInits()[0]);
  if (!start || !(*start == init || (std::isnan(init) && std::isnan(*start))))
    return {};
  for (auto [x, acc] : {std::pair{1.0, 2.0}, {3.0, 2.0}, {-0.5, 0.25}})
    if (!close(evaluate(g, {x, acc}), combine(x, acc)))
      return {};
  return g;
}

/// The generic's input with an identity map and the one with a row map (in
/// either order); the remaining input, if any, in `extra`.
bool splitOperands(linalg::GenericOp g, OpOperand *&full, OpOperand *&row,
                   OpOperand *&extra) {
  full = row = extra = nullptr;
  for (OpOperand *in : g.getDpsInputOperands()) {
    AffineMap map = g.getMatchingIndexingMap(in);
    if (map.isIdentity() && !full)
      full = in;
    else if (isRowMap(map) && !row &&
             isa<FloatType>(getElementTypeOrSelf(in->get().getType())))
      row = in;
    else if (!extra)
      extra = in;
    else
      return false;
  }
  return full && row;
}

/// A zero-initialised batch matmul (3-D, default maps).
linalg::BatchMatmulOp matchBatchMatmul(Value v) {
  auto mm = v.getDefiningOp<linalg::BatchMatmulOp>();
  if (!mm || !mm.hasPureTensorSemantics() ||
      !llvm::equal(mm.getIndexingMapsArray(),
                   linalg::BatchMatmulOp::getDefaultIndexingMaps(mm.getContext())))
    return {};
  std::optional<double> init = fillValue(mm.getDpsInits()[0]);
  if (!init || *init != 0.0)
    return {};
  return mm;
}

struct Scores {
  Value s;           // the QK^T matmul's result (through reshapes)
  double scale = 1.0;
  bool causal = false;
};

/// If `operand` of `g` holds each element's position along loop dimension
/// n-2 (the query, returns 0) or n-1 (the key, returns 1): an arange
/// (`index_cast(linalg.index 0)` of a 1-D generic), reshaped and broadcast.
std::optional<int> arangeAxis(linalg::GenericOp g, OpOperand *operand) {
  AffineMap map = g.getMatchingIndexingMap(operand);
  unsigned n = map.getNumDims();
  int axis = -1;
  for (AffineExpr e : map.getResults()) {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      if (c.getValue() != 0)
        return std::nullopt;
      continue;
    }
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim || axis != -1 || dim.getPosition() + 2 < n)
      return std::nullopt;
    axis = dim.getPosition() + 2 - n;
  }
  if (axis < 0)
    return std::nullopt;
  Value v = operand->get();
  while (Operation *def = v.getDefiningOp()) {
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(def))
      v = e.getSrc();
    else if (auto c = dyn_cast<tensor::CollapseShapeOp>(def))
      v = c.getSrc();
    else
      break;
  }
  auto arange = v.getDefiningOp<linalg::GenericOp>();
  if (!arange || arange.getNumDpsInputs() != 0 || arange.getNumLoops() != 1)
    return std::nullopt;
  Value yielded = arange.getRegion().front().getTerminator()->getOperand(0);
  auto cast = yielded.getDefiningOp<arith::IndexCastOp>();
  auto index = cast ? cast.getIn().getDefiningOp<linalg::IndexOp>()
                    : linalg::IndexOp();
  if (!index || index.getDim() != 0)
    return std::nullopt;
  return axis;
}

/// `v` as a constant (`mask` set, no generic returned) or as a one-input,
/// identity-mapped elementwise generic over a constant of its shape (the
/// generic returned, `mask` its input); otherwise `mask` stays null.
linalg::GenericOp maskConversion(Value v, DenseElementsAttr &mask) {
  mask = {};
  if (matchPattern(v, m_Constant(&mask)))
    return {};
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 ||
      !allParallel(g) ||
      !llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }) ||
      !matchPattern(g.getDpsInputs()[0], m_Constant(&mask)))
    return {};
  return g;
}

/// X = S, or X = generic(S, mask...) computing `scale * s` where the mask
/// keeps a key and `-inf` where it hides it, the mask being an exactly
/// causal constant or a function of (key - query) of two aranges.
std::optional<Scores> matchScores(Value x, Chain &chain) {
  Scores result;
  auto g = x.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumDpsInits() != 1 || !allParallel(g) ||
      g.getNumDpsInputs() > 3) {
    result.s = x;
    return result;
  }
  OpOperand *sOperand = nullptr, *maskOperand = nullptr;
  OpOperand *position[2] = {nullptr, nullptr};
  for (OpOperand *in : g.getDpsInputOperands()) {
    AffineMap map = g.getMatchingIndexingMap(in);
    std::optional<int> axis;
    if (map.isIdentity() && !sOperand)
      sOperand = in;
    else if ((axis = arangeAxis(g, in)) && !position[*axis])
      position[*axis] = in;
    else if (!maskOperand)
      maskOperand = in;
    else
      return std::nullopt;
  }
  if (!sOperand || (maskOperand && (position[0] || position[1])) ||
      (!position[0] != !position[1]))
    return std::nullopt;
  // f(s, c, query, key) for the generic's inputs in order.
  auto probe = [&](double s, double c, int64_t query,
                   int64_t key) -> std::optional<double> {
    SmallVector<double> args;
    for (OpOperand *in : g.getDpsInputOperands())
      args.push_back(in == sOperand      ? s
                     : in == position[0] ? (double)query
                     : in == position[1] ? (double)key
                                         : c);
    args.push_back(std::nan(""));
    return evaluate(g, args);
  };
  // Whether a score is hidden, and the scale of a kept one.
  auto classify = [&](double c, int64_t query,
                      int64_t key) -> std::optional<std::pair<bool, double>> {
    std::optional<double> a = probe(0.75, c, query, key);
    if (!a)
      return std::nullopt;
    if (std::isinf(*a) && *a < 0) {
      for (double s : {-1.5, 2.25})
        if (!close(probe(s, c, query, key), -INFINITY))
          return std::nullopt;
      return std::pair{true, 0.0};
    }
    double scale = *a / 0.75;
    for (double s : {-1.5, 2.25, 0.0})
      if (!close(probe(s, c, query, key), (double)((float)scale * (float)s)))
        return std::nullopt;
    return std::pair{false, scale};
  };
  // One scale for every kept score; `hidden` must be exactly key > query.
  bool ok = true, anyHidden = false;
  std::optional<double> scale;
  auto check = [&](std::optional<std::pair<bool, double>> kind, int64_t query,
                   int64_t key) {
    if (!kind || kind->first != (key > query)) {
      ok = false;
      return;
    }
    anyHidden |= kind->first;
    if (!kind->first) {
      if (scale && *scale != kind->second)
        ok = false;
      scale = kind->second;
    }
  };
  auto type = cast<ShapedType>(x.getType());
  int64_t rows = type.getDimSize(type.getRank() - 2),
          cols = type.getDimSize(type.getRank() - 1);
  if (position[0]) {
    // The positions must only meet in one op (their difference or their
    // comparison): then the mask depends on key - query alone, and one
    // probe per diagonal decides it.
    Block &body = g.getRegion().front();
    Value qArg = body.getArgument(position[0]->getOperandNumber());
    Value kArg = body.getArgument(position[1]->getOperandNumber());
    if (!qArg.hasOneUse() || !kArg.hasOneUse() ||
        *qArg.user_begin() != *kArg.user_begin() ||
        !isa<arith::SubIOp, arith::CmpIOp>(*qArg.user_begin()) ||
        rows != cols)
      return std::nullopt;
    for (int64_t delta = -(rows - 1); delta < cols && ok; ++delta) {
      int64_t query = std::max<int64_t>(0, -delta);
      check(classify(0.0, query, query + delta), query, query + delta);
    }
  } else if (maskOperand) {
    // A constant [Tq, Tk] read at the last two loop dimensions, with at
    // most two distinct values -- or an elementwise function of one (a
    // layer's mask conversion that elementwise fusion left unfused because
    // every layer reads it). Leading dimensions (Hugging Face's [B, 1, T, T]
    // mask, broadcast over the heads) may index it too: every [Tq, Tk]
    // slice is checked.
    AffineMap map = g.getMatchingIndexingMap(maskOperand);
    unsigned n = map.getNumDims();
    unsigned r = map.getNumResults();
    DenseElementsAttr mask;
    linalg::GenericOp convert = maskConversion(maskOperand->get(), mask);
    if (n < 2 || r < 2 ||
        map.getResult(r - 2) != getAffineDimExpr(n - 2, map.getContext()) ||
        map.getResult(r - 1) != getAffineDimExpr(n - 1, map.getContext()) ||
        !mask || rows != cols)
      return std::nullopt;
    for (AffineExpr lead : map.getResults().drop_back(2)) {
      auto dim = dyn_cast<AffineDimExpr>(lead);
      auto zero = dyn_cast<AffineConstantExpr>(lead);
      if (!(dim && dim.getPosition() < n - 2) && !(zero && zero.getValue() == 0))
        return std::nullopt;
    }
    // The converted value of each distinct constant element.
    SmallVector<std::pair<double, double>, 4> converted;
    auto through = [&](double c) -> double {
      if (!convert)
        return c;
      auto it = llvm::find_if(converted, [&](auto &p) { return p.first == c; });
      if (it != converted.end())
        return it->second;
      std::optional<double> v = evaluate(convert, {c, std::nan("")});
      if (!v || std::isnan(*v))
        ok = false;
      converted.push_back({c, v ? *v : std::nan("")});
      return converted.back().second;
    };
    Type elt = mask.getElementType();
    std::optional<std::pair<bool, double>> kinds[2];
    double seen[2];
    int distinct = 0;
    int64_t at = 0;
    auto visit = [&](double c) {
      int64_t query = (at / cols) % rows, key = at % cols;
      ++at;
      if (!ok)
        return;
      int k = 0;
      while (k < distinct && seen[k] != c)
        ++k;
      if (k == distinct) {
        if (distinct == 2) {
          ok = false;
          return;
        }
        seen[distinct] = c;
        kinds[distinct++] = classify(c, 0, 0);
      }
      check(kinds[k], query, key);
    };
    if (isa<FloatType>(elt)) {
      for (APFloat v : mask.getValues<APFloat>())
        visit(through(v.convertToDouble()));
    } else if (elt.isSignlessInteger()) {
      for (APInt v : mask.getValues<APInt>())
        visit(through(elt.isInteger(1) ? (v.isZero() ? 0.0 : 1.0)
                                       : (double)v.getSExtValue()));
    } else {
      return std::nullopt;
    }
  } else {
    std::optional<std::pair<bool, double>> kind = classify(0.0, 0, 0);
    if (!kind || kind->first)
      return std::nullopt;
    scale = kind->second;
  }
  if (!ok || !scale)
    return std::nullopt;
  result.scale = *scale;
  result.causal = anyHidden;
  chain.ops.insert(g);
  result.s = sOperand->get();
  return result;
}

/// The collapse/expand_shape ops from `v` down to the first other op,
/// outermost first; `root` is the value under them. (The ops peeled below
/// are rebuilt, not moved: one that has other users stays for them.)
SmallVector<Operation *> singleUseReshapes(Value v, Value &root) {
  SmallVector<Operation *> reshapes;
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
      break;
    reshapes.push_back(def);
    v = def->getOperand(0);
  }
  root = v;
  return reshapes;
}

/// `v` = reshapes(c * x): returns reshapes(x)
/// (rebuilt at the rewriter's insertion point) and multiplies `scale` by c;
/// `v` itself otherwise. SDPA's math path scales q and k by sqrt(scale) in
/// separate ops: the fused op applies the product once, on chip.
Value peelScale(Value v, double &scale, IRRewriter &rewriter) {
  Value root;
  SmallVector<Operation *> reshapes = singleUseReshapes(v, root);
  auto g = root.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumDpsInputs() != 1 ||
      g.getNumDpsInits() != 1 || !allParallel(g) ||
      !llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }) ||
      g.getDpsInputs()[0].getType() != root.getType())
    return v;
  std::optional<double> c = evaluate(g, {1.0, std::nan("")});
  if (!c || !std::isfinite(*c))
    return v;
  for (double x : {-2.5, 0.75, 3.0})
    if (!close(evaluate(g, {x, std::nan("")}), (double)((float)*c * (float)x)))
      return v;
  scale *= *c;
  IRMapping map;
  map.map(root, g.getDpsInputs()[0]);
  Value rebuilt = g.getDpsInputs()[0];
  for (Operation *reshape : llvm::reverse(reshapes))
  {
    rebuilt = rewriter.clone(*reshape, map)->getResult(0);
    map.map(reshape->getResult(0), rebuilt);
  }
  return rebuilt;
}

/// `v` = collapse(transpose(k)) with the transpose swapping the last two
/// dimensions: returns collapse(k), the keys as rows.
Value peelKeyTranspose(Value v, IRRewriter &rewriter) {
  Value root;
  SmallVector<Operation *> reshapes = singleUseReshapes(v, root);
  auto t = root.getDefiningOp<linalg::TransposeOp>();
  if (!t)
    return {};
  ArrayRef<int64_t> perm = t.getPermutation();
  int64_t n = perm.size();
  for (int64_t i = 0; i + 2 < n; ++i)
    if (perm[i] != i)
      return {};
  if (n < 2 || perm[n - 2] != n - 1 || perm[n - 1] != n - 2)
    return {};
  Value keys = t.getInput();
  for (Operation *reshape : llvm::reverse(reshapes)) {
    auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape);
    if (!collapse)
      return {};
    SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
    int64_t rank = collapse.getSrcType().getRank();
    if (groups.size() < 2 || groups.back() != ReassociationIndices{rank - 1} ||
        groups[groups.size() - 2] != ReassociationIndices{rank - 2})
      return {};
    keys = tensor::CollapseShapeOp::create(rewriter, collapse.getLoc(), keys,
                                           groups);
  }
  return keys;
}

/// `v` = collapse_shape(transpose(x)) merging the two leading dimensions,
/// the transpose moving dimension 1 of x to the end of `perm`'s image (heads
/// to the front): returns x, a [B, T, H, D] tensor as a projection writes it.
Value sequenceMajorSource(Value v, ArrayRef<int64_t> perm) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 4 ||
      collapse.getReassociationIndices() !=
          SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}})
    return {};
  auto t = collapse.getSrc().getDefiningOp<linalg::TransposeOp>();
  if (!t || t.getPermutation() != perm)
    return {};
  return t.getInput();
}

/// Attention over heads that were split off a projection's rows ([B, T, H, D]
/// transposed to [B, H, T, D]) reads them in place: the op takes the
/// sequence-major tensors, and the transposes (copies through HBM) go. The
/// output is written sequence-major too, where it is transposed back.
void toSequenceMajor(nova::AttentionOp op, IRRewriter &rewriter) {
  if (cast<ShapedType>(op.getQuery().getType()).getRank() != 3)
    return;
  static constexpr int64_t kSwap[] = {0, 2, 1, 3}, kColumns[] = {0, 2, 3, 1};
  Value q = sequenceMajorSource(op.getQuery(), kSwap);
  Value k = sequenceMajorSource(op.getKeys(), op.getKeyRows()
                                                  ? ArrayRef<int64_t>(kSwap)
                                                  : ArrayRef<int64_t>(kColumns));
  Value v = sequenceMajorSource(op.getValue(), kSwap);
  if (!q || !k || !v)
    return;
  auto shape = [](Value x) { return cast<ShapedType>(x.getType()).getShape(); };
  int64_t batch = shape(q)[0], heads = shape(q)[2];
  for (Value x : {k, v})
    if (shape(x)[0] != batch || shape(x)[2] != heads)
      return;
  ArrayRef<int64_t> o3 = shape(op.getResult().front());
  Type element = cast<ShapedType>(op.getResult().front().getType()).getElementType();
  auto outType = RankedTensorType::get({batch, o3[1], heads, o3[2]}, element);
  rewriter.setInsertionPoint(op);
  Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), outType.getShape(),
                                       outType.getElementType());
  auto fused = nova::AttentionOp::create(
      rewriter, op.getLoc(), TypeRange{outType}, q, k, v, init, op.getScaleAttr(),
      rewriter.getUnitAttr(), op.getCausalAttr());
  Value out = fused.getResult().front();
  // out [B*H, T, Dv] = collapse(transpose(out4, [0, 2, 1, 3])); when its only
  // use expands and transposes it back, that use takes out4 directly. An
  // elementwise op in between (bf16's rounding of the output) commutes with
  // the transpose: it is rebuilt on out4.
  Value result = op.getResult().front();
  linalg::GenericOp pointwise;
  Value reshaped = result;
  if (result.hasOneUse())
    if (auto g = dyn_cast<linalg::GenericOp>(*result.user_begin()))
      if (g.getNumDpsInputs() == 1 && g.getNumDpsInits() == 1 &&
          g.getDpsInputs()[0] == result && allParallel(g) &&
          llvm::all_of(g.getIndexingMapsArray(),
                       [](AffineMap m) { return m.isIdentity(); }) &&
          g->hasOneUse()) {
        pointwise = g;
        reshaped = g.getResult(0);
      }
  if (reshaped.hasOneUse())
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(*reshaped.user_begin()))
      if (expand.getResultType().getShape() ==
              ArrayRef<int64_t>{batch, heads, o3[1], o3[2]} &&
          expand->hasOneUse())
        if (auto back = dyn_cast<linalg::TransposeOp>(*expand->user_begin()))
          if (back.getPermutation() == ArrayRef<int64_t>(kSwap)) {
            Value replacement = out;
            if (pointwise) {
              Type pointwiseElement =
                  cast<ShapedType>(pointwise.getResult(0).getType()).getElementType();
              // On [B * T, H * Dv] rows, which tile as well as the
              // projection that reads them.
              SmallVector<ReassociationIndices> rows = {{0, 1}, {2, 3}};
              Value flat = tensor::CollapseShapeOp::create(rewriter, op.getLoc(),
                                                           out, rows);
              auto flatType = cast<RankedTensorType>(flat.getType());
              Value init = tensor::EmptyOp::create(
                  rewriter, op.getLoc(), flatType.getShape(), pointwiseElement);
              SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(2));
              SmallVector<utils::IteratorType> iterators(
                  2, utils::IteratorType::parallel);
              auto moved = linalg::GenericOp::create(
                  rewriter, pointwise.getLoc(), TypeRange{init.getType()},
                  ValueRange{flat}, ValueRange{init}, maps, iterators);
              rewriter.cloneRegionBefore(pointwise.getRegion(), moved.getRegion(),
                                         moved.getRegion().end());
              replacement = tensor::ExpandShapeOp::create(
                  rewriter, op.getLoc(),
                  RankedTensorType::get(outType.getShape(), pointwiseElement),
                  moved.getResult(0), rows);
            }
            rewriter.replaceOp(back, replacement);
            rewriter.eraseOp(expand);
            if (pointwise)
              rewriter.eraseOp(pointwise);
            rewriter.eraseOp(op);
            return;
          }
  Value heads4 = tensor::EmptyOp::create(rewriter, op.getLoc(),
                                         {batch, heads, o3[1], o3[2]}, element);
  Value swapped = linalg::TransposeOp::create(rewriter, op.getLoc(), out, heads4,
                                              kSwap)
                      ->getResult(0);
  rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
      op, op.getResult().front().getType(), swapped,
      SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
}

/// `v` = linalg.transpose(x) swapping the last two dimensions of a 3-D
/// tensor: x; null otherwise.
Value swappedInput(Value v) {
  auto t = v.getDefiningOp<linalg::TransposeOp>();
  if (!t || t.getPermutation() != ArrayRef<int64_t>{0, 2, 1})
    return {};
  return t.getInput();
}

/// Whether `groups` collapse the leading `rank - 2` dimensions into one and
/// keep the last two (a batch of matrices as a 3-D tensor).
bool collapsesBatch(ArrayRef<ReassociationIndices> groups, int64_t rank) {
  if (rank < 4 || (int64_t)groups.size() != 3 || groups[1] != ReassociationIndices{rank - 2} ||
      groups[2] != ReassociationIndices{rank - 1})
    return false;
  return llvm::equal(groups[0], llvm::seq<int64_t>(0, rank - 2));
}

/// A 3-D batch of matrices as (source, permutation): `collapse(transpose(src,
/// p))` over the batch is (src, p), `transpose(w, [0, 2, 1])` is w's with the
/// last two entries swapped, anything else (v, identity).
std::pair<Value, SmallVector<int64_t>> layoutOf(Value v) {
  if (Value w = swappedInput(v)) {
    auto layout = layoutOf(w);
    std::swap(layout.second[layout.second.size() - 2], layout.second.back());
    return layout;
  }
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  int64_t rank = collapse ? collapse.getSrcType().getRank() : 0;
  if (collapse && collapsesBatch(collapse.getReassociationIndices(), rank)) {
    if (auto t = collapse.getSrc().getDefiningOp<linalg::TransposeOp>())
      return {t.getInput(), llvm::to_vector(t.getPermutation())};
    return {collapse.getSrc(), llvm::to_vector(llvm::seq<int64_t>(0, rank))};
  }
  int64_t own = cast<ShapedType>(v.getType()).getRank();
  return {v, llvm::to_vector(llvm::seq<int64_t>(0, own))};
}

/// Whether the 3-D `t` is `x` with its matrices transposed: directly, or as
/// partitioning leaves it, both taken from one 4-D source by transposes that
/// differ in the order of the last two dimensions (a head transpose and the
/// matrix transpose composed into one).
bool isSwapOf(Value t, Value x) {
  if (swappedInput(t) == x)
    return true;
  auto [tSource, tPerm] = layoutOf(t);
  auto [xSource, xPerm] = layoutOf(x);
  if (tSource != xSource || tPerm.size() != xPerm.size() || xPerm.size() < 3)
    return false;
  std::swap(xPerm[xPerm.size() - 2], xPerm.back());
  return tPerm == xPerm;
}

/// `t`, a transpose of P's matrices feeding the dV matmul: 3-D, or (a
/// partitioned backward) 4-D swapping the last two dimensions, collapsed
/// over the batch by its only user. The value the matmul reads, or null.
Value transposedP(linalg::TransposeOp t, llvm::SetVector<Operation *> &ops) {
  if (swappedInput(t.getResult()[0])) {
    ops.insert(t);
    return t.getResult()[0];
  }
  int64_t rank = cast<ShapedType>(t.getResult()[0].getType()).getRank();
  SmallVector<int64_t> swap = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  if (rank < 4 || !t->hasOneUse())
    return {};
  std::swap(swap[rank - 2], swap[rank - 1]);
  auto collapse = dyn_cast<tensor::CollapseShapeOp>(*t->user_begin());
  if (t.getPermutation() != ArrayRef<int64_t>(swap) || !collapse ||
      !collapsesBatch(collapse.getReassociationIndices(), rank))
    return {};
  ops.insert(t);
  ops.insert(collapse);
  return collapse.getResult();
}

/// The uses of `v` past the reshapes that only regroup its leading
/// dimensions (recorded in `reshapes`).
void usesThroughReshapes(Value v, SmallVectorImpl<OpOperand *> &uses,
                         llvm::SetVector<Operation *> &reshapes) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user)) {
      Chain probe;
      if (throughBatchReshapes(user->getResult(0), probe) == v) {
        reshapes.insert(user);
        usesThroughReshapes(user->getResult(0), uses, reshapes);
        continue;
      }
    }
    uses.push_back(&use);
  }
}

/// An all-parallel generic with identity maps but `rowOperand`'s (a row
/// map), folding as `f` on probe values of its inputs.
bool computes(linalg::GenericOp g, int64_t rowOperand,
              function_ref<double(ArrayRef<double>)> f) {
  if (!g || g.getNumDpsInits() != 1 || !allParallel(g))
    return false;
  for (OpOperand *in : g.getDpsInputOperands()) {
    AffineMap map = g.getMatchingIndexingMap(in);
    if ((int64_t)in->getOperandNumber() == rowOperand ? !isRowMap(map)
                                                      : !map.isIdentity())
      return false;
  }
  for (auto probe : {SmallVector<double>{0.75, -1.5, 2.0},
                     SmallVector<double>{-0.25, 3.0, 0.5},
                     SmallVector<double>{1.5, 0.125, -2.0}}) {
    SmallVector<double> args(probe.begin(),
                             probe.begin() + g.getNumDpsInputs());
    double want = f(args);
    args.push_back(std::nan(""));
    if (!close(evaluate(g, args), want))
      return false;
  }
  return true;
}

/// `v` past any expand/collapse_shape ops (recorded in `ops`): they keep
/// the row-major order of the elements, which is all an elementwise
/// factor of P needs.
Value throughReshapes(Value v, llvm::SetVector<Operation *> &ops) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(def))
      break;
    ops.insert(def);
    v = def->getOperand(0);
  }
  return v;
}

/// Whether `result` of a generic's body depends on its block arguments
/// only through `bit` (constants aside).
bool onlyThrough(Value result, Value bit, Block &body) {
  SmallVector<Value> work = {result};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (v == bit || !seen.insert(v).second)
      continue;
    if (matchPattern(v, m_Constant()))
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &body || def->getNumRegions() != 0)
      return false;
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  return true;
}

/// `result` folded with `bit` set to `value` (the ops that depend on
/// nothing else).
std::optional<double> foldWithBit(Block &body, Value bit, bool value, Value result) {
  DenseMap<Value, Attribute> values;
  values[bit] = IntegerAttr::get(bit.getType(), value ? 1 : 0);
  auto lookup = [&](Value v) { return knownValue(values, v); };
  for (Operation &op : body.without_terminator()) {
    if (op.getNumResults() != 1 || op.getNumRegions() != 0 || op.getResult(0) == bit)
      continue;
    SmallVector<Attribute> operands;
    for (Value o : op.getOperands())
      operands.push_back(lookup(o));
    if (llvm::any_of(operands, [](Attribute a) { return !a; }))
      continue;
    // arith.truncf folds only when exact (autocast's `truncf 0.9 : f32 to
    // bf16` is not): round to nearest even, as the op does.
    if (isa<arith::TruncFOp, arith::ExtFOp>(op)) {
      auto in = dyn_cast<FloatAttr>(operands[0]);
      auto type = dyn_cast<FloatType>(op.getResult(0).getType());
      if (!in || !type)
        continue;
      APFloat value = in.getValue();
      bool losesInfo = false;
      value.convert(type.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
      values[op.getResult(0)] = FloatAttr::get(type, value);
      continue;
    }
    SmallVector<OpFoldResult> folded;
    if (failed(op.fold(operands, folded)) || folded.size() != 1)
      continue;
    Attribute a = isa<Attribute>(folded[0]) ? cast<Attribute>(folded[0])
                                            : lookup(cast<Value>(folded[0]));
    if (a)
      values[op.getResult(0)] = a;
  }
  Attribute a = lookup(result);
  if (!a)
    return std::nullopt;
  return valueOf(a);
}

/// Attention dropout, `Pd = P * D` before the P V matmul, with D = keep *
/// scale computed by an elementwise generic of its own (Nova's dropout:
/// `mask.to(dtype) / (1 - p)`, the keep bit an i1 value of its body).
struct Dropout {
  linalg::GenericOp product, keepGen;
  /// The keep bit in keepGen's body, and the factor of a kept element.
  Value bit;
  double scale = 1.0;
  /// P (the product's other operand) and D (the product's operand), and
  /// the reshapes between D and the product.
  Value p, d;
  SmallVector<Operation *> dReshapes;
};

/// `g` yields `bit ? scale : 0` of an i1 value `bit` of its body
/// (scale >= 1, finite): the bit and the scale.
std::optional<std::pair<Value, double>> keepTimesScale(linalg::GenericOp g) {
  if (!g || !allParallel(g) || g.getNumDpsInits() != 1 || g.getNumResults() != 1)
    return std::nullopt;
  Type out = getElementTypeOrSelf(g.getResult(0).getType());
  if (!out.isF32() && !out.isBF16())
    return std::nullopt;
  Block &body = g.getRegion().front();
  if (!g.getMatchingBlockArgument(g.getDpsInitOperand(0)).use_empty())
    return std::nullopt;
  Value yielded = body.getTerminator()->getOperand(0);
  // The bit: an i1 value of the body, or an i1 input read element for
  // element (a mask computed elsewhere, e.g. concatenated halves).
  SmallVector<Value> bits;
  for (OpOperand *in : g.getDpsInputOperands())
    if (getElementTypeOrSelf(in->get().getType()).isInteger(1) &&
        g.getMatchingIndexingMap(in).isIdentity())
      bits.push_back(g.getMatchingBlockArgument(in));
  for (Operation &op : body.without_terminator())
    if (op.getNumResults() == 1 && op.getResult(0).getType().isInteger(1))
      bits.push_back(op.getResult(0));
  for (Value bit : bits) {
    if (!onlyThrough(yielded, bit, body))
      continue;
    std::optional<double> dropped = foldWithBit(body, bit, false, yielded);
    std::optional<double> kept = foldWithBit(body, bit, true, yielded);
    if (dropped && *dropped == 0.0 && kept && std::isfinite(*kept) && *kept >= 1.0)
      return std::pair{bit, *kept};
  }
  return std::nullopt;
}

/// `v` = P * D with D = keep * scale (through reshapes), in the product
/// generic's element type.
std::optional<Dropout> matchDropout(Value v) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumDpsInputs() != 2 ||
      !computes(g, -1, [](ArrayRef<double> x) {
        return (double)((float)x[0] * (float)x[1]);
      }))
    return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    llvm::SetVector<Operation *> reshapes;
    Value root = throughReshapes(g.getDpsInputs()[i], reshapes);
    auto keepGen = root.getDefiningOp<linalg::GenericOp>();
    std::optional<std::pair<Value, double>> keep = keepTimesScale(keepGen);
    if (!keep)
      continue;
    Dropout d;
    d.product = g;
    d.keepGen = keepGen;
    d.bit = keep->first;
    d.scale = keep->second;
    d.p = g.getDpsInputs()[1 - i];
    d.d = root;
    d.dReshapes.assign(reshapes.begin(), reshapes.end());
    return d;
  }
  return std::nullopt;
}

/// The keep mask of `d` as i1 [batch, tq, tk]: keepGen's body yielding its
/// keep bit, reshaped (row-major order is kept: the reshapes between D and
/// the product only regroup it).
Value buildKeepMask(Dropout &d, ArrayRef<int64_t> shape3, IRRewriter &rewriter,
                    Location loc) {
  linalg::GenericOp g = d.keepGen;
  auto type = cast<RankedTensorType>(g.getResult(0).getType());
  Type i1 = rewriter.getI1Type();
  int64_t rank = type.getRank();
  auto toShape3 = [&](Value keep) -> Value {
    if (rank > 2) {
      SmallVector<ReassociationIndices> groups = {
          llvm::to_vector(llvm::seq<int64_t>(0, rank - 1)), {rank - 1}};
      keep = tensor::CollapseShapeOp::create(rewriter, loc, keep, groups);
    }
    return tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(shape3, i1), keep,
        SmallVector<ReassociationIndices>{{0, 1}, {2}});
  };
  // A bit read from an i1 input (identity map): that input is the mask.
  if (auto arg = dyn_cast<BlockArgument>(d.bit))
    return toShape3(g.getDpsInputs()[arg.getArgNumber()]);
  Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(), i1);
  auto mask = linalg::GenericOp::create(
      rewriter, loc, TypeRange{init.getType()}, g.getDpsInputs(), ValueRange{init},
      g.getIndexingMapsArray(), g.getIteratorTypesArray());
  Block &old = g.getRegion().front();
  unsigned at = std::distance(old.begin(), d.bit.getDefiningOp()->getIterator());
  rewriter.cloneRegionBefore(g.getRegion(), mask.getRegion(), mask.getRegion().end());
  Block &body = mask.getRegion().front();
  body.getArguments().back().setType(i1);
  Value bit = std::next(body.begin(), at)->getResult(0);
  body.getTerminator()->setOperand(0, bit);
  // The scale's ops go.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isMemoryEffectFree(op))
      rewriter.eraseOp(op);
  return toShape3(mask.getResult(0));
}

/// The backward autograd derives for one attention from its probabilities
/// P (the matmuls' operands as [B, T, .] tensors):
///
///   dV = P^T dO                         batch_matmul(transpose(P), dO)
///   dP = dO V^T                         batch_matmul(dO, transpose(V))
///   A  = dP * P,  r = rowsum(A)
///   dX = A - P * r                      softmax's backward
///   dQ = dX Kt^T,  dKt = Q^T dX         the score matmul's backward
///
/// (the additive mask passes the gradient through unchanged).
struct Backward {
  linalg::BatchMatmulOp dv, dq, dk;
  Value gradOut;
  /// Every op that goes when the gradients come from nova.attention_backward.
  llvm::SetVector<Operation *> ops;
};

/// The factor k when the all-parallel generic `g` computes k * base(x) of
/// its inputs `main` (identity maps but a row's, checked by the caller)
/// where a key is visible, and 0 for x = 0 where a causal mask hides it
/// (there dX, P's product, is 0). Its one other input, if any, must be a
/// constant [Tq, Tk] of at most two values read at the last two loop
/// dimensions, the value that is not k * base occurring only above the
/// diagonal. (The explicit softmax form's backward of `scale * S` and of its
/// masked_fill, folded into the softmax's backward or on its own.)
std::optional<double> maskedMultiple(linalg::GenericOp g,
                                     ArrayRef<OpOperand *> main,
                                     function_ref<double(ArrayRef<double>)> base,
                                     bool causal) {
  if (g.getNumDpsInits() != 1 || !allParallel(g))
    return std::nullopt;
  auto type = cast<ShapedType>(g.getResult(0).getType());
  int64_t rows = type.getDimSize(type.getRank() - 2),
          cols = type.getDimSize(type.getRank() - 1);
  OpOperand *maskOperand = nullptr;
  DenseElementsAttr mask;
  for (OpOperand *in : g.getDpsInputOperands()) {
    if (llvm::is_contained(main, in))
      continue;
    AffineMap map = g.getMatchingIndexingMap(in);
    unsigned n = map.getNumDims();
    if (maskOperand || n < 2 || map.getNumResults() != 2 ||
        map.getResult(0) != getAffineDimExpr(n - 2, map.getContext()) ||
        map.getResult(1) != getAffineDimExpr(n - 1, map.getContext()) ||
        !matchPattern(in->get(), m_Constant(&mask)) || rows != cols)
      return std::nullopt;
    maskOperand = in;
  }
  static const double probes[3][3] = {
      {0.75, -1.5, 2.0}, {-0.25, 3.0, 0.5}, {1.5, 0.125, -2.0}};
  auto at = [&](ArrayRef<double> x, double c) {
    SmallVector<double> args;
    for (OpOperand *in : g.getDpsInputOperands()) {
      auto it = llvm::find(main, in);
      args.push_back(it == main.end() ? c : x[it - main.begin()]);
    }
    args.push_back(std::nan(""));
    return evaluate(g, args);
  };
  // The factor for mask value c; 0 for a hidden key; nullopt: neither.
  auto classify = [&](double c) -> std::optional<double> {
    ArrayRef<double> x0(probes[0], main.size());
    std::optional<double> k0 = at(x0, c);
    double b0 = base(x0);
    if (!k0 || b0 == 0.0)
      return std::nullopt;
    double k = *k0 / b0;
    bool multiple = k != 0.0;
    for (const double *probe : probes) {
      ArrayRef<double> x(probe, main.size());
      multiple &= close(at(x, c), (double)((float)k * (float)base(x)));
    }
    if (multiple)
      return k;
    SmallVector<double> zeros(main.size(), 0.0);
    if (close(at(zeros, c), 0.0))
      return 0.0;
    return std::nullopt;
  };
  if (!maskOperand) {
    std::optional<double> k = classify(0.0);
    if (!k || *k == 0.0)
      return std::nullopt;
    return k;
  }
  if (!causal)
    return std::nullopt;
  Type elt = mask.getElementType();
  SmallVector<double> values;
  if (isa<FloatType>(elt)) {
    for (APFloat v : mask.getValues<APFloat>())
      values.push_back(v.convertToDouble());
  } else if (elt.isSignlessInteger()) {
    for (APInt v : mask.getValues<APInt>())
      values.push_back(elt.isInteger(1) ? (v.isZero() ? 0.0 : 1.0)
                                        : (double)v.getSExtValue());
  } else {
    return std::nullopt;
  }
  std::optional<double> kinds[2], factor;
  double seen[2];
  int distinct = 0;
  for (int64_t at = 0; at < (int64_t)values.size(); ++at) {
    double c = values[at];
    int k = 0;
    while (k < distinct && seen[k] != c)
      ++k;
    if (k == distinct) {
      if (distinct == 2)
        return std::nullopt;
      seen[distinct] = c;
      kinds[distinct++] = classify(c);
    }
    if (!kinds[k])
      return std::nullopt;
    if (*kinds[k] == 0.0) {
      if (at % cols <= at / cols)
        return std::nullopt;
      continue;
    }
    if (factor && *factor != *kinds[k])
      return std::nullopt;
    factor = kinds[k];
  }
  return factor;
}

/// A bf16 -> f32 widening: one input, identity maps, the value unchanged.
bool isWidening(linalg::GenericOp g) {
  if (g.getNumDpsInits() != 1 || !allParallel(g) ||
      !llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }) ||
      !getElementTypeOrSelf(g.getDpsInputs()[0].getType()).isBF16() ||
      !getElementTypeOrSelf(g.getResult(0).getType()).isF32())
    return false;
  for (double x : {0.75, -1.5, 3.0})
    if (!close(evaluate(g, {x, std::nan("")}), x))
      return false;
  return true;
}

/// An f32 -> bf16 rounding, or an f32 -> bf16 -> f32 round trip (one
/// generic of a truncf and an extf): one input, identity maps, values that
/// bf16 holds unchanged.
bool isNarrowing(linalg::GenericOp g) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 || !allParallel(g) ||
      !llvm::all_of(g.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }) ||
      !getElementTypeOrSelf(g.getDpsInputs()[0].getType()).isF32())
    return false;
  Type out = getElementTypeOrSelf(g.getResult(0).getType());
  if (!out.isBF16() &&
      !(out.isF32() && llvm::all_of(g.getBody()->without_terminator(), [](Operation &op) {
          return isa<arith::TruncFOp, arith::ExtFOp>(op);
        }) && !g.getBody()->without_terminator().empty()))
    return false;
  for (double x : {0.75, -1.5, 3.0})
    if (!close(evaluate(g, {x, std::nan("")}), x))
      return false;
  return true;
}

std::optional<Backward> matchBackward(ArrayRef<OpOperand *> pUses, Value p,
                                      linalg::BatchMatmulOp qk, Value v3,
                                      const Scores &scores, Value pWide = {},
                                      Dropout *drop = nullptr) {
  Backward bw;
  // With dropout, dV reads the dropped P (Pd) and the softmax's backward P.
  Value pDrop = drop ? drop->product.getResult(0) : Value();
  auto readsDropped = [&](OpOperand *use) {
    Chain probe;
    return pDrop && throughBatchReshapes(use->get(), probe) == pDrop;
  };
  linalg::GenericOp product, softmaxGrad;
  linalg::BatchMatmulOp dpMatmul;
  // P, or P widened to f32 (under bf16 autocast P is rounded to bf16 for
  // the matmuls and the softmax's backward reads it widened).
  // Or, where autocast rounds an f32 softmax's output for the matmuls, the
  // f32 P (`pWide`) that the softmax's backward reads.
  llvm::SmallPtrSet<Value, 2> pValues = {p};
  if (pWide)
    pValues.insert(pWide);
  auto isP = [&](Value x) {
    Chain probe;
    return pValues.contains(throughBatchReshapes(x, probe));
  };
  // P's uses, past the reshapes that regroup its batch (a partitioned
  // backward transposes P as a 4-D tensor).
  SmallVector<OpOperand *> uses;
  llvm::SetVector<Operation *> pReshapes;
  for (OpOperand *use : pUses) {
    Operation *user = use->getOwner();
    Chain probe;
    Value root;
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user) &&
        ((root = throughBatchReshapes(user->getResult(0), probe)),
         pValues.contains(root) || (pDrop && root == pDrop))) {
      pReshapes.insert(user);
      usesThroughReshapes(user->getResult(0), uses, pReshapes);
      continue;
    }
    uses.push_back(use);
  }
  for (size_t i = 0; i < uses.size(); ++i) {
    auto g = dyn_cast<linalg::GenericOp>(uses[i]->getOwner());
    if (!g || g.getNumDpsInputs() != 1 || !isWidening(g))
      continue;
    pValues.insert(g.getResult(0));
    bw.ops.insert(g);
    usesThroughReshapes(g.getResult(0), uses, pReshapes);
    uses[i] = nullptr;
  }
  for (Operation *op : pReshapes)
    bw.ops.insert(op);
  for (OpOperand *use : uses) {
    if (!use)
      continue;
    Operation *user = use->getOwner();
    if (auto t = dyn_cast<linalg::TransposeOp>(user)) {
      if (pDrop && !readsDropped(use))
        return std::nullopt;
      llvm::SetVector<Operation *> transposeOps;
      Value pt = bw.dv ? Value() : transposedP(t, transposeOps);
      if (!pt || !pt.hasOneUse())
        return std::nullopt;
      auto mm = dyn_cast<linalg::BatchMatmulOp>(*pt.user_begin());
      if (!mm || !matchBatchMatmul(mm.getResult(0)) || mm.getDpsInputs()[0] != pt)
        return std::nullopt;
      bw.dv = mm;
      bw.gradOut = mm.getDpsInputs()[1];
      for (Operation *op : transposeOps)
        bw.ops.insert(op);
      continue;
    }
    auto g = dyn_cast<linalg::GenericOp>(user);
    if (readsDropped(use))
      return std::nullopt;
    if (g && g.getNumDpsInputs() == 2 && !product &&
        computes(g, -1, [](ArrayRef<double> x) {
          return (double)((float)x[0] * (float)x[1]);
        })) {
      product = g;
      continue;
    }
    // Under autocast the dropout's factor of dP is in the same generic:
    // A = (dPd * D) * P.
    if (g && drop && g.getNumDpsInputs() == 3 && !product &&
        computes(g, -1, [](ArrayRef<double> x) {
          return (double)((float)x[0] * (float)x[1] * (float)x[2]);
        })) {
      product = g;
      continue;
    }
    if (g && g.getNumDpsInputs() >= 3 && !softmaxGrad) {
      softmaxGrad = g;
      continue;
    }
    return std::nullopt;
  }
  if (!bw.dv || !product || !softmaxGrad)
    return std::nullopt;
  // A = dP * P, dP = dO V^T (with dropout dP = dPd * D, dPd = dO V^T).
  Chain probe;
  Value dp;
  bool dropped = false, sawP = false;
  for (Value in : product.getDpsInputs()) {
    llvm::SetVector<Operation *> reshapes;
    if (isP(in) && !sawP) {
      sawP = true;
    } else if (drop && !dropped && throughReshapes(in, reshapes) == drop->d) {
      dropped = true;
      for (Operation *op : reshapes)
        probe.ops.insert(op);
    } else if (!dp) {
      dp = in;
    } else {
      return std::nullopt;
    }
  }
  if (!dp || !sawP)
    return std::nullopt;
  if (drop && !dropped) {
    llvm::SetVector<Operation *> reshapes;
    std::optional<Dropout> factor = matchDropout(throughReshapes(dp, reshapes));
    if (!factor || factor->d != drop->d)
      return std::nullopt;
    for (Operation *op : reshapes)
      probe.ops.insert(op);
    probe.ops.insert(factor->product);
    llvm::SetVector<Operation *> dReshapes;
    for (Value in : factor->product.getDpsInputs())
      if (in != factor->p)
        throughReshapes(in, dReshapes);
    for (Operation *op : dReshapes)
      probe.ops.insert(op);
    reshapes.clear();
    dp = throughReshapes(factor->p, reshapes);
    for (Operation *op : reshapes)
      probe.ops.insert(op);
    dropped = true;
  }
  // Autocast's rounding of dP to bf16 (the kernel keeps dP in f32).
  Value dpValue = throughBatchReshapes(dp, probe);
  if (auto round = dpValue.getDefiningOp<linalg::GenericOp>(); round && isNarrowing(round)) {
    probe.ops.insert(round);
    dpValue = throughBatchReshapes(round.getDpsInputs()[0], probe);
  }
  dpMatmul = matchBatchMatmul(dpValue);
  if (!dpMatmul || dpMatmul.getDpsInputs()[0] != bw.gradOut ||
      !isSwapOf(dpMatmul.getDpsInputs()[1], v3) ||
      !dpMatmul->hasOneUse() && !llvm::all_of(dpMatmul->getUsers(), [&](Operation *u) {
        return u == product || probe.ops.contains(u);
      }))
    return std::nullopt;
  bw.ops.insert(dpMatmul);
  bw.ops.insert(product);
  for (Operation *op : probe.ops)
    bw.ops.insert(op);
  // dX = A - P * rowsum(A), the operands in any order.
  Value a, pOperand, r;
  for (Value in : softmaxGrad.getDpsInputs()) {
    Chain c;
    Value root = throughBatchReshapes(in, c);
    if (root == product.getResult(0) && !a)
      a = in;
    else if (pValues.contains(root) && !pOperand)
      pOperand = in;
    else if (!r && isa<FloatType>(getElementTypeOrSelf(in.getType())) &&
             !matchPattern(in, m_Constant()))
      r = in;
  }
  if (!a || !pOperand || !r)
    return std::nullopt;
  Chain rc;
  auto rowsum = matchRowReduction(throughBatchReshapes(r, rc), 0.0,
                                  [](double x, double acc) {
                                    return (double)((float)x + (float)acc);
                                  });
  Chain ac;
  if (!rowsum ||
      throughBatchReshapes(rowsum.getDpsInputs()[0], ac) != product.getResult(0))
    return std::nullopt;
  int64_t aAt = 0, pAt = 0, rAt = 0;
  for (auto [i, in] : llvm::enumerate(softmaxGrad.getDpsInputs())) {
    if (in == a) aAt = i;
    if (in == pOperand) pAt = i;
    if (in == r) rAt = i;
  }
  // dX = k (A - P r), k the scores' scale when the backward of the scale
  // was folded in.
  for (OpOperand *in : softmaxGrad.getDpsInputOperands()) {
    AffineMap map = softmaxGrad.getMatchingIndexingMap(in);
    if (in->get() == r ? !isRowMap(map)
                       : (in->get() == a || in->get() == pOperand) && !map.isIdentity())
      return std::nullopt;
  }
  SmallVector<OpOperand *> main = {softmaxGrad.getDpsInputOperand(aAt),
                                   softmaxGrad.getDpsInputOperand(pAt),
                                   softmaxGrad.getDpsInputOperand(rAt)};
  std::optional<double> factor = maskedMultiple(
      softmaxGrad, main,
      [](ArrayRef<double> x) {
        return (double)((float)x[0] - (float)x[1] * (float)x[2]);
      },
      scores.causal);
  if (!factor)
    return std::nullopt;
  for (Operation *op : rc.ops)
    bw.ops.insert(op);
  for (Operation *op : ac.ops)
    bw.ops.insert(op);
  bw.ops.insert(rowsum);
  bw.ops.insert(softmaxGrad);
  // The product's other users: the row sum and the softmax gradient.
  llvm::SetVector<Operation *> reshapes;
  SmallVector<OpOperand *> aUses;
  usesThroughReshapes(product.getResult(0), aUses, reshapes);
  for (OpOperand *use : aUses)
    if (use->getOwner() != rowsum && use->getOwner() != softmaxGrad)
      return std::nullopt;
  // dQ = dS Kt^T and dKt = Q^T dS, dS's only uses: dS = dX, or dX through
  // the backward of the scores' scale and mask (explicit softmax form).
  SmallVector<OpOperand *> dxUses;
  usesThroughReshapes(softmaxGrad.getResult(0), dxUses, reshapes);
  if (dxUses.size() == 1)
    if (auto g = dyn_cast<linalg::GenericOp>(dxUses.front()->getOwner())) {
      std::optional<double> k = maskedMultiple(
          g, {dxUses.front()}, [](ArrayRef<double> x) { return x[0]; },
          scores.causal);
      if (!k || !g.getMatchingIndexingMap(dxUses.front()).isIdentity())
        return std::nullopt;
      *factor *= *k;
      bw.ops.insert(g);
      dxUses.clear();
      usesThroughReshapes(g.getResult(0), dxUses, reshapes);
    }
  // dS = scale * dX: the gradient of the scores before their scale.
  if (!close(*factor, scores.scale))
    return std::nullopt;
  Value q3 = qk.getDpsInputs()[0], kt3 = qk.getDpsInputs()[1];
  for (OpOperand *use : dxUses) {
    auto mm = dyn_cast<linalg::BatchMatmulOp>(use->getOwner());
    if (!mm || !matchBatchMatmul(mm.getResult(0)))
      return std::nullopt;
    if (use->getOperandNumber() == 0 && isSwapOf(mm.getDpsInputs()[1], kt3) && !bw.dq)
      bw.dq = mm;
    else if (use->getOperandNumber() == 1 && isSwapOf(mm.getDpsInputs()[0], q3) && !bw.dk)
      bw.dk = mm;
    else
      return std::nullopt;
  }
  if (!bw.dq || !bw.dk)
    return std::nullopt;
  for (Operation *op : reshapes)
    bw.ops.insert(op);
  for (linalg::BatchMatmulOp mm : {bw.dv, bw.dq, bw.dk}) {
    bw.ops.insert(mm);
    if (!cast<ShapedType>(mm.getResult(0).getType()).getElementType().isF32())
      return std::nullopt;
  }
  // The transposes the gradient matmuls read (of V, Kt and Q), when theirs alone.
  for (Value t : {dpMatmul.getDpsInputs()[1], bw.dq.getDpsInputs()[1],
                  bw.dk.getDpsInputs()[0]}) {
    Operation *def = t.getDefiningOp();
    if (!def)
      continue;
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
      if (Operation *transpose = collapse.getSrc().getDefiningOp<linalg::TransposeOp>())
        bw.ops.insert(transpose);
    bw.ops.insert(def);
  }
  // grad_out as [B, Tq, Dv], f32 or the inputs' type.
  auto type = cast<ShapedType>(bw.gradOut.getType());
  Type element = cast<ShapedType>(q3.getType()).getElementType();
  if (!type.getElementType().isF32() && type.getElementType() != element)
    return std::nullopt;
  return bw;
}

/// `x * c` elementwise (a no-op for c = 1).
Value scaled(Value x, double c, IRRewriter &rewriter, Location loc) {
  if (c == 1.0)
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                       type.getElementType());
  SmallVector<AffineMap> maps(2, rewriter.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto g = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{x}, ValueRange{init}, maps,
      iterators, [&](OpBuilder &b, Location l, ValueRange args) {
        Value k = arith::ConstantOp::create(
            b, l, b.getFloatAttr(type.getElementType(), c));
        Value m = arith::MulFOp::create(b, l, args[0], k);
        linalg::YieldOp::create(b, l, m);
      });
  return g.getResult(0);
}

/// `x` [B, R, C] as [B, C, R].
Value swapped(Value x, IRRewriter &rewriter, Location loc) {
  auto type = cast<RankedTensorType>(x.getType());
  ArrayRef<int64_t> s = type.getShape();
  Value init = tensor::EmptyOp::create(rewriter, loc, {s[0], s[2], s[1]},
                                       type.getElementType());
  return linalg::TransposeOp::create(rewriter, loc, x, init,
                                     ArrayRef<int64_t>{0, 2, 1})
      ->getResult(0);
}

/// A safe softmax's guard made false where no row is fully hidden: `g`
/// computes `m == -inf` of a row maximum m of scores X that keep a key in
/// every row (no mask, or a causal one: the diagonal is visible), and every
/// user reads it through selects in all-parallel generics (torch's
/// `_safe_softmax`, which SDPA's math path uses with a boolean mask, zeroes a
/// fully hidden row before and after the softmax and in its backward). Each
/// select then takes its false value, and the guard and its reduction go.
/// Returns whether it rewrote; `touched` gets the ops left to clean up (the
/// readers, the guard, its reshapes and its reduction).
bool dropSafeSoftmaxGuard(linalg::GenericOp g, IRRewriter &rewriter,
                          SmallVectorImpl<Operation *> &touched) {
  if (g.getNumDpsInputs() != 1 || g.getNumDpsInits() != 1 || !allParallel(g) ||
      !llvm::all_of(g.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }) ||
      !getElementTypeOrSelf(g.getResult(0).getType()).isInteger(1))
    return false;
  for (auto [x, want] : {std::pair{-INFINITY, 1.0}, {0.5, 0.0}, {INFINITY, 0.0}, {-3.0, 0.0}})
    if (!close(evaluate(g, {x, 0.0}), want))
      return false;
  Chain chain;
  Value m = throughBatchReshapes(g.getDpsInputs()[0], chain);
  auto max = matchRowReduction(m, -INFINITY, [](double a, double b) { return std::max(a, b); });
  Chain scores;
  if (!max || !matchScores(throughBatchReshapes(max.getDpsInputs()[0], chain), scores))
    return false;
  SmallVector<Operation *> cleanup{g, max};
  cleanup.append(chain.ops.begin(), chain.ops.end());
  // Every use: an all-parallel generic whose body only selects on it.
  SmallVector<std::pair<linalg::GenericOp, BlockArgument>> readers;
  SmallVector<Value> values{g.getResult(0)};
  while (!values.empty()) {
    Value v = values.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
        values.push_back(user->getResult(0));
        cleanup.push_back(user);
        continue;
      }
      auto reader = dyn_cast<linalg::GenericOp>(user);
      if (!reader || !allParallel(reader) || !reader.isDpsInput(&use))
        return false;
      BlockArgument arg = reader.getMatchingBlockArgument(&use);
      for (OpOperand &argUse : arg.getUses()) {
        auto select = dyn_cast<arith::SelectOp>(argUse.getOwner());
        if (!select || argUse.getOperandNumber() != 0)
          return false;
      }
      readers.push_back({reader, arg});
    }
  }
  for (auto [reader, arg] : readers) {
    cleanup.push_back(reader);
    SmallVector<arith::SelectOp> selects;
    for (Operation *user : arg.getUsers())
      selects.push_back(cast<arith::SelectOp>(user));
    for (arith::SelectOp select : selects)
      rewriter.replaceOp(select, select.getFalseValue());
  }
  touched.append(cleanup.begin(), cleanup.end());
  return true;
}

struct FuseAttentionPass
    : public nova::impl::NovaFuseAttentionBase<FuseAttentionPass> {
  using Base::Base;

  /// Fuses the attention that ends in `pv`, if it is one.
  LogicalResult fuse(linalg::BatchMatmulOp pv, IRRewriter &rewriter) {
    Chain chain;
    Value v3 = pv.getDpsInputs()[1];
    Value p = throughBatchReshapes(pv.getDpsInputs()[0], chain);
    // Attention dropout: P V reads Pd = P * D, D = keep / (1 - p).
    std::optional<Dropout> drop = matchDropout(p);
    if (drop) {
      chain.ops.insert(drop->product);
      p = throughBatchReshapes(drop->p, chain);
    }
    // Under autocast P may be rounded to bf16 by a generic of its own (a
    // safe softmax's guard dropped): then that rounding is the P the
    // backward reads.
    linalg::GenericOp rounding = p.getDefiningOp<linalg::GenericOp>();
    if (rounding && isNarrowing(rounding)) {
      chain.ops.insert(rounding);
      p = throughBatchReshapes(rounding.getDpsInputs()[0], chain);
    } else {
      rounding = {};
    }
    // P = E / l (and SDPA's guard, always false here).
    auto norm = p.getDefiningOp<linalg::GenericOp>();
    if (!norm || norm.getNumDpsInits() != 1 || !allParallel(norm))
      return failure();
    OpOperand *eOperand, *lOperand, *guardOperand;
    if (!splitOperands(norm, eOperand, lOperand, guardOperand))
      return failure();
    linalg::GenericOp guard;
    if (guardOperand) {
      if (!isRowMap(norm.getMatchingIndexingMap(guardOperand)))
        return failure();
      Value g = throughBatchReshapes(guardOperand->get(), chain);
      // all(x == -inf) along the row, from a fill of true.
      guard = matchRowReduction(g, 1.0, [](double x, double acc) {
        return (std::isinf(x) && x < 0 && acc != 0.0) ? 1.0 : 0.0;
      });
      if (!guard)
        return failure();
    }
    for (auto [e, l] : {std::pair{0.5, 2.0}, {3.0, 1.5}, {0.0, 4.0}}) {
      SmallVector<double> args;
      for (OpOperand *in : norm.getDpsInputOperands())
        args.push_back(in == eOperand ? e : in == lOperand ? l : 0.0);
      args.push_back(std::nan(""));
      if (!close(evaluate(norm, args), (double)((float)e / (float)l)))
        return failure();
    }
    Value e = throughBatchReshapes(eOperand->get(), chain);
    Value l = throughBatchReshapes(lOperand->get(), chain);
    if (throughBatchReshapes(l, chain) != l)
      return failure();
    auto sum = matchRowReduction(
        l, 0.0, [](double x, double acc) { return (double)((float)x + (float)acc); });
    if (!sum || throughBatchReshapes(sum.getDpsInputs()[0], chain) != e)
      return failure();
    // E = exp(X - m).
    auto expOp = e.getDefiningOp<linalg::GenericOp>();
    OpOperand *xOperand, *mOperand, *none;
    if (!expOp || expOp.getNumDpsInits() != 1 || !allParallel(expOp) ||
        !splitOperands(expOp, xOperand, mOperand, none) || none)
      return failure();
    for (auto [x, m] : {std::pair{1.0, 0.5}, {-2.0, 1.0}, {0.0, 0.0}}) {
      SmallVector<double> args;
      for (OpOperand *in : expOp.getDpsInputOperands())
        args.push_back(in == xOperand ? x : m);
      args.push_back(std::nan(""));
      if (!close(evaluate(expOp, args), (double)std::exp((float)(x - m))))
        return failure();
    }
    Value x = throughBatchReshapes(xOperand->get(), chain);
    Value m = throughBatchReshapes(mOperand->get(), chain);
    auto max = matchRowReduction(m, -INFINITY, [](double a, double b) {
      return std::max(a, b);
    });
    if (!max || throughBatchReshapes(max.getDpsInputs()[0], chain) != x)
      return failure();
    if (guard && throughBatchReshapes(guard.getDpsInputs()[0], chain) != x)
      return failure();
    // Under autocast SDPA's math path widens the masked bf16 scores for an
    // f32 softmax; with a safe softmax's guard dropped, the widening is a
    // generic of its own.
    Value masked = x;
    if (auto widen = x.getDefiningOp<linalg::GenericOp>(); widen && isWidening(widen)) {
      chain.ops.insert(widen);
      masked = throughBatchReshapes(widen.getDpsInputs()[0], chain);
    }
    std::optional<Scores> scores = matchScores(masked, chain);
    if (!scores)
      return failure();
    // Autocast rounds the score matmul's f32 result to bf16 (a generic of
    // its own when the mask is added in bf16); the kernel keeps the f32
    // scores, as it does where the rounding is fused with the mask.
    Value sValue = throughBatchReshapes(scores->s, chain);
    if (auto round = sValue.getDefiningOp<linalg::GenericOp>(); round && isNarrowing(round)) {
      chain.ops.insert(round);
      sValue = throughBatchReshapes(round.getDpsInputs()[0], chain);
    }
    auto qk = matchBatchMatmul(sValue);
    if (!qk)
      return failure();
    Value q3 = qk.getDpsInputs()[0], kt3 = qk.getDpsInputs()[1];
    auto shape = [](Value v) { return cast<ShapedType>(v.getType()).getShape(); };
    // The softmax's rows are the score matrix's: same total size.
    if (shape(qk.getResult(0)) != ArrayRef<int64_t>{shape(q3)[0], shape(q3)[1], shape(kt3)[2]} ||
        shape(v3)[1] != shape(kt3)[2])
      return failure();
    // f32, or bf16 throughout (the kernel keeps the softmax and P in f32:
    // it skips eager's rounding of the scores and of P to bf16).
    Type element = cast<ShapedType>(q3.getType()).getElementType();
    if (!element.isF32() && !element.isBF16())
      return failure();
    for (Value t : {kt3, v3})
      if (cast<ShapedType>(t.getType()).getElementType() != element)
        return failure();
    if (!cast<ShapedType>(pv.getResult(0).getType()).getElementType().isF32())
      return failure();
    if (scores->causal && shape(q3)[1] != shape(kt3)[2])
      return failure();
    // What the lowering needs of the target: the head dimension within the
    // matrix unit's rows, one batch's queries, keys and values resident in
    // a quarter of SRAM and two query blocks' score and output tiles in half
    // of the accumulator. Otherwise the unfused ops (tiled through HBM)
    // remain.
    if (nova::TargetAttr target = nova::lookupTarget(pv)) {
      int64_t rows = target.getMatrixRows();
      int64_t block = std::min(rows, (int64_t)target.getMatrixCols());
      int64_t tq = shape(q3)[1], d = shape(q3)[2], tk = shape(kt3)[2],
              dv = shape(v3)[2];
      int64_t resident = 4 * (tq * d + d * tk + tk * (dv + 1));
      int64_t accTiles = 4 * 2 * (6 * block * block + (dv + 1) * block);
      if (d > rows || resident > target.getSramBytes() / 4 ||
          accTiles > target.getAccBytes() / 2)
        return failure();
    }
    chain.ops.insert(qk);
    chain.ops.insert(max);
    chain.ops.insert(expOp);
    chain.ops.insert(sum);
    chain.ops.insert(norm);
    if (guard)
      chain.ops.insert(guard);
    // Every intermediate must be private to the chain but the
    // probabilities, which a training step's backward may read: then that
    // backward is fused too (nova.attention_backward recomputes them from
    // the log-sum-exp the forward writes).
    Value probs = rounding ? rounding.getResult(0) : norm.getResult(0);
    SmallVector<OpOperand *> pUses;
    for (Operation *op : chain.ops)
      for (OpOperand &use : op->getUses()) {
        Operation *user = use.getOwner();
        if (user == pv || chain.ops.contains(user))
          continue;
        Chain probe;
        Value read = throughBatchReshapes(use.get(), probe);
        if (read != probs && !(rounding && read == norm.getResult(0)) &&
            !(drop && read == drop->product.getResult(0)))
          return failure();
        pUses.push_back(&use);
      }
    std::optional<Backward> backward;
    if (!pUses.empty()) {
      backward = matchBackward(pUses, probs, qk, v3, *scores,
                               rounding ? norm.getResult(0) : Value(),
                               drop ? &*drop : nullptr);
      if (!backward)
        return failure();
      Block *block = pv->getBlock();
      for (Operation *op : backward->ops)
        if (op->getBlock() != block)
          return failure();
      // What its lowering (AttentionBackwardToNova.cpp) keeps on chip, at
      // most: dQ^T of one batch, dK^T, dV^T and four slots of S and dP in
      // the accumulator; the batch's operands (f32, two augmented columns),
      // row terms and staging, and the slots' P and dS, in half of SRAM.
      if (nova::TargetAttr target = nova::lookupTarget(pv)) {
        int64_t rows = target.getMatrixRows();
        int64_t b = std::min(rows, (int64_t)target.getMatrixCols());
        int64_t tq = shape(q3)[1], d = shape(q3)[2], tk = shape(kt3)[2],
                dv = shape(v3)[2];
        int64_t acc = 4 * (d * tq + 2 * b * (d + dv) + 8 * b * b);
        int64_t sram = 4 * (tq * d + tk * d + tk * dv + tq * dv + 4 * (tq + tk)) +
                       4 * (3 * tq * dv + 2 * tq + 2 * tq * d) +
                       4 * 13 * b * b + 8 * b * (d + dv);
        if (dv > rows || acc > target.getAccBytes() ||
            sram > target.getSramBytes() / 2)
          return failure();
      }
    }

    // Dropout runs in the fused training step only (its mask feeds both
    // kernels), with D laid out as P: [..., Tk] over B * H * Tq rows.
    if (drop) {
      auto dType = cast<ShapedType>(drop->d.getType());
      int64_t bh = shape(q3)[0], tq = shape(q3)[1], tk = shape(kt3)[2];
      if (!backward || dType.getRank() < 2 || dType.getShape().back() != tk ||
          dType.getNumElements() != bh * tq * tk)
        return failure();
    }

    rewriter.setInsertionPoint(pv);
    // The scales of q and k and the transpose of k done on chip instead.
    double scale = scores->scale;
    // The factors peeled off q and k: the gradients with respect to the
    // scaled operands are the fused op's divided by them.
    double before = scale;
    q3 = peelScale(q3, scale, rewriter);
    double queryFactor = scale / before;
    before = scale;
    kt3 = peelScale(kt3, scale, rewriter);
    double keyFactor = scale / before;
    Value keyRows = peelKeyTranspose(kt3, rewriter);
    auto outType = cast<RankedTensorType>(pv.getResult(0).getType());
    Value init = tensor::EmptyOp::create(rewriter, pv.getLoc(), outType.getShape(),
                                         outType.getElementType());
    Type f32 = rewriter.getF32Type();
    UnitAttr causal = scores->causal ? rewriter.getUnitAttr() : UnitAttr();
    UnitAttr rows = keyRows ? rewriter.getUnitAttr() : UnitAttr();
    Value keys = keyRows ? keyRows : kt3;
    if (!backward) {
      auto fused = nova::AttentionOp::create(
          rewriter, pv.getLoc(), TypeRange{outType}, q3, keys, v3, init,
          rewriter.getF64FloatAttr(scale), rows, causal);
      rewriter.replaceOp(pv, fused.getResult());
    } else {
      // The forward also writes the log-sum-exp the backward reads.
      Value lse = tensor::EmptyOp::create(rewriter, pv.getLoc(),
                                          outType.getShape().take_front(2), f32);
      // Dropout: the keep bits as an i1 tensor both kernels read (one byte
      // an element where D took four), its factor an attribute.
      Value keep;
      FloatAttr keepScale;
      if (drop) {
        keep = buildKeepMask(*drop, {shape(q3)[0], shape(q3)[1], shape(v3)[1]},
                             rewriter, pv.getLoc());
        keepScale = rewriter.getF64FloatAttr(drop->scale);
        chain.ops.insert(drop->keepGen);
        for (Operation *op : drop->dReshapes)
          chain.ops.insert(op);
      }
      auto fused = nova::AttentionLseOp::create(
          rewriter, pv.getLoc(), TypeRange{outType, lse.getType()}, q3, keys,
          v3, init, lse, rewriter.getF64FloatAttr(scale), rows, causal, keepScale,
          keep);
      rewriter.replaceOp(pv, fused.getResult().front());
      // Before the first gradient matmul (after grad_out).
      Operation *first = backward->dv;
      for (Operation *mm : {backward->dq, backward->dk})
        if (mm->isBeforeInBlock(first))
          first = mm;
      rewriter.setInsertionPoint(first);
      Location loc = first->getLoc();
      if (!keyRows)
        keys = swapped(kt3, rewriter, loc);
      auto empty = [&](Value like) -> Value {
        return tensor::EmptyOp::create(
            rewriter, loc, cast<ShapedType>(like.getType()).getShape(), f32);
      };
      Value dq0 = empty(q3), dk0 = empty(keys), dv0 = empty(v3);
      auto grads = nova::AttentionBackwardOp::create(
          rewriter, loc, TypeRange{dq0.getType(), dk0.getType(), dv0.getType()},
          q3, keys, v3, fused.getResult()[0], backward->gradOut,
          fused.getResult()[1], dq0, dk0, dv0, rewriter.getF64FloatAttr(scale),
          causal, keepScale, keep);
      rewriter.replaceAllUsesWith(backward->dv.getResult(0), grads.getResult()[2]);
      rewriter.replaceAllUsesWith(
          backward->dq.getResult(0),
          scaled(grads.getResult()[0], 1.0 / queryFactor, rewriter, loc));
      rewriter.replaceAllUsesWith(
          backward->dk.getResult(0),
          scaled(swapped(grads.getResult()[1], rewriter, loc), 1.0 / keyFactor,
                 rewriter, loc));
      for (Operation *op : backward->ops)
        chain.ops.insert(op);
    }
    // Erase the chain, users first.
    bool erased = true;
    while (erased) {
      erased = false;
      SmallVector<Operation *> ops = chain.ops.takeVector();
      for (Operation *op : llvm::reverse(ops))
        if (op->use_empty()) {
          erasedOps.insert(op);
          rewriter.eraseOp(op);
          erased = true;
        } else {
          chain.ops.insert(op);
        }
    }
    ++numFused;
    return success();
  }

  /// Ops a fusion erased (a fused backward takes candidates' matmuls).
  llvm::DenseSet<Operation *> erasedOps;

  void runOnOperation() override {
    erasedOps.clear();
    IRRewriter rewriter(&getContext());
    // Safe softmaxes whose guard is always false become plain ones; the
    // generics left reading the guard for nothing drop it (and an identity
    // one goes).
    SmallVector<linalg::GenericOp> guards;
    getOperation().walk([&](linalg::GenericOp op) { guards.push_back(op); });
    SmallVector<Operation *> unguarded;
    for (linalg::GenericOp g : guards)
      (void)dropSafeSoftmaxGuard(g, rewriter, unguarded);
    if (!unguarded.empty()) {
      RewritePatternSet patterns(&getContext());
      linalg::GenericOp::getCanonicalizationPatterns(patterns, &getContext());
      linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
      llvm::SetVector<Operation *> unique(unguarded.begin(), unguarded.end());
      SmallVector<Operation *> ops = unique.takeVector();
      GreedyRewriteConfig config;
      config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
      (void)applyOpPatternsGreedily(ops, std::move(patterns), config);
    }
    SmallVector<linalg::BatchMatmulOp> candidates;
    getOperation().walk([&](linalg::BatchMatmulOp op) { candidates.push_back(op); });
    for (linalg::BatchMatmulOp pv : candidates)
      if (!erasedOps.contains(pv) && matchBatchMatmul(pv.getResult(0)))
        (void)fuse(pv, rewriter);
    SmallVector<nova::AttentionOp> fused;
    getOperation().walk([&](nova::AttentionOp op) { fused.push_back(op); });
    for (nova::AttentionOp op : fused)
      toSequenceMajor(op, rewriter);
  }
};
} // namespace
