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

#include "mlir/IR/Operation.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include <optional>

namespace mlir::nova::payload {

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
double identityOf(ReductionKind kind, Type type);

/// The elementwise kind that merges two partial results of `kind`.
ElementwiseKind combineKind(ReductionKind kind);

/// `kind` applied to constants, with the semantics of element type `type`.
/// Returns nullopt when it would fault (integer division by zero) or when
/// the kind is not foldable.
std::optional<double> fold(ElementwiseKind kind, Type type, double a,
                           double b = 0.0);

/// True if integer `v` is carried exactly by an f64 immediate (the encoder
/// saturates the i64 extremes, which are exact as f64 bounds).
bool isExactImmediate(double v, Type type);

} // namespace mlir::nova::payload

#endif // NOVA_LIB_CONVERSION_LINALGTONOVA_PAYLOADKINDS_H
