//===- NovaISAOps.h - nova_isa instructions ---------------------*- C++ -*-===//
#ifndef NOVA_DIALECT_NOVAISA_IR_NOVAISAOPS_H
#define NOVA_DIALECT_NOVAISA_IR_NOVAISAOPS_H

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "nova/Dialect/NovaISA/IR/NovaISADialect.h"

namespace mlir::nova_isa {
/// Checks the rules every instruction shares: its engine is allowed.
LogicalResult verifyInstruction(Operation *op);
} // namespace mlir::nova_isa

#include "nova/Dialect/NovaISA/IR/NovaISAInterfaces.h.inc"

#define GET_OP_CLASSES
#include "nova/Dialect/NovaISA/IR/NovaISAOps.h.inc"

#endif // NOVA_DIALECT_NOVAISA_IR_NOVAISAOPS_H
