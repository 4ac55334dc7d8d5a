//===- GenericToNova.cpp - linalg.generic onto the vector unit --*- C++ -*-===//
//
// The body of an elementwise or reduction generic is evaluated op by op on
// whole tiles: each arith/math op becomes one nova.elementwise over on-chip
// temporaries, operands broadcasting through unit dimensions (a generic's
// broadcast indexing maps become unit dims of a reshaped view). Floats are
// computed in f32, integers and bools in their own type (index as i64).
// Constants become the scalar operand of a binary op, or a filled unit tile.
// `linalg.index` becomes an iota plus the tile's offset (a loop index, filled
// from its register); a load from a buffer outside the body at computed
// positions becomes an indexed DMA (nova.gather) after a bounds check; a
// `cf.assert` becomes nova.assert. A reduction evaluates its mapped value
// first, then nova.reduce along each reduced loop, then combines with the
// output unless the output was just filled with the combiner's identity.
//
//===----------------------------------------------------------------------===//
#include "PayloadKinds.h"
#include "nova/Dialect/Nova/IR/ElementTypes.h"
#include "Patterns.h"
#include "Staging.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::nova;
using payload::computeType;
using payload::Scalar;

namespace {

/// A body value during evaluation: an on-chip tile, an index register from
/// outside the body, or a constant; all of element type `type` (a constant
/// holds `type`'s kind of value: an exact integer for integer types).
struct Operand {
  Value tile;
  Value reg;
  Scalar scalar;
  Type type;
  /// Derived from loaded data: a position computed from it is bounds checked.
  bool dataDependent = false;
  bool isConst() const { return !tile && !reg; }
};

/// The buffer and positions of a payload load from outside the body.
struct Load {
  Value source;
  ValueRange indices;
};

std::optional<Load> asOutsideLoad(Operation *op) {
  Block *body = op->getBlock();
  auto outside = [&](Value v) { return v.getParentBlock() != body; };
  if (auto load = dyn_cast<memref::LoadOp>(op); load && outside(load.getMemRef()))
    return Load{load.getMemRef(), load.getIndices()};
  if (auto extract = dyn_cast<tensor::ExtractOp>(op);
      extract && outside(extract.getTensor()))
    return Load{extract.getTensor(), extract.getIndices()};
  return std::nullopt;
}

/// Evaluates one generic's body on tiles.
class BodyLowering {
public:
  BodyLowering(PatternRewriter &rewriter, linalg::GenericOp op)
      : b(rewriter), op(op), loc(op.getLoc()), f32(rewriter.getF32Type()),
        i1(rewriter.getI1Type()), i64(rewriter.getI64Type()),
        rank(op.getNumLoops()) {}

  /// Views an on-chip tile of operand `map` as a tile over the iteration
  /// domain: dimensions the map does not use become unit dimensions. Float
  /// tiles are widened to f32.
  Value viewOverDomain(Value tile, AffineMap map) {
    SmallVector<int64_t> dims; // loop dim of each operand dim, -1 for const
    for (AffineExpr e : map.getResults())
      dims.push_back(isa<AffineDimExpr>(e)
                         ? (int64_t)cast<AffineDimExpr>(e).getPosition()
                         : -1);
    SmallVector<int64_t> shape(staging::shapeOf(tile));
    Type elt = cast<MemRefType>(tile.getType()).getElementType();
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
      Value t = staging::allocTile(b, loc, permShape, elt);
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
    Type wanted = computeType(elt);
    if (wanted != elt) {
      Value wide = staging::allocTile(b, loc, view, wanted);
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

  Value unitTile(const Operand &o) {
    Value t = staging::allocTile(b, loc, SmallVector<int64_t>(rank, 1), o.type);
    FillOp::create(b, loc,
                   payload::immediateAttr(
                       b, o.isConst() ? o.scalar : payload::zeroOf(o.type)),
                   t, o.reg);
    return t;
  }

  Value asTile(const Operand &o) { return o.tile ? o.tile : unitTile(o); }

  /// Emits `kind` over tile inputs into `dest` (allocated when null) of
  /// element type `type`; `scalar` has the inputs' kind of value.
  Value emit(ElementwiseKind kind, ArrayRef<Value> ins, Value dest, Type type,
             std::optional<Scalar> scalar = std::nullopt) {
    if (!dest)
      dest = staging::allocTile(b, loc, broadcastShape(ins), type);
    ElementwiseOp::create(b, loc, kind, ins, dest,
                          scalar ? payload::immediateAttr(b, *scalar)
                                 : Attribute());
    return dest;
  }

  Operand tileOperand(Value tile, Type type, bool dataDependent) {
    Operand o;
    o.tile = tile;
    o.type = type;
    o.dataDependent = dataDependent;
    return o;
  }

  /// A constant of `type`, `v` converted to its kind (a comparison's 0 / 1
  /// may become a float).
  Operand constOperand(Scalar v, Type type) {
    Operand o;
    o.scalar = payload::convert(v, type).value_or(v);
    o.type = type;
    return o;
  }

  Operand constOperand(int64_t v, Type type) {
    return constOperand(Scalar::ofInt(v), type);
  }

  FailureOr<Operand> lookup(Value v) {
    auto it = env.find(v);
    if (it != env.end())
      return it->second;
    if (auto cst = v.getDefiningOp<arith::ConstantOp>()) {
      Type type = computeType(v.getType());
      if (std::optional<Scalar> value = payload::scalarOf(cst.getValue()))
        return constOperand(*value, type);
    }
    if (v.getType().isIndex() && v.getParentBlock() != op.getBody()) {
      Operand o;
      o.reg = v;
      o.type = i64;
      return o;
    }
    return failure();
  }

  /// The type a body op's result is computed in.
  Type resultType(Operation *bodyOp) {
    if (Operation *cast = castOfCompare(bodyOp))
      return resultType(cast);
    return computeType(bodyOp->getResult(0).getType());
  }

  /// The one reader of float comparison `bodyOp` when it converts the i1 to
  /// the type compared in: the comparison then writes that type (1.0 / 0.0,
  /// isa.md 2.4) and the conversion, a copy of a tile to its own type, is
  /// no instruction. Saves a pass of i1 -> float copies (masks built from a
  /// comparison and multiplied in).
  Operation *castOfCompare(Operation *bodyOp) {
    if (!isa<arith::CmpFOp>(bodyOp) || !bodyOp->getResult(0).hasOneUse())
      return nullptr;
    Operation *user = *bodyOp->getResult(0).user_begin();
    if (!isa<arith::UIToFPOp>(user) ||
        computeType(user->getResult(0).getType()) !=
            computeType(bodyOp->getOperand(0).getType()))
      return nullptr;
    return user;
  }

  Operand lowerBinary(ElementwiseKind kind, Operand x, Operand y, Value dest,
                      Type type) {
    bool dep = x.dataDependent || y.dataDependent;
    Type operandType = x.type;
    if (x.isConst() && y.isConst())
      if (auto r = payload::fold(kind, operandType, x.scalar, y.scalar))
        return constOperand(*r, type);
    auto result = [&](Value t) { return tileOperand(t, type, dep); };
    // Every constant is an exact immediate: an i64 for integer tiles.
    auto scalarOk = [&](const Operand &c) { return c.isConst(); };
    if (x.tile && y.tile)
      return result(emit(kind, {x.tile, y.tile}, dest, type));
    // x + 0, x - 0, x * 1, x / 1: nothing to compute.
    if (!x.isConst() && y.isConst() && x.type == type &&
        ((y.scalar.is(0) && (kind == ElementwiseKind::Add ||
                             kind == ElementwiseKind::Sub)) ||
         (y.scalar.is(1) && (kind == ElementwiseKind::Mul ||
                              kind == ElementwiseKind::Div ||
                              (kind == ElementwiseKind::FloorDiv &&
                               isa<IntegerType>(type))))))
      return x;
    if (!y.isConst() && x.isConst() && y.type == type &&
        ((x.scalar.is(0) && kind == ElementwiseKind::Add) ||
         (x.scalar.is(1) && kind == ElementwiseKind::Mul)))
      return y;
    if (x.tile && scalarOk(y))
      return result(emit(kind, {x.tile}, dest, type, y.scalar));
    if (y.tile && scalarOk(x)) {
      // Scalar on the left: swap where the kind allows it.
      switch (kind) {
      case ElementwiseKind::Add: case ElementwiseKind::Mul:
      case ElementwiseKind::Max: case ElementwiseKind::Min:
      case ElementwiseKind::CmpEq: case ElementwiseKind::CmpNe:
      case ElementwiseKind::And: case ElementwiseKind::Or:
      case ElementwiseKind::Xor:
        return result(emit(kind, {y.tile}, dest, type, x.scalar));
      case ElementwiseKind::CmpLt:
        return result(emit(ElementwiseKind::CmpGt, {y.tile}, dest, type, x.scalar));
      case ElementwiseKind::CmpLe:
        return result(emit(ElementwiseKind::CmpGe, {y.tile}, dest, type, x.scalar));
      case ElementwiseKind::CmpGt:
        return result(emit(ElementwiseKind::CmpLt, {y.tile}, dest, type, x.scalar));
      case ElementwiseKind::CmpGe:
        return result(emit(ElementwiseKind::CmpLe, {y.tile}, dest, type, x.scalar));
      case ElementwiseKind::Sub: {
        Value neg = emit(ElementwiseKind::Neg, {y.tile}, Value(), operandType);
        return result(emit(ElementwiseKind::Add, {neg}, dest, type, x.scalar));
      }
      case ElementwiseKind::Div:
        if (isa<FloatType>(operandType)) {
          if (x.scalar.is(1))
            return result(emit(ElementwiseKind::Recip, {y.tile}, dest, type));
          Value recip = emit(ElementwiseKind::Recip, {y.tile}, Value(), type);
          return result(emit(ElementwiseKind::Mul, {recip}, dest, type, x.scalar));
        }
        break;
      default:
        break;
      }
    }
    return result(emit(kind, {asTile(x), asTile(y)}, dest, type));
  }

  /// Lowers a unary mapping (casts included) of `x` to `type`.
  Operand lowerUnary(const payload::Mapping &m, Operand x, Value dest,
                     Type type) {
    if (x.isConst()) {
      std::optional<Scalar> r = payload::fold(m.kind, type, x.scalar);
      if (m.negateAfter && r)
        r = payload::fold(ElementwiseKind::Neg, type, *r);
      if (r)
        return constOperand(*r, type);
    }
    if (m.kind == ElementwiseKind::Copy && x.type == type && !m.negateAfter)
      return x; // index_cast between index and i64, extf to f32, ...
    if (x.reg && m.kind == ElementwiseKind::Copy && type == i64)
      return x;
    Value in = asTile(x);
    Value out = emit(m.kind, {in}, m.negateAfter ? Value() : dest, type);
    if (m.negateAfter)
      out = emit(ElementwiseKind::Neg, {out}, dest, type);
    return tileOperand(out, type, x.dataDependent);
  }

  /// Evaluates affine expression `e` of a body affine.apply.
  FailureOr<Operand> lowerAffine(AffineExpr e, ArrayRef<Operand> dims,
                                 ArrayRef<Operand> syms) {
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return dims[d.getPosition()];
    if (auto s = dyn_cast<AffineSymbolExpr>(e))
      return syms[s.getPosition()];
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return constOperand(c.getValue(), i64);
    auto bin = cast<AffineBinaryOpExpr>(e);
    FailureOr<Operand> l = lowerAffine(bin.getLHS(), dims, syms);
    FailureOr<Operand> r = lowerAffine(bin.getRHS(), dims, syms);
    if (failed(l) || failed(r))
      return failure();
    ElementwiseKind kind;
    switch (e.getKind()) {
    case AffineExprKind::Add: kind = ElementwiseKind::Add; break;
    case AffineExprKind::Mul: kind = ElementwiseKind::Mul; break;
    case AffineExprKind::FloorDiv: kind = ElementwiseKind::FloorDiv; break;
    case AffineExprKind::Mod: {
      // a mod b = a - floordiv(a, b) * b (b > 0 in affine maps).
      Operand q = lowerBinary(ElementwiseKind::FloorDiv, *l, *r, Value(), i64);
      Operand qb = lowerBinary(ElementwiseKind::Mul, q, *r, Value(), i64);
      return lowerBinary(ElementwiseKind::Sub, *l, qb, Value(), i64);
    }
    case AffineExprKind::CeilDiv: {
      Operand negL = lowerBinary(ElementwiseKind::Mul, *l,
                                 constOperand(-1, i64), Value(), i64);
      Operand q = lowerBinary(ElementwiseKind::FloorDiv, negL, *r, Value(), i64);
      return lowerBinary(ElementwiseKind::Mul, q, constOperand(-1, i64),
                         Value(), i64);
    }
    default:
      return failure();
    }
    return lowerBinary(kind, *l, *r, Value(), i64);
  }

  /// A register Operand computed outside the body: an index-typed op whose
  /// operands all come from outside (or are constants) is hoisted in front
  /// of the generic.
  bool hoistable(Operation *bodyOp) {
    if (bodyOp->getNumResults() != 1 || !bodyOp->getResult(0).getType().isIndex())
      return false;
    if (!isa<affine::AffineApplyOp, arith::AddIOp, arith::SubIOp,
             arith::MulIOp>(bodyOp))
      return false;
    return llvm::all_of(bodyOp->getOperands(), [&](Value v) {
      return v.getParentBlock() != op.getBody() ||
             (env.count(v) && env.find(v)->second.reg);
    });
  }

  /// The gather of a load from a buffer outside the body: a flat position
  /// per element, bounds checks on data-dependent positions, one nova.gather.
  FailureOr<Operand> lowerLoad(Operation *bodyOp, const Load &load,
                               Value dest) {
    auto type = cast<ShapedType>(load.source.getType());
    SmallVector<Operand> idx;
    for (Value v : load.indices) {
      FailureOr<Operand> o = lookup(v);
      if (failed(o))
        return failure();
      idx.push_back(*o);
    }
    // Positions from data must lie inside their dimension: a flat position
    // could otherwise alias another element.
    for (auto [k, o] : llvm::enumerate(idx)) {
      if (!o.dataDependent)
        continue;
      int64_t size = type.getDimSize(k);
      Operand ge = lowerBinary(ElementwiseKind::CmpGe, o, constOperand(0, i64),
                               Value(), i1);
      Operand lt = lowerBinary(ElementwiseKind::CmpLt, o,
                               constOperand(size, i64), Value(), i1);
      Operand ok = lowerBinary(ElementwiseKind::And, ge, lt, Value(), i1);
      if (ok.tile)
        AssertOp::create(b, bodyOp->getLoc(), ok.tile,
                         b.getStringAttr("index out of range: dimension " +
                                         Twine(k) + " has size " +
                                         Twine(size)));
    }
    Operand pos = constOperand(0, i64);
    int64_t stride = 1;
    for (int64_t k = (int64_t)idx.size() - 1; k >= 0; --k) {
      Operand term = lowerBinary(ElementwiseKind::Mul, idx[k],
                                 constOperand(stride, i64), Value(), i64);
      pos = lowerBinary(ElementwiseKind::Add, pos, term, Value(), i64);
      stride *= type.getDimSize(k);
    }
    Value positions = asTile(pos);
    Type elt = type.getElementType();
    Value source = load.source;
    if (isa<TensorType>(source.getType()))
      return bodyOp->emitOpError("reads a tensor that was not bufferized"),
             failure();
    Value gathered = staging::allocTile(b, loc, staging::shapeOf(positions), elt);
    Value token = GatherOp::create(b, bodyOp->getLoc(), source, positions,
                                   gathered);
    WaitOp::create(b, loc, ValueRange{token});
    Type ct = computeType(elt);
    if (ct != elt)
      gathered = emit(ElementwiseKind::Copy, {gathered}, dest, ct);
    return tileOperand(gathered, ct, /*dataDependent=*/true);
  }

  /// Lowers body op `bodyOp`, writing into `dest` when non-null.
  FailureOr<Operand> lowerOp(Operation *bodyOp, Value dest) {
    if (isa<arith::ConstantOp>(bodyOp))
      return lookup(bodyOp->getResult(0));
    if (auto index = dyn_cast<linalg::IndexOp>(bodyOp)) {
      SmallVector<int64_t> shape(rank, 1);
      shape[index.getDim()] = op.getStaticLoopRanges()[index.getDim()];
      Value t = staging::allocTile(b, loc, shape, i64);
      IotaOp::create(b, loc, t, b.getI64IntegerAttr(index.getDim()));
      return tileOperand(t, i64, false);
    }
    if (hoistable(bodyOp)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(op);
      IRMapping map;
      for (Value v : bodyOp->getOperands())
        if (auto it = env.find(v); it != env.end())
          map.map(v, it->second.reg);
      Operation *clone = b.clone(*bodyOp, map);
      Operand o;
      o.reg = clone->getResult(0);
      o.type = i64;
      return o;
    }
    if (auto apply = dyn_cast<affine::AffineApplyOp>(bodyOp)) {
      AffineMap map = apply.getAffineMap();
      SmallVector<Operand> dims, syms;
      for (auto [i, v] : llvm::enumerate(apply.getMapOperands())) {
        FailureOr<Operand> o = lookup(v);
        if (failed(o))
          return failure();
        (i < map.getNumDims() ? dims : syms).push_back(*o);
      }
      return lowerAffine(map.getResult(0), dims, syms);
    }
    if (auto check = dyn_cast<cf::AssertOp>(bodyOp)) {
      FailureOr<Operand> c = lookup(check.getArg());
      if (failed(c))
        return failure();
      if (c->isConst()) {
        if (c->scalar.is(0))
          return bodyOp->emitError() << "assertion always fails: "
                                     << check.getMsg(),
                 failure();
        return *c; // proven at compile time
      }
      AssertOp::create(b, bodyOp->getLoc(), asTile(*c), check.getMsgAttr());
      return *c;
    }
    if (std::optional<Load> load = asOutsideLoad(bodyOp))
      return lowerLoad(bodyOp, *load, dest);
    if (auto select = dyn_cast<arith::SelectOp>(bodyOp)) {
      FailureOr<Operand> c = lookup(select.getCondition());
      FailureOr<Operand> t = lookup(select.getTrueValue());
      FailureOr<Operand> f = lookup(select.getFalseValue());
      if (failed(c) || failed(t) || failed(f))
        return failure();
      if (c->isConst())
        return !c->scalar.is(0) ? *t : *f;
      Type type = resultType(bodyOp);
      Value out = emit(ElementwiseKind::Select,
                       {asTile(*c), asTile(*t), asTile(*f)}, dest, type);
      return tileOperand(out, type,
                         c->dataDependent || t->dataDependent || f->dataDependent);
    }
    std::optional<payload::Mapping> m = payload::mapPayloadOp(bodyOp);
    if (!m)
      return failure();
    Type type = resultType(bodyOp);
    if (bodyOp->getNumOperands() == 1) {
      FailureOr<Operand> x = lookup(bodyOp->getOperand(0));
      if (failed(x))
        return failure();
      return lowerUnary(*m, *x, dest, type);
    }
    FailureOr<Operand> x = lookup(bodyOp->getOperand(0));
    FailureOr<Operand> y = lookup(bodyOp->getOperand(1));
    if (failed(x) || failed(y))
      return failure();
    if (m->ceilDiv) {
      Operand negX = lowerBinary(ElementwiseKind::Mul, *x,
                                 constOperand(-1, x->type), Value(), type);
      Operand q = lowerBinary(ElementwiseKind::FloorDiv, negX, *y, Value(), type);
      return lowerBinary(ElementwiseKind::Mul, q, constOperand(-1, type), dest,
                         type);
    }
    return lowerBinary(m->kind, *x, *y, dest, type);
  }

  LogicalResult run() {
    Block *body = op.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    SmallVector<unsigned> reductionDims;
    op.getReductionDims(reductionDims);

    // Inputs.
    for (OpOperand *in : op.getDpsInputOperands()) {
      Value tile = staging::stageIn(b, loc, in->get());
      Type elt = cast<MemRefType>(in->get().getType()).getElementType();
      env[body->getArgument(in->getOperandNumber())] = tileOperand(
          viewOverDomain(tile, op.getMatchingIndexingMap(in)),
          computeType(elt), /*dataDependent=*/!isa<FloatType>(elt));
    }

    // Outputs: which are reductions, and whether their old value is needed.
    struct Output {
      staging::StagedOutput staged;
      Value view;
      std::optional<ReductionKind> reduction;
      Operation *combiner = nullptr;
      Value mapped; // the combined value
      Type type;    // compute type
    };
    SmallVector<Output> outputs;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      unsigned idx = init.getOperandNumber() - op.getNumDpsInputs();
      Output out;
      BlockArgument arg = body->getArgument(init.getOperandNumber());
      Type elt = cast<MemRefType>(init.get().getType()).getElementType();
      out.type = computeType(elt);
      bool reads = !arg.use_empty();
      if (!reductionDims.empty()) {
        out.combiner = yield.getOperand(idx).getDefiningOp();
        out.reduction = payload::combinerKind(out.combiner);
        out.mapped = out.combiner->getOperand(0) == arg
                         ? out.combiner->getOperand(1)
                         : out.combiner->getOperand(0);
        Scalar fillValue;
        if (Operation *fill = staging::precedingFill(op, init.get(), &fillValue);
            fill && fillValue == payload::identityOf(*out.reduction, out.type)) {
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
      if (reads) {
        Value v = out.view;
        if (out.type != elt)
          v = emit(ElementwiseKind::Copy, {v}, Value(), out.type);
        env[arg] = tileOperand(v, out.type, false);
      }
      outputs.push_back(out);
    }

    // Body ops, writing a yielded elementwise result straight to its output
    // when it already has the output's type.
    llvm::SmallPtrSet<Operation *, 4> combiners;
    for (Output &out : outputs)
      if (out.combiner)
        combiners.insert(out.combiner);
    for (Operation &bodyOp : body->without_terminator()) {
      if (combiners.contains(&bodyOp))
        continue;
      Value dest;
      // A comparison whose conversion is yielded writes the output itself.
      Operation *last = castOfCompare(&bodyOp);
      if (!last)
        last = &bodyOp;
      if (reductionDims.empty() && last->getNumResults() == 1 &&
          last->getResult(0).hasOneUse() &&
          isa<linalg::YieldOp>(*last->getResult(0).user_begin()) &&
          !isa<arith::ConstantOp>(bodyOp)) {
        unsigned idx = last->getResult(0).use_begin()->getOperandNumber();
        Type outElt = cast<MemRefType>(outputs[idx].view.getType()).getElementType();
        if (!env.count(body->getArgument(op.getNumDpsInputs() + idx)) &&
            outElt == resultType(last))
          dest = outputs[idx].view;
      }
      FailureOr<Operand> result = lowerOp(&bodyOp, dest);
      if (failed(result))
        return bodyOp.emitOpError("has no nova lowering here");
      if (bodyOp.getNumResults() == 1)
        env[bodyOp.getResult(0)] = *result;
    }

    for (auto [idx, out] : llvm::enumerate(outputs)) {
      Type outElt = cast<MemRefType>(out.view.getType()).getElementType();
      if (out.reduction) {
        FailureOr<Operand> mapped = lookup(out.mapped);
        if (failed(mapped))
          return op.emitOpError("reduces a value it cannot evaluate");
        Value cur = asTile(*mapped);
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
                     staging::allocTile(b, loc, full, out.type), out.type);
        }
        BlockArgument arg = body->getArgument(op.getNumDpsInputs() + idx);
        for (auto [i, d] : llvm::enumerate(reductionDims)) {
          SmallVector<int64_t> shape(staging::shapeOf(cur));
          shape[d] = 1;
          bool last = i + 1 == reductionDims.size();
          bool direct = last && !env.count(arg) && outElt == out.type &&
                        staging::shapeOf(out.view) == ArrayRef(shape);
          Value dst =
              direct ? out.view : staging::allocTile(b, loc, shape, out.type);
          ReduceOp::create(b, loc, *out.reduction, cur, dst,
                           static_cast<uint64_t>(d));
          cur = dst;
        }
        if (cur != out.view) {
          if (env.count(arg)) {
            // Combine with the old output, in place when it has its type.
            Value old = env[arg].tile;
            cur = emit(payload::combineKind(*out.reduction), {old, cur},
                       old == out.view ? out.view : Value(), out.type);
          }
          if (cur != out.view)
            emit(ElementwiseKind::Copy, {cur}, out.view, outElt);
        }
      } else {
        FailureOr<Operand> result = lookup(yield.getOperand(idx));
        if (failed(result))
          return op.emitOpError("yields a value it cannot evaluate");
        bool written = result->tile && result->tile == out.view;
        if (!written) {
          if (result->isConst())
            FillOp::create(
                b, loc,
                payload::immediateAttr(
                    b, payload::convert(result->scalar, outElt)
                           .value_or(result->scalar)),
                out.view);
          else
            emit(ElementwiseKind::Copy, {asTile(*result)}, out.view, outElt);
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
  Type f32, i1, i64;
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

std::string describe(Operation *o) {
  return "'" + o->getName().getStringRef().str() + "'";
}

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// Why body op `bodyOp` of `op` cannot be evaluated on tiles ("" if it can).
std::string whyBodyOpNotLowerable(linalg::GenericOp op, Operation &bodyOp) {
  Block *body = op.getBody();
  for (Type t : bodyOp.getResultTypes())
    if (!computeType(t))
      return describe(&bodyOp) + " computes a value of type " + typeString(t) +
             ", which the vector unit does not hold";
  if (auto check = dyn_cast<cf::AssertOp>(bodyOp)) {
    // A check that fails for every element is a compile-time error.
    if (auto cst = check.getArg().getDefiningOp<arith::ConstantIntOp>();
        cst && cst.value() == 0)
      return "its assertion always fails: " + check.getMsg().str();
    return "";
  }
  if (isa<arith::ConstantOp, linalg::IndexOp, affine::AffineApplyOp,
          arith::SelectOp>(bodyOp))
    return "";
  if (std::optional<Load> load = asOutsideLoad(&bodyOp)) {
    auto type = cast<ShapedType>(load->source.getType());
    if (!type.hasStaticShape())
      return describe(&bodyOp) + " reads a buffer of dynamic shape";
    if (!isTileElementType(type.getElementType()))
      return describe(&bodyOp) + " reads elements of type " +
             typeString(type.getElementType());
    return "";
  }
  std::string why;
  if (!payload::mapPayloadOp(&bodyOp, &why))
    return describe(&bodyOp) + " in its body has no nova lowering: " + why;
  for (Value v : bodyOp.getOperands()) {
    if (v.getParentBlock() == body || v.getType().isIndex())
      continue;
    auto cst = v.getDefiningOp<arith::ConstantOp>();
    if (!cst || !isa<FloatAttr, IntegerAttr>(cst.getValue()))
      return "its body uses a value from outside that is not a constant or "
             "an index";
  }
  return "";
}
} // namespace

std::string mlir::nova::lowering::whyGenericNotLowerable(Operation *operation) {
  auto op = dyn_cast<linalg::GenericOp>(operation);
  if (!op)
    return "";
  if (llvm::any_of(op.getStaticLoopRanges(), ShapedType::isDynamic))
    return "it has dynamic shapes";
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.hasStaticShape())
      return "an operand is not a statically shaped buffer (run nova-tile "
             "and nova-bufferize first)";
    if (!isTileElementType(type.getElementType()))
      return "an operand has element type " +
             typeString(type.getElementType()) +
             "; the vector unit holds f32, bf16, f16, i64, i32, i8 and i1";
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
      if (!c || c->getBlock() != body || !payload::combinerKind(c) ||
          (c->getOperand(0) != out && c->getOperand(1) != out))
        return "its reduction is not a sum, product, max or min into the "
               "output";
      if (!out.hasOneUse())
        return "it reads its reduction output outside the combiner";
      combiners.insert(c);
    }
  }
  for (Operation &bodyOp : body->without_terminator()) {
    if (combiners.contains(&bodyOp))
      continue;
    std::string why = whyBodyOpNotLowerable(op, bodyOp);
    if (!why.empty())
      return why;
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
