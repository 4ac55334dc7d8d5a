//===- NovaISADialect.h - nova_isa dialect and attributes -------*- C++ -*-===//
#ifndef NOVA_DIALECT_NOVAISA_IR_NOVAISADIALECT_H
#define NOVA_DIALECT_NOVAISA_IR_NOVAISADIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"

#include "nova/Dialect/NovaISA/IR/NovaISADialect.h.inc"
#include "nova/Dialect/NovaISA/IR/NovaISAEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "nova/Dialect/NovaISA/IR/NovaISAAttrs.h.inc"

#endif // NOVA_DIALECT_NOVAISA_IR_NOVAISADIALECT_H
