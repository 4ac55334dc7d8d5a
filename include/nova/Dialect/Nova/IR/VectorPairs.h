//===- VectorPairs.h - rules of a fused pair of elementwise stages -*- C++ -*-===//
//
// Shared by `nova.elementwise_pair`, `nova_isa.vfused` (docs/isa.md, VFUSED)
// and the pass that forms them: which kinds a stage may be, and how many
// operands the vector engine reads at the full rate.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_DIALECT_NOVA_IR_VECTORPAIRS_H
#define NOVA_DIALECT_NOVA_IR_VECTORPAIRS_H

#include "nova/Dialect/Nova/IR/NovaDialect.h"

#include "llvm/ADT/ArrayRef.h"

namespace mlir::nova {

/// The binary float kinds a stage of a fused pair may be.
inline bool isPairStageKind(ElementwiseKind kind) {
  switch (kind) {
  case ElementwiseKind::Add:
  case ElementwiseKind::Sub:
  case ElementwiseKind::Mul:
  case ElementwiseKind::Div:
  case ElementwiseKind::Max:
  case ElementwiseKind::Min:
    return true;
  default:
    return false;
  }
}

/// The vector engine reads at most this many operands of a fused pair at the
/// full rate: the third is a per-row scalar, a broadcast element or an
/// immediate (as a Trainium vector engine's scalar operand).
constexpr int kPairFullRateOperands = 2;

/// Whether an operand of `shape` is read at the full rate by an instruction
/// writing `output`: its last dimension is the output's, and larger than 1.
inline bool isFullRate(llvm::ArrayRef<int64_t> shape,
                       llvm::ArrayRef<int64_t> output) {
  return !shape.empty() && !output.empty() && output.back() > 1 &&
         shape.back() == output.back();
}

} // namespace mlir::nova

#endif // NOVA_DIALECT_NOVA_IR_VECTORPAIRS_H
