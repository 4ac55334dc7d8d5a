//===- Passes.h - nova dialect transformation passes ------------*- C++ -*-===//
#ifndef NOVA_DIALECT_NOVA_TRANSFORMS_PASSES_H
#define NOVA_DIALECT_NOVA_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"

namespace mlir::nova {

#define GEN_PASS_DECL
#include "nova/Dialect/Nova/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "nova/Dialect/Nova/Transforms/Passes.h.inc"

} // namespace mlir::nova

#endif // NOVA_DIALECT_NOVA_TRANSFORMS_PASSES_H
