//===- NovaDialect.h - nova dialect, attributes and types -------*- C++ -*-===//
#ifndef NOVA_DIALECT_NOVA_IR_NOVADIALECT_H
#define NOVA_DIALECT_NOVA_IR_NOVADIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"

#include "nova/Dialect/Nova/IR/NovaDialect.h.inc"
#include "nova/Dialect/Nova/IR/NovaEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "nova/Dialect/Nova/IR/NovaAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "nova/Dialect/Nova/IR/NovaTypes.h.inc"

namespace mlir::nova {

/// The #nova.target attached to `op` or to its closest ancestor, if any.
TargetAttr lookupTarget(Operation *op);

/// The nova memory space of `type`, or std::nullopt when it has none.
std::optional<MemorySpace> getMemorySpace(MemRefType type);

} // namespace mlir::nova

#endif // NOVA_DIALECT_NOVA_IR_NOVADIALECT_H
