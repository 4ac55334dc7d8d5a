//===- NovaTypes.cpp - nova dialect types -----------------------*- C++ -*-===//
#include "nova/Dialect/Nova/IR/NovaDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::nova;

#define GET_TYPEDEF_CLASSES
#include "nova/Dialect/Nova/IR/NovaTypes.cpp.inc"

void NovaDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "nova/Dialect/Nova/IR/NovaTypes.cpp.inc"
      >();
}
