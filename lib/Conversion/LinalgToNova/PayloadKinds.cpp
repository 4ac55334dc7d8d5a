//===- PayloadKinds.cpp - arith/math payload ops as vector kinds ----------===//
#include "PayloadKinds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "nova/Dialect/Nova/IR/ElementTypes.h"
#include "llvm/ADT/TypeSwitch.h"

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

static bool fromI1(Operation *op) {
  return op->getOperand(0).getType().isInteger(1);
}

std::optional<payload::Mapping> payload::mapPayloadOp(Operation *op,
                                                      std::string *why) {
  auto fail = [&](StringRef reason) -> std::optional<Mapping> {
    if (why)
      *why = reason.str();
    return std::nullopt;
  };
  if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
    if (auto k = cmpFKind(cmp.getPredicate()))
      return Mapping{*k};
    return fail("a float comparison with an always-true/false or ordered-ness "
                "predicate");
  }
  if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    if (auto k = cmpIKind(cmp.getPredicate()))
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

static double intMin(Type t) {
  unsigned w = t.getIntOrFloatBitWidth();
  return w == 1 ? 0.0 : -std::ldexp(1.0, w - 1);
}

static double intMax(Type t) {
  unsigned w = t.getIntOrFloatBitWidth();
  return w == 1 ? 1.0 : std::ldexp(1.0, w - 1) - 1.0;
}

double payload::identityOf(ReductionKind kind, Type type) {
  bool isInt = isa<IntegerType>(type);
  switch (kind) {
  case ReductionKind::Sum: case ReductionKind::Avg: return 0.0;
  case ReductionKind::Prod: return 1.0;
  case ReductionKind::Max: return isInt ? intMin(type) : -INFINITY;
  case ReductionKind::Min: return isInt ? intMax(type) : INFINITY;
  default: return 0.0;
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

/// Wraps `v` to the signed range of `type` (two's complement).
static double wrap(double v, Type type) {
  unsigned w = type.getIntOrFloatBitWidth();
  if (w == 1)
    return v != 0.0 ? 1.0 : 0.0;
  if (w >= 64)
    return v;
  double span = std::ldexp(1.0, w);
  double r = std::fmod(v - intMin(type), span);
  if (r < 0)
    r += span;
  return r + intMin(type);
}

std::optional<double> payload::fold(ElementwiseKind kind, Type type, double a,
                                    double b) {
  bool isInt = isa<IntegerType>(type);
  double r;
  switch (kind) {
  case K::Copy: r = a; break;
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
  case K::Div:
    if (isInt && b == 0.0)
      return std::nullopt;
    r = isInt ? std::trunc(a / b) : a / b;
    break;
  case K::Rem:
    if (isInt && b == 0.0)
      return std::nullopt;
    r = std::fmod(a, b);
    break;
  case K::FloorDiv:
    if (isInt && b == 0.0)
      return std::nullopt;
    r = std::floor(a / b);
    break;
  case K::Max: r = std::max(a, b); break;
  case K::Min: r = std::min(a, b); break;
  case K::Pow: r = std::pow(a, b); break;
  case K::CmpEq: return a == b;
  case K::CmpNe: return a != b;
  case K::CmpLt: return a < b;
  case K::CmpLe: return a <= b;
  case K::CmpGt: return a > b;
  case K::CmpGe: return a >= b;
  case K::Not:
    r = type.isInteger(1) ? (a == 0.0) : -a - 1.0;
    break;
  case K::And: case K::Or: case K::Xor: {
    if (!isInt || std::fabs(a) > 9.0e15 || std::fabs(b) > 9.0e15)
      return std::nullopt;
    int64_t x = int64_t(a), y = int64_t(b);
    r = double(kind == K::And ? (x & y) : kind == K::Or ? (x | y) : (x ^ y));
    break;
  }
  default:
    return std::nullopt; // shifts and selects are not folded
  }
  if (!isInt)
    return double(float(r)); // the vector unit rounds to f32
  if (!std::isfinite(r) || std::fabs(r) > 9.0e15)
    return std::nullopt;
  return wrap(r, type);
}

bool payload::isExactImmediate(double v, Type type) {
  if (!isa<IntegerType>(type))
    return true;
  if (v == intMin(type) || v == intMax(type))
    return true;
  return std::fabs(v) <= 9007199254740992.0 && v == std::trunc(v);
}
