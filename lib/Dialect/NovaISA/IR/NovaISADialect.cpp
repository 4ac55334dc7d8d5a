//===- NovaISADialect.cpp - nova_isa dialect registration -------*- C++ -*-===//
#include "nova/Dialect/NovaISA/IR/NovaISADialect.h"
#include "nova/Dialect/NovaISA/IR/NovaISAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::nova_isa;

#include "nova/Dialect/NovaISA/IR/NovaISADialect.cpp.inc"
#include "nova/Dialect/NovaISA/IR/NovaISAEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "nova/Dialect/NovaISA/IR/NovaISAAttrs.cpp.inc"

void NovaISADialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "nova/Dialect/NovaISA/IR/NovaISAOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "nova/Dialect/NovaISA/IR/NovaISAAttrs.cpp.inc"
      >();
}
