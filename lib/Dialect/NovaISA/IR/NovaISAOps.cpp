//===- NovaISAOps.cpp - nova_isa instructions and verifiers -----*- C++ -*-===//
#include "nova/Dialect/NovaISA/IR/NovaISAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::nova_isa;

#define GET_OP_CLASSES
#include "nova/Dialect/NovaISA/IR/NovaISAOps.cpp.inc"
