//===- Passes.h - Nova conversion passes ------------------------*- C++ -*-===//
#ifndef NOVA_CONVERSION_PASSES_H
#define NOVA_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"

namespace mlir::nova {

#define GEN_PASS_DECL
#include "nova/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "nova/Conversion/Passes.h.inc"

} // namespace mlir::nova

#endif // NOVA_CONVERSION_PASSES_H
