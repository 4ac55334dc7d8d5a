//===- GenericToNova.cpp - linalg.generic onto the vector unit --*- C++ -*-===//
//
// The body of an elementwise or reduction generic is evaluated op by op on
// whole tiles: each arith/math op becomes one nova.elementwise over on-chip
// temporaries, operands broadcasting through unit dimensions (a generic's
// broadcast indexing maps become unit dims of a reshaped view). Constants
// become the scalar operand of a binary op, or a filled unit tile. A
// reduction evaluates its mapped value first, then nova.reduce along each
// reduced loop, then combines with the output unless the output was just
// filled with the combiner's identity.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "Staging.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::nova;

namespace {

/// A body value during evaluation: an on-chip tile or a scalar constant.
struct Operand {
  Value tile;
  double scalar = 0.0;
  bool isScalar() const { return !tile; }
};

std::optional<ElementwiseKind> unaryKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<ElementwiseKind>>(op)
      .Case<arith::NegFOp>([](auto) { return ElementwiseKind::Neg; })
      .Case<math::AbsFOp>([](auto) { return ElementwiseKind::Abs; })
      .Case<math::ExpOp>([](auto) { return ElementwiseKind::Exp; })
      .Case<math::LogOp>([](auto) { return ElementwiseKind::Log; })
      .Case<math::SqrtOp>([](auto) { return ElementwiseKind::Sqrt; })
      .Case<math::RsqrtOp>([](auto) { return ElementwiseKind::Rsqrt; })
      .Case<math::TanhOp>([](auto) { return ElementwiseKind::Tanh; })
      .Case<math::ErfOp>([](auto) { return ElementwiseKind::Erf; })
      .Case<arith::ExtFOp, arith::TruncFOp>(
          [](auto) { return ElementwiseKind::Copy; })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<ElementwiseKind> cmpKind(arith::CmpFPredicate p) {
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::OEQ: case P::UEQ: return ElementwiseKind::CmpEq;
  case P::ONE: case P::UNE: return ElementwiseKind::CmpNe;
  case P::OLT: case P::ULT: return ElementwiseKind::CmpLt;
  case P::OLE: case P::ULE: return ElementwiseKind::CmpLe;
  case P::OGT: case P::UGT: return ElementwiseKind::CmpGt;
  case P::OGE: case P::UGE: return ElementwiseKind::CmpGe;
  default: return std::nullopt;
  }
}

std::optional<ElementwiseKind> binaryKind(Operation *op) {
  if (auto cmp = dyn_cast<arith::CmpFOp>(op))
    return cmpKind(cmp.getPredicate());
  return llvm::TypeSwitch<Operation *, std::optional<ElementwiseKind>>(op)
      .Case<arith::AddFOp>([](auto) { return ElementwiseKind::Add; })
      .Case<arith::SubFOp>([](auto) { return ElementwiseKind::Sub; })
      .Case<arith::MulFOp>([](auto) { return ElementwiseKind::Mul; })
      .Case<arith::DivFOp>([](auto) { return ElementwiseKind::Div; })
      .Case<arith::MaximumFOp, arith::MaxNumFOp>(
          [](auto) { return ElementwiseKind::Max; })
      .Case<arith::MinimumFOp, arith::MinNumFOp>(
          [](auto) { return ElementwiseKind::Min; })
      .Case<math::PowFOp>([](auto) { return ElementwiseKind::Pow; })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<ReductionKind> combinerKind(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<ReductionKind>>(op)
      .Case<arith::AddFOp>([](auto) { return ReductionKind::Sum; })
      .Case<arith::MaximumFOp, arith::MaxNumFOp>(
          [](auto) { return ReductionKind::Max; })
      .Case<arith::MinimumFOp, arith::MinNumFOp>(
          [](auto) { return ReductionKind::Min; })
      .Default([](Operation *) { return std::nullopt; });
}

double identityOf(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Sum: return 0.0;
  case ReductionKind::Max: return -INFINITY;
  case ReductionKind::Min: return INFINITY;
  case ReductionKind::Avg: return 0.0;
  }
  return 0.0;
}

ElementwiseKind combineKind(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Max: return ElementwiseKind::Max;
  case ReductionKind::Min: return ElementwiseKind::Min;
  default: return ElementwiseKind::Add;
  }
}

double foldScalar(ElementwiseKind kind, double a, double b = 0.0) {
  switch (kind) {
  case ElementwiseKind::Copy: return a;
  case ElementwiseKind::Neg: return -a;
  case ElementwiseKind::Abs: return std::fabs(a);
  case ElementwiseKind::Exp: return std::exp(a);
  case ElementwiseKind::Log: return std::log(a);
  case ElementwiseKind::Sqrt: return std::sqrt(a);
  case ElementwiseKind::Rsqrt: return 1.0 / std::sqrt(a);
  case ElementwiseKind::Recip: return 1.0 / a;
  case ElementwiseKind::Tanh: return std::tanh(a);
  case ElementwiseKind::Erf: return std::erf(a);
  case ElementwiseKind::Sigmoid: return 1.0 / (1.0 + std::exp(-a));
  case ElementwiseKind::Relu: return a > 0 ? a : 0.0;
  case ElementwiseKind::Add: return a + b;
  case ElementwiseKind::Sub: return a - b;
  case ElementwiseKind::Mul: return a * b;
  case ElementwiseKind::Div: return a / b;
  case ElementwiseKind::Max: return std::max(a, b);
  case ElementwiseKind::Min: return std::min(a, b);
  case ElementwiseKind::Pow: return std::pow(a, b);
  case ElementwiseKind::CmpEq: return a == b;
  case ElementwiseKind::CmpNe: return a != b;
  case ElementwiseKind::CmpLt: return a < b;
  case ElementwiseKind::CmpLe: return a <= b;
  case ElementwiseKind::CmpGt: return a > b;
  case ElementwiseKind::CmpGe: return a >= b;
  case ElementwiseKind::Select: return a;
  }
  return a;
}

/// Evaluates one generic's body on tiles.
class BodyLowering {
public:
  BodyLowering(PatternRewriter &rewriter, linalg::GenericOp op)
      : b(rewriter), op(op), loc(op.getLoc()),
        f32(rewriter.getF32Type()),
        rank(op.getNumLoops()) {}

  /// Views an on-chip tile of operand `map` as a tile over the iteration
  /// domain: dimensions the map does not use become unit dimensions.
  Value viewOverDomain(Value tile, AffineMap map) {
    SmallVector<int64_t> dims; // loop dim of each operand dim, -1 for const
    for (AffineExpr e : map.getResults())
      dims.push_back(isa<AffineDimExpr>(e)
                         ? (int64_t)cast<AffineDimExpr>(e).getPosition()
                         : -1);
    SmallVector<int64_t> shape(staging::shapeOf(tile));
    // A permuted map needs a transpose into loop order first.
    SmallVector<int64_t> order;
    for (auto [i, d] : llvm::enumerate(dims))
      if (d >= 0)
        order.push_back(i);
    llvm::stable_sort(order, [&](int64_t x, int64_t y) { return dims[x] < dims[y]; });
    bool sorted = true;
    for (size_t i = 1; i < order.size(); ++i)
      sorted &= order[i] > order[i - 1];
    if (!sorted) {
      SmallVector<int64_t> perm, permShape;
      for (int64_t i = 0; i < (int64_t)dims.size(); ++i)
        if (dims[i] < 0)
          perm.push_back(i);
      perm.append(order.begin(), order.end());
      for (int64_t p : perm)
        permShape.push_back(shape[p]);
      Value t = staging::allocTile(b, loc, permShape,
                                   cast<MemRefType>(tile.getType()).getElementType());
      TransposeOp::create(b, loc, tile, t, b.getDenseI64ArrayAttr(perm));
      tile = t;
      SmallVector<int64_t> permDims;
      for (int64_t p : perm)
        permDims.push_back(dims[p]);
      dims = permDims;
      shape = permShape;
    }
    SmallVector<int64_t> view(rank, 1);
    for (auto [i, d] : llvm::enumerate(dims))
      if (d >= 0)
        view[d] = shape[i];
    Value result = staging::reshapeTile(b, loc, tile, view);
    if (cast<MemRefType>(result.getType()).getElementType() != f32) {
      Value wide = staging::allocTile(b, loc, view, f32);
      ElementwiseOp::create(b, loc, ElementwiseKind::Copy, ValueRange{result},
                            wide, nullptr);
      result = wide;
    }
    return result;
  }

  /// The tile shape that `tiles` broadcast to.
  SmallVector<int64_t> broadcastShape(ArrayRef<Value> tiles) {
    SmallVector<int64_t> shape(rank, 1);
    for (Value t : tiles)
      for (auto [i, s] : llvm::enumerate(staging::shapeOf(t)))
        shape[i] = std::max(shape[i], s);
    return shape;
  }

  Value unitTile(double value) {
    Value t = staging::allocTile(b, loc, SmallVector<int64_t>(rank, 1), f32);
    FillOp::create(b, loc, b.getF64FloatAttr(value), t);
    return t;
  }

  Value asTile(const Operand &o) { return o.isScalar() ? unitTile(o.scalar) : o.tile; }

  /// Emits `kind` over tile inputs into `dest` (allocated when null).
  Value emit(ElementwiseKind kind, ArrayRef<Value> ins, Value dest,
             std::optional<double> scalar = std::nullopt) {
    if (!dest)
      dest = staging::allocTile(b, loc, broadcastShape(ins), f32);
    ElementwiseOp::create(b, loc, kind, ins, dest,
                          scalar ? b.getF64FloatAttr(*scalar) : FloatAttr());
    return dest;
  }

  Operand lookup(Value v) {
    auto it = env.find(v);
    if (it != env.end())
      return it->second;
    if (auto cst = v.getDefiningOp<arith::ConstantOp>())
      if (auto f = dyn_cast<FloatAttr>(cst.getValue()))
        return Operand{Value(), f.getValueAsDouble()};
    llvm_unreachable("operand checked by whyGenericNotLowerable");
  }

  Operand lowerBinary(ElementwiseKind kind, Operand x, Operand y, Value dest) {
    if (x.isScalar() && y.isScalar())
      return Operand{Value(), foldScalar(kind, x.scalar, y.scalar)};
    if (!x.isScalar() && !y.isScalar())
      return {emit(kind, {x.tile, y.tile}, dest)};
    if (!x.isScalar())
      return {emit(kind, {x.tile}, dest, y.scalar)};
    // Scalar on the left: swap where the kind allows it.
    switch (kind) {
    case ElementwiseKind::Add: case ElementwiseKind::Mul:
    case ElementwiseKind::Max: case ElementwiseKind::Min:
    case ElementwiseKind::CmpEq: case ElementwiseKind::CmpNe:
      return {emit(kind, {y.tile}, dest, x.scalar)};
    case ElementwiseKind::CmpLt:
      return {emit(ElementwiseKind::CmpGt, {y.tile}, dest, x.scalar)};
    case ElementwiseKind::CmpLe:
      return {emit(ElementwiseKind::CmpGe, {y.tile}, dest, x.scalar)};
    case ElementwiseKind::CmpGt:
      return {emit(ElementwiseKind::CmpLt, {y.tile}, dest, x.scalar)};
    case ElementwiseKind::CmpGe:
      return {emit(ElementwiseKind::CmpLe, {y.tile}, dest, x.scalar)};
    case ElementwiseKind::Sub: {
      Value neg = emit(ElementwiseKind::Neg, {y.tile}, Value());
      return {emit(ElementwiseKind::Add, {neg}, dest, x.scalar)};
    }
    case ElementwiseKind::Div: {
      if (x.scalar == 1.0)
        return {emit(ElementwiseKind::Recip, {y.tile}, dest)};
      Value recip = emit(ElementwiseKind::Recip, {y.tile}, Value());
      return {emit(ElementwiseKind::Mul, {recip}, dest, x.scalar)};
    }
    default:
      return {emit(kind, {unitTile(x.scalar), y.tile}, dest)};
    }
  }

  /// Lowers body op `bodyOp`, writing into `dest` when non-null.
  Operand lowerOp(Operation *bodyOp, Value dest) {
    if (auto cst = dyn_cast<arith::ConstantOp>(bodyOp))
      return Operand{Value(), cast<FloatAttr>(cst.getValue()).getValueAsDouble()};
    if (auto kind = unaryKind(bodyOp)) {
      Operand x = lookup(bodyOp->getOperand(0));
      if (x.isScalar())
        return Operand{Value(), foldScalar(*kind, x.scalar)};
      return {emit(*kind, {x.tile}, dest)};
    }
    if (auto kind = binaryKind(bodyOp))
      return lowerBinary(*kind, lookup(bodyOp->getOperand(0)),
                         lookup(bodyOp->getOperand(1)), dest);
    if (auto select = dyn_cast<arith::SelectOp>(bodyOp)) {
      Operand c = lookup(select.getCondition());
      Operand t = lookup(select.getTrueValue());
      Operand f = lookup(select.getFalseValue());
      if (c.isScalar())
        return c.scalar != 0.0 ? t : f;
      return {emit(ElementwiseKind::Select, {c.tile, asTile(t), asTile(f)}, dest)};
    }
    llvm_unreachable("body op checked by whyGenericNotLowerable");
  }

  LogicalResult run() {
    Block *body = op.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    SmallVector<unsigned> reductionDims;
    op.getReductionDims(reductionDims);

    // Inputs.
    for (OpOperand *in : op.getDpsInputOperands()) {
      Value tile = staging::stageIn(b, loc, in->get());
      env[body->getArgument(in->getOperandNumber())] =
          Operand{viewOverDomain(tile, op.getMatchingIndexingMap(in))};
    }

    // Outputs: which are reductions, and whether their old value is needed.
    struct Output {
      staging::StagedOutput staged;
      Value view;
      std::optional<ReductionKind> reduction;
      Operation *combiner = nullptr;
      Value mapped; // the combined value
    };
    SmallVector<Output> outputs;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      unsigned idx = init.getOperandNumber() - op.getNumDpsInputs();
      Output out;
      BlockArgument arg = body->getArgument(init.getOperandNumber());
      bool reads = !arg.use_empty();
      if (!reductionDims.empty()) {
        out.combiner = yield.getOperand(idx).getDefiningOp();
        out.reduction = combinerKind(out.combiner);
        out.mapped = out.combiner->getOperand(0) == arg
                         ? out.combiner->getOperand(1)
                         : out.combiner->getOperand(0);
        double fillValue;
        if (Operation *fill = staging::precedingFill(op, init.get(), &fillValue);
            fill && fillValue == identityOf(*out.reduction)) {
          b.eraseOp(fill);
          reads = false;
        }
      }
      out.staged = staging::stageOut(b, loc, init.get(), reads);
      out.view = staging::reshapeTile(
          b, loc, out.staged.tile,
          [&] {
            SmallVector<int64_t> view(rank, 1);
            AffineMap map = op.getMatchingIndexingMap(&init);
            for (auto [i, e] : llvm::enumerate(map.getResults()))
              if (auto d = dyn_cast<AffineDimExpr>(e))
                view[d.getPosition()] = staging::shapeOf(out.staged.tile)[i];
            return view;
          }());
      if (reads)
        env[arg] = Operand{out.view};
      outputs.push_back(out);
    }

    // Body ops, writing a yielded elementwise result straight to its output.
    llvm::SmallPtrSet<Operation *, 4> combiners;
    for (Output &out : outputs)
      if (out.combiner)
        combiners.insert(out.combiner);
    for (Operation &bodyOp : body->without_terminator()) {
      if (combiners.contains(&bodyOp))
        continue;
      Value dest;
      if (reductionDims.empty() && bodyOp.getNumResults() == 1 &&
          bodyOp.getResult(0).hasOneUse() &&
          isa<linalg::YieldOp>(*bodyOp.getResult(0).user_begin()) &&
          !isa<arith::ConstantOp>(bodyOp)) {
        unsigned idx = bodyOp.getResult(0).use_begin()->getOperandNumber();
        if (!env.count(body->getArgument(op.getNumDpsInputs() + idx)))
          dest = outputs[idx].view;
      }
      Operand result = lowerOp(&bodyOp, dest);
      env[bodyOp.getResult(0)] = result;
    }

    for (auto [idx, out] : llvm::enumerate(outputs)) {
      if (out.reduction) {
        Operand mapped = lookup(out.mapped);
        Value cur = asTile(mapped);
        ArrayRef<int64_t> domain = op.getStaticLoopRanges();
        // A mapped value that is broadcast along a reduced loop is expanded
        // so that the reduction counts every element.
        if (llvm::any_of(reductionDims, [&](unsigned d) {
              return staging::shapeOf(cur)[d] != domain[d];
            })) {
          SmallVector<int64_t> full(staging::shapeOf(cur));
          for (unsigned d : reductionDims)
            full[d] = domain[d];
          cur = emit(ElementwiseKind::Copy, {cur},
                     staging::allocTile(b, loc, full, f32));
        }
        for (auto [i, d] : llvm::enumerate(reductionDims)) {
          SmallVector<int64_t> shape(staging::shapeOf(cur));
          shape[d] = 1;
          bool last = i + 1 == reductionDims.size();
          bool direct = last && !env.count(body->getArgument(
                                    op.getNumDpsInputs() + idx)) &&
                        staging::shapeOf(out.view) == ArrayRef(shape);
          Value dst = direct ? out.view : staging::allocTile(b, loc, shape, f32);
          ReduceOp::create(b, loc, *out.reduction, cur, dst,
                           static_cast<uint64_t>(d));
          cur = dst;
        }
        if (cur != out.view) {
          BlockArgument arg = body->getArgument(op.getNumDpsInputs() + idx);
          if (env.count(arg))
            emit(combineKind(*out.reduction), {out.view, cur}, out.view);
          else
            emit(ElementwiseKind::Copy, {cur}, out.view);
        }
      } else {
        Operand result = lookup(yield.getOperand(idx));
        bool written = !result.isScalar() && result.tile == out.view;
        if (!written) {
          if (result.isScalar())
            FillOp::create(b, loc, b.getF64FloatAttr(result.scalar), out.view);
          else
            emit(ElementwiseKind::Copy, {result.tile}, out.view);
        }
      }
      out.staged.finish(b, loc);
    }
    return success();
  }

private:
  PatternRewriter &b;
  linalg::GenericOp op;
  Location loc;
  Type f32;
  unsigned rank;
  DenseMap<Value, Operand> env;
};

struct GenericToNova : public OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics() ||
        !lowering::whyGenericNotLowerable(op).empty())
      return failure();
    rewriter.setInsertionPoint(op);
    BodyLowering lowering(rewriter, op);
    if (failed(lowering.run()))
      return failure();
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

std::string mlir::nova::lowering::whyGenericNotLowerable(Operation *operation) {
  auto op = dyn_cast<linalg::GenericOp>(operation);
  if (!op)
    return "";
  auto describe = [](Operation *o) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "'" << o->getName() << "'";
    return s;
  };
  if (llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return "it has dynamic shapes";
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.hasStaticShape())
      return "an operand is not a statically shaped buffer (run nova-tile "
             "and nova-bufferize first)";
    if (!isa<FloatType>(type.getElementType()))
      return "an operand has element type " +
             [&] {
               std::string s;
               llvm::raw_string_ostream os(s);
               os << type.getElementType();
               return s;
             }() +
             "; the vector unit computes on floats";
  }
  for (AffineMap map : op.getIndexingMapsArray())
    for (AffineExpr e : map.getResults()) {
      if (isa<AffineDimExpr>(e))
        continue;
      auto c = dyn_cast<AffineConstantExpr>(e);
      if (!c || c.getValue() != 0)
        return "an indexing map is neither a projection nor a broadcast";
    }
  SmallVector<unsigned> reductionDims;
  op.getReductionDims(reductionDims);
  Block *body = op.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  llvm::SmallPtrSet<Operation *, 4> combiners;
  if (!reductionDims.empty()) {
    for (auto [idx, v] : llvm::enumerate(yield.getOperands())) {
      Operation *c = v.getDefiningOp();
      BlockArgument out = body->getArgument(op.getNumDpsInputs() + idx);
      if (!c || c->getBlock() != body || !combinerKind(c) ||
          (c->getOperand(0) != out && c->getOperand(1) != out))
        return "its reduction is not a sum, max or min into the output";
      if (!out.hasOneUse())
        return "it reads its reduction output outside the combiner";
      combiners.insert(c);
    }
  }
  for (Operation &bodyOp : body->without_terminator()) {
    if (combiners.contains(&bodyOp))
      continue;
    if (auto cst = dyn_cast<arith::ConstantOp>(bodyOp)) {
      if (!isa<FloatAttr>(cst.getValue()))
        return describe(&bodyOp) + " of a non-float value in its body";
      continue;
    }
    if (!unaryKind(&bodyOp) && !binaryKind(&bodyOp) &&
        !isa<arith::SelectOp>(bodyOp))
      return describe(&bodyOp) + " in its body has no nova lowering";
    for (Value v : bodyOp.getOperands()) {
      if (v.getParentBlock() == body)
        continue;
      auto cst = v.getDefiningOp<arith::ConstantOp>();
      if (!cst || !isa<FloatAttr>(cst.getValue()))
        return "its body uses a value from outside that is not a float "
               "constant";
    }
  }
  for (Value v : yield.getOperands())
    if (v.getParentBlock() != body && !v.getDefiningOp<arith::ConstantOp>())
      return "it yields a value from outside its body";
  return "";
}

void mlir::nova::lowering::populateGenericToNovaPatterns(
    RewritePatternSet &patterns) {
  patterns.add<GenericToNova>(patterns.getContext());
}
