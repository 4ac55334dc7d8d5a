//===- OneHot.h - one-hot lookups the partition passes match ----*- C++ -*-===//
//
// The frontend's embedding is a product with a one-hot of the ids
// (`cmpi eq(ids, iota)`, cast to the table's type). nova-localize-one-hot-
// lookups and nova-sequence-parallel-embedding both match it.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_LIB_PARTITION_ONEHOT_H
#define NOVA_LIB_PARTITION_ONEHOT_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::nova {

/// Every loop parallel and every indexing map the identity.
bool isElementwise(linalg::GenericOp gen);

/// Whether `gen` is a one-input, one-result elementwise generic whose body is
/// a single int/float extension, truncation or conversion (each keeps a
/// one-hot's 0 and 1 exact). False for null.
bool isElementwiseCast(linalg::GenericOp gen);

/// A one-hot over the last dimension of `v` ([..., V], through a collapse of
/// the leading dimensions into one and casts that keep 0/1): the operand of
/// its compare that reads the ids (integers of the leading shape). Null
/// otherwise.
OpOperand *oneHotIdsOperand(Value v);

/// The ids `oneHotIdsOperand` finds, or null.
inline Value oneHotIds(Value v) {
  OpOperand *ids = oneHotIdsOperand(v);
  return ids ? ids->get() : Value();
}

} // namespace mlir::nova

#endif // NOVA_LIB_PARTITION_ONEHOT_H
