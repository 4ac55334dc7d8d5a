//===- PayloadKinds.cpp - arith/math payload ops as vector kinds ----------===//
#include "PayloadKinds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
#include "nova/Dialect/Nova/IR/ElementTypes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::nova;
using K = ElementwiseKind;

Type payload::computeType(Type t) {
  MLIRContext *ctx = t.getContext();
  if (isa<FloatType>(t))
    return isTileFloatType(t) || t.isF64() ? Float32Type::get(ctx) : Type();
  if (t.isIndex())
    return IntegerType::get(ctx, 64);
  if (isTileIntegerType(t))
    return t;
  return Type();
}

static std::optional<K> cmpFKind(arith::CmpFPredicate p) {
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::OEQ: case P::UEQ: return K::CmpEq;
  case P::ONE: case P::UNE: return K::CmpNe;
  case P::OLT: case P::ULT: return K::CmpLt;
  case P::OLE: case P::ULE: return K::CmpLe;
  case P::OGT: case P::UGT: return K::CmpGt;
  case P::OGE: case P::UGE: return K::CmpGe;
  default: return std::nullopt;
  }
}

static std::optional<K> cmpIKind(arith::CmpIPredicate p) {
  using P = arith::CmpIPredicate;
  switch (p) {
  case P::eq: return K::CmpEq;
  case P::ne: return K::CmpNe;
  case P::slt: return K::CmpLt;
  case P::sle: return K::CmpLe;
  case P::sgt: return K::CmpGt;
  case P::sge: return K::CmpGe;
  default: return std::nullopt; // unsigned comparisons
  }
}

/// A lower bound of an index value, where one follows from its definition:
/// loop indices (of the generic, of the tile loops around it, of affine maps
/// over them with non-negative coefficients) and the window arithmetic
/// torch-mlir builds from them (adaptive pooling's bounds). Two values with
/// non-negative bounds compare the same signed and unsigned.
static std::optional<int64_t> lowerBound(Value v, int depth = 0) {
  if (depth > 24)
    return std::nullopt;
  auto bound = [&](Value x) { return lowerBound(x, depth + 1); };
  APInt constant;
  if (matchPattern(v, m_ConstantInt(&constant)))
    return constant.getSExtValue();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp());
    if (loop && arg == loop.getInductionVar())
      return bound(loop.getLowerBound());
    return std::nullopt;
  }
  Operation *def = v.getDefiningOp();
  if (isa<linalg::IndexOp, arith::ExtUIOp>(def))
    return 0;
  if (isa<arith::IndexCastOp, arith::ExtSIOp>(def))
    return bound(def->getOperand(0));
  if (auto apply = dyn_cast<affine::AffineApplyOp>(def)) {
    AffineExpr expr = apply.getAffineMap().getResult(0);
    // Sums of operands times non-negative constants, plus non-negative
    // constants, over non-negative operands: at least 0.
    bool ok = true;
    expr.walk([&](AffineExpr e) {
      if (auto bin = dyn_cast<AffineBinaryOpExpr>(e)) {
        if (e.getKind() == AffineExprKind::Mul) {
          auto c = dyn_cast<AffineConstantExpr>(bin.getRHS());
          ok &= c && c.getValue() >= 0;
        } else if (e.getKind() != AffineExprKind::Add) {
          ok = false;
        }
      } else if (auto c = dyn_cast<AffineConstantExpr>(e)) {
        ok &= c.getValue() >= 0;
      }
    });
    if (!ok)
      return std::nullopt;
    for (Value operand : apply.getMapOperands()) {
      std::optional<int64_t> lb = bound(operand);
      if (!lb || *lb < 0)
        return std::nullopt;
    }
    return 0;
  }
  if (isa<arith::RemSIOp, arith::RemUIOp>(def)) {
    std::optional<int64_t> a = bound(def->getOperand(0));
    return a && *a >= 0 ? std::optional<int64_t>(0) : std::nullopt;
  }
  if (def->getNumOperands() != 2)
    return std::nullopt;
  std::optional<int64_t> a = bound(def->getOperand(0));
  if (!a)
    return std::nullopt;
  if (isa<arith::SubIOp>(def)) {
    APInt c;
    if (!matchPattern(def->getOperand(1), m_ConstantInt(&c)))
      return std::nullopt;
    return *a - c.getSExtValue();
  }
  std::optional<int64_t> b = bound(def->getOperand(1));
  if (!b)
    return std::nullopt;
  if (isa<arith::AddIOp>(def))
    return *a + *b;
  if (isa<arith::MulIOp>(def) && *a >= 0 && *b >= 0)
    return *a * *b;
  if (isa<arith::MaxSIOp>(def))
    return std::max(*a, *b);
  if (isa<arith::MinSIOp>(def))
    return std::min(*a, *b);
  if (isa<arith::FloorDivSIOp, arith::DivSIOp, arith::DivUIOp, arith::CeilDivSIOp>(def)) {
    APInt c;
    if (*a < 0 || !matchPattern(def->getOperand(1), m_ConstantInt(&c)) || !c.isStrictlyPositive())
      return std::nullopt;
    return *a / c.getSExtValue();
  }
  return std::nullopt;
}

static bool knownNonNegative(Value v) {
  std::optional<int64_t> lb = lowerBound(v);
  return lb && *lb >= 0;
}

static std::optional<K> unsignedAsSigned(arith::CmpIOp cmp) {
  if (!knownNonNegative(cmp.getLhs()) || !knownNonNegative(cmp.getRhs()))
    return std::nullopt;
  using P = arith::CmpIPredicate;
  switch (cmp.getPredicate()) {
  case P::ult: return K::CmpLt;
  case P::ule: return K::CmpLe;
  case P::ugt: return K::CmpGt;
  case P::uge: return K::CmpGe;
  default: return std::nullopt;
  }
}

static bool fromI1(Operation *op) {
  return op->getOperand(0).getType().isInteger(1);
}

/// Integer ops on i1 as the vector unit's bool ops. The unit holds i1 as
/// 0/1 and compares it unsigned, while arith's signed view of i1 is 0/-1:
/// signed orders flip, add/sub are xor, mul is and, abs is the value.
static std::optional<K> i1Kind(Operation *op) {
  if (op->getNumOperands() == 0 || !fromI1(op) ||
      !llvm::all_of(op->getOperandTypes(), [](Type t) { return t.isInteger(1); }))
    return std::nullopt;
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    using P = arith::CmpIPredicate;
    switch (cmp.getPredicate()) {
    case P::eq: return K::CmpEq;
    case P::ne: return K::CmpNe;
    case P::ult: case P::sgt: return K::CmpLt;
    case P::ule: case P::sge: return K::CmpLe;
    case P::ugt: case P::slt: return K::CmpGt;
    case P::uge: case P::sle: return K::CmpGe;
    }
  }
  return llvm::TypeSwitch<Operation *, std::optional<K>>(op)
      .Case<arith::AddIOp, arith::SubIOp>([](auto) { return K::Xor; })
      .Case<arith::MulIOp>([](auto) { return K::And; })
      .Case<math::AbsIOp>([](auto) { return K::Copy; })
      .Case<arith::MaxSIOp, arith::MinUIOp>([](auto) { return K::Min; })
      .Case<arith::MinSIOp, arith::MaxUIOp>([](auto) { return K::Max; })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<payload::Mapping> payload::mapPayloadOp(Operation *op,
                                                      std::string *why) {
  auto fail = [&](StringRef reason) -> std::optional<Mapping> {
    if (why)
      *why = reason.str();
    return std::nullopt;
  };
  if (std::optional<K> k = i1Kind(op))
    return Mapping{*k};
  if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    if (auto k = cmpFKind(cmp.getPredicate()))
      return Mapping{*k};
    return fail("a float comparison with an always-true/false or ordered-ness "
                "predicate");
  }
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    if (auto k = cmpIKind(cmp.getPredicate()))
      return Mapping{*k};
    if (auto k = unsignedAsSigned(cmp))
      return Mapping{*k};
    return fail("an unsigned integer comparison (the vector unit compares "
                "signed)");
  }
  // Unsigned conversions are exact only from i1.
  if (isa<arith::UIToFPOp, arith::ExtUIOp>(op) && !fromI1(op))
    return fail("an unsigned conversion of a value wider than i1");
  if (isa<arith::ExtSIOp>(op) && fromI1(op))
    return Mapping{K::Copy, /*negateAfter=*/true};
  if (isa<arith::CeilDivSIOp>(op))
    return Mapping{K::FloorDiv, false, /*ceilDiv=*/true};
  std::optional<K> kind =
      llvm::TypeSwitch<Operation *, std::optional<K>>(op)
          // Unary floats.
          .Case<arith::NegFOp>([](auto) { return K::Neg; })
          .Case<math::AbsFOp, math::AbsIOp>([](auto) { return K::Abs; })
          .Case<math::ExpOp>([](auto) { return K::Exp; })
          .Case<math::LogOp>([](auto) { return K::Log; })
          .Case<math::SqrtOp>([](auto) { return K::Sqrt; })
          .Case<math::RsqrtOp>([](auto) { return K::Rsqrt; })
          .Case<math::TanhOp>([](auto) { return K::Tanh; })
          .Case<math::ErfOp>([](auto) { return K::Erf; })
          .Case<math::FloorOp>([](auto) { return K::Floor; })
          .Case<math::CeilOp>([](auto) { return K::Ceil; })
          .Case<math::RoundEvenOp>([](auto) { return K::Round; })
          .Case<math::TruncOp>([](auto) { return K::Trunc; })
          .Case<math::SinOp>([](auto) { return K::Sin; })
          .Case<math::CosOp>([](auto) { return K::Cos; })
          .Case<math::Log1pOp>([](auto) { return K::Log1p; })
          // Conversions: the vector unit's copy converts (isa.md 2.6).
          .Case<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
                arith::UIToFPOp, arith::FPToSIOp, arith::ExtSIOp,
                arith::ExtUIOp, arith::TruncIOp, arith::IndexCastOp,
                arith::IndexCastUIOp>([](auto) { return K::Copy; })
          // Binary.
          .Case<arith::AddFOp, arith::AddIOp>([](auto) { return K::Add; })
          .Case<arith::SubFOp, arith::SubIOp>([](auto) { return K::Sub; })
          .Case<arith::MulFOp, arith::MulIOp>([](auto) { return K::Mul; })
          .Case<arith::DivFOp, arith::DivSIOp>([](auto) { return K::Div; })
          .Case<arith::RemFOp, arith::RemSIOp>([](auto) { return K::Rem; })
          .Case<arith::FloorDivSIOp>([](auto) { return K::FloorDiv; })
          .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(
              [](auto) { return K::Max; })
          .Case<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(
              [](auto) { return K::Min; })
          .Case<math::PowFOp>([](auto) { return K::Pow; })
          .Case<arith::AndIOp>([](auto) { return K::And; })
          .Case<arith::OrIOp>([](auto) { return K::Or; })
          .Case<arith::XOrIOp>([](auto) { return K::Xor; })
          .Case<arith::ShLIOp>([](auto) { return K::Shl; })
          .Case<arith::ShRSIOp>([](auto) { return K::Shr; })
          .Case<arith::ShRUIOp>([](auto) { return K::ShrU; })
          .Default([](Operation *) { return std::nullopt; });
  if (!kind)
    return fail("'" + op->getName().getStringRef().str() +
                "' has no vector-unit form");
  return Mapping{*kind};
}

std::optional<ReductionKind> payload::combinerKind(Operation *op) {
  bool isBool = op->getNumResults() == 1 &&
                op->getResult(0).getType().isInteger(1);
  // On i1 (0/1, unsigned order): mul and signed max are "all", signed min
  // is "any"; a sum is an xor, which no reduction kind is.
  if (isBool && isa<arith::AddIOp>(op))
    return std::nullopt;
  if (isBool && isa<arith::MulIOp, arith::MaxSIOp>(op))
    return ReductionKind::Min;
  if (isBool && isa<arith::MinSIOp>(op))
    return ReductionKind::Max;
  return llvm::TypeSwitch<Operation *, std::optional<ReductionKind>>(op)
      .Case<arith::AddFOp, arith::AddIOp>(
          [](auto) { return ReductionKind::Sum; })
      .Case<arith::MulFOp, arith::MulIOp>(
          [](auto) { return ReductionKind::Prod; })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(
          [](auto) { return ReductionKind::Max; })
      .Case<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(
          [](auto) { return ReductionKind::Min; })
      .Case<arith::OrIOp>([&](auto) -> std::optional<ReductionKind> {
        if (isBool)
          return ReductionKind::Max;
        return std::nullopt;
      })
      .Case<arith::AndIOp>([&](auto) -> std::optional<ReductionKind> {
        if (isBool)
          return ReductionKind::Min;
        return std::nullopt;
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The smallest and largest value of integer type `t` (i1: 0 and 1).
static int64_t intMin(Type t) {
  unsigned w = t.getIntOrFloatBitWidth();
  return w == 1 ? 0 : w >= 64 ? std::numeric_limits<int64_t>::min()
                              : -(int64_t(1) << (w - 1));
}

static int64_t intMax(Type t) {
  unsigned w = t.getIntOrFloatBitWidth();
  return w == 1 ? 1 : w >= 64 ? std::numeric_limits<int64_t>::max()
                              : (int64_t(1) << (w - 1)) - 1;
}

/// Wraps `v` to the signed range of integer `type` (two's complement; an
/// i1 is `v != 0`).
static int64_t wrap(uint64_t v, Type type) {
  unsigned w = type.getIntOrFloatBitWidth();
  if (w == 1)
    return v != 0;
  if (w >= 64)
    return int64_t(v);
  return llvm::SignExtend64(v, w);
}

std::optional<payload::Scalar> payload::scalarOf(Attribute attr) {
  if (auto f = dyn_cast<FloatAttr>(attr))
    return Scalar::ofFloat(f.getValueAsDouble());
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return Scalar::ofInt(i.getType().isInteger(1)
                             ? int64_t(i.getValue().getBoolValue())
                             : i.getValue().getSExtValue());
  return std::nullopt;
}

std::optional<payload::Scalar> payload::convert(Scalar s, Type type) {
  if (!isa<IntegerType>(type))
    return s.isInt ? Scalar::ofFloat(double(s.i)) : s;
  if (s.isInt)
    return Scalar::ofInt(wrap(uint64_t(s.i), type));
  if (type.isInteger(1))
    return Scalar::ofInt(s.f != 0.0);
  double t = std::trunc(s.f);
  // [intMin, intMax + 1) as doubles: both bounds are powers of two.
  if (std::isnan(t) || t < double(intMin(type)) ||
      t >= -double(intMin(type)))
    return std::nullopt;
  return Scalar::ofInt(int64_t(t));
}

Attribute payload::immediateAttr(Builder &b, Scalar s) {
  if (s.isInt)
    return b.getI64IntegerAttr(s.i);
  return b.getF64FloatAttr(s.f);
}

payload::Scalar payload::identityOf(ReductionKind kind, Type type) {
  if (isa<IntegerType>(type)) {
    switch (kind) {
    case ReductionKind::Prod: return Scalar::ofInt(1);
    case ReductionKind::Max: return Scalar::ofInt(intMin(type));
    case ReductionKind::Min: return Scalar::ofInt(intMax(type));
    default: return Scalar::ofInt(0);
    }
  }
  switch (kind) {
  case ReductionKind::Prod: return Scalar::ofFloat(1.0);
  case ReductionKind::Max: return Scalar::ofFloat(-INFINITY);
  case ReductionKind::Min: return Scalar::ofFloat(INFINITY);
  default: return Scalar::ofFloat(0.0);
  }
}

ElementwiseKind payload::combineKind(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Max: return K::Max;
  case ReductionKind::Min: return K::Min;
  case ReductionKind::Prod: return K::Mul;
  default: return K::Add;
  }
}

/// `fold` on floats: computed in double, rounded to f32 as the vector unit
/// rounds.
static std::optional<payload::Scalar> foldFloat(ElementwiseKind kind,
                                                double a, double b) {
  using payload::Scalar;
  double r;
  switch (kind) {
  case K::Neg: r = -a; break;
  case K::Abs: r = std::fabs(a); break;
  case K::Exp: r = std::exp(a); break;
  case K::Log: r = std::log(a); break;
  case K::Sqrt: r = std::sqrt(a); break;
  case K::Rsqrt: r = 1.0 / std::sqrt(a); break;
  case K::Recip: r = 1.0 / a; break;
  case K::Tanh: r = std::tanh(a); break;
  case K::Erf: r = std::erf(a); break;
  case K::Sigmoid: r = 1.0 / (1.0 + std::exp(-a)); break;
  case K::Relu: r = a > 0 ? a : 0.0; break;
  case K::Floor: r = std::floor(a); break;
  case K::Ceil: r = std::ceil(a); break;
  case K::Round: r = std::nearbyint(a); break;
  case K::Trunc: r = std::trunc(a); break;
  case K::Sin: r = std::sin(a); break;
  case K::Cos: r = std::cos(a); break;
  case K::Log1p: r = std::log1p(a); break;
  case K::Add: r = a + b; break;
  case K::Sub: r = a - b; break;
  case K::Mul: r = a * b; break;
  case K::Div: r = a / b; break;
  case K::Rem: r = std::fmod(a, b); break;
  case K::FloorDiv: r = std::floor(a / b); break;
  case K::Max: r = std::max(a, b); break;
  case K::Min: r = std::min(a, b); break;
  case K::Pow: r = std::pow(a, b); break;
  case K::CmpEq: return Scalar::ofInt(a == b);
  case K::CmpNe: return Scalar::ofInt(a != b);
  case K::CmpLt: return Scalar::ofInt(a < b);
  case K::CmpLe: return Scalar::ofInt(a <= b);
  case K::CmpGt: return Scalar::ofInt(a > b);
  case K::CmpGe: return Scalar::ofInt(a >= b);
  default:
    return std::nullopt; // bitwise kinds, shifts and selects
  }
  return Scalar::ofFloat(double(float(r)));
}

/// `fold` on integers of `type`: exact, wrapping (docs/isa.md 2.6).
static std::optional<payload::Scalar> foldInt(ElementwiseKind kind, Type type,
                                              int64_t x, int64_t y) {
  using payload::Scalar;
  uint64_t ux = uint64_t(x), uy = uint64_t(y);
  auto result = [&](uint64_t v) { return Scalar::ofInt(wrap(v, type)); };
  switch (kind) {
  case K::Neg: return result(0 - ux);
  case K::Abs: return result(x < 0 ? 0 - ux : ux);
  case K::Add: return result(ux + uy);
  case K::Sub: return result(ux - uy);
  case K::Mul: return result(ux * uy);
  case K::Div: case K::Rem: case K::FloorDiv: {
    if (y == 0)
      return std::nullopt; // faults on chip
    if (y == -1) // x / -1 wraps at the minimum; C++ would overflow
      return result(kind == K::Rem ? 0 : 0 - ux);
    int64_t q = x / y, r = x % y;
    if (kind == K::Rem)
      return result(uint64_t(r));
    if (kind == K::FloorDiv && r != 0 && ((r < 0) != (y < 0)))
      --q;
    return result(uint64_t(q));
  }
  case K::Max: return result(uint64_t(std::max(x, y)));
  case K::Min: return result(uint64_t(std::min(x, y)));
  case K::CmpEq: return Scalar::ofInt(x == y);
  case K::CmpNe: return Scalar::ofInt(x != y);
  case K::CmpLt: return Scalar::ofInt(x < y);
  case K::CmpLe: return Scalar::ofInt(x <= y);
  case K::CmpGt: return Scalar::ofInt(x > y);
  case K::CmpGe: return Scalar::ofInt(x >= y);
  case K::Not: return result(type.isInteger(1) ? uint64_t(x == 0) : ~ux);
  case K::And: return result(ux & uy);
  case K::Or: return result(ux | uy);
  case K::Xor: return result(ux ^ uy);
  default:
    return std::nullopt; // float-only kinds, shifts and selects
  }
}

std::optional<payload::Scalar> payload::fold(ElementwiseKind kind, Type type,
                                             Scalar a, Scalar b) {
  bool isInt = isa<IntegerType>(type);
  if (kind == K::Copy) {
    // The vector unit computes floats in f32: int -> f32 rounds once.
    if (!isInt)
      return Scalar::ofFloat(a.isInt ? double(float(a.i)) : double(float(a.f)));
    return convert(a, type);
  }
  // Both operands hold `type`'s kind (a unary kind's default `b` aside).
  if (a.isInt != isInt)
    return std::nullopt;
  if (isInt)
    return foldInt(kind, type, a.i, b.isInt ? b.i : 0);
  return foldFloat(kind, a.f, b.isInt ? 0.0 : b.f);
}
