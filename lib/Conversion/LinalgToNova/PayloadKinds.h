//===- PayloadKinds.h - arith/math payload ops as vector kinds --*- C++ -*-===//
//
// The one table from the scalar ops of a linalg.generic payload (arith, math)
// to the vector unit's elementwise kinds, with the element type each
// computes in, and the folding of constant operands with the vector unit's
// semantics (docs/isa.md 2.4, 2.6).
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_LIB_CONVERSION_LINALGTONOVA_PAYLOADKINDS_H
#define NOVA_LIB_CONVERSION_LINALGTONOVA_PAYLOADKINDS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include <optional>

namespace mlir::nova::payload {

/// A compile-time constant as the vector unit holds it: the exact
/// two's-complement value for integer, i1 (0 / 1) and index types, a double
/// for floats (a double holds integers exactly only up to 2^53).
struct Scalar {
  bool isInt = false;
  int64_t i = 0;
  double f = 0.0;

  static Scalar ofInt(int64_t v) {
    Scalar s;
    s.isInt = true;
    s.i = v;
    return s;
  }
  static Scalar ofFloat(double v) {
    Scalar s;
    s.f = v;
    return s;
  }
  /// True if the constant equals the small integer `v` (as a float, for a
  /// float constant: -0.0 is 0).
  bool is(int64_t v) const { return isInt ? i == v : f == double(v); }
  bool operator==(const Scalar &o) const {
    return isInt == o.isInt && (isInt ? i == o.i : f == o.f);
  }
};

/// The value of constant attribute `attr` (FloatAttr, IntegerAttr; an i1 as
/// 0 / 1), or nullopt.
std::optional<Scalar> scalarOf(Attribute attr);

/// `s` converted to type `type` as the vector unit's copy converts
/// (docs/isa.md 2.6): ints wrap to the width, any -> i1 is `!= 0`, floats
/// truncate to ints (nullopt for NaN or out of range: that faults on chip),
/// ints become doubles; floats stay doubles (no rounding to `type`).
std::optional<Scalar> convert(Scalar s, Type type);

/// The immediate attribute of `s` (nova.fill value, elementwise scalar): an
/// i64 IntegerAttr for an integer, an f64 FloatAttr for a float.
Attribute immediateAttr(Builder &b, Scalar s);

/// The zero of type `type`'s kind.
inline Scalar zeroOf(Type type) {
  return isa<IntegerType>(type) ? Scalar::ofInt(0) : Scalar::ofFloat(0.0);
}

/// The element type a payload value of type `t` is computed in on chip:
/// floats in f32, `index` as i64, i64/i32/i8/i1 as themselves; null when the
/// vector unit has no such type (i16, complex, ...).
Type computeType(Type t);

/// How one payload op maps onto the vector unit.
struct Mapping {
  ElementwiseKind kind;
  /// `extsi` of an i1 gives -1 for true: a copy followed by a negation.
  bool negateAfter = false;
  /// `ceildivsi(a, b)` is `-floordiv(-a, b)`.
  bool ceilDiv = false;
};

/// The mapping of a unary or binary payload op (casts are unary copies), or
/// nullopt with `why` set when there is none.
std::optional<Mapping> mapPayloadOp(Operation *op, std::string *why = nullptr);

/// The combiner of a reduction payload op (addf/addi, max, min, mul, and the
/// i1 or/and as max/min).
std::optional<ReductionKind> combinerKind(Operation *op);

/// The identity of `kind` in element type `type`.
Scalar identityOf(ReductionKind kind, Type type);

/// The elementwise kind that merges two partial results of `kind`.
ElementwiseKind combineKind(ReductionKind kind);

/// `kind` applied to constants of type `type` (for `copy`, converting `a`
/// to `type`), with the semantics of the vector unit: integers exactly, with
/// wrap-around; floats rounded to f32. Comparisons give an integer 0 / 1.
/// Returns nullopt when it would fault (integer division by zero, a float
/// out of an integer's range) or when the kind is not foldable.
std::optional<Scalar> fold(ElementwiseKind kind, Type type, Scalar a,
                           Scalar b = Scalar());

} // namespace mlir::nova::payload

#endif // NOVA_LIB_CONVERSION_LINALGTONOVA_PAYLOADKINDS_H
