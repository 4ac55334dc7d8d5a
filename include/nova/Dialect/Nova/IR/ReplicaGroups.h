//===- ReplicaGroups.h - replica groups of collectives ----------*- C++ -*-===//
//
// Shared by the collectives of `nova` and `nova_isa`: the `[[0, 1], [2, 3]]`
// syntax (an ArrayAttr of DenseI64ArrayAttr) and its verification.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_DIALECT_NOVA_IR_REPLICAGROUPS_H
#define NOVA_DIALECT_NOVA_IR_REPLICAGROUPS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

namespace mlir::nova {

/// Parses `[[0, 1], [2, 3]]`.
ParseResult parseReplicaGroups(OpAsmParser &parser, ArrayAttr &groups);

/// Prints `[[0, 1], [2, 3]]`.
void printReplicaGroups(OpAsmPrinter &printer, Operation *op, ArrayAttr groups);

/// Verifies replica groups: non-empty groups of one size, each chip in
/// exactly one group, and every chip of the system covered (the module's
/// #nova.target's chips, else 0..largest id). Returns the group size.
FailureOr<int64_t> verifyReplicaGroups(Operation *op, ArrayAttr groups);

} // namespace mlir::nova

#endif // NOVA_DIALECT_NOVA_IR_REPLICAGROUPS_H
