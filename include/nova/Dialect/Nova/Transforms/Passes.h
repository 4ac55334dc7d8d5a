//===- Passes.h - nova dialect transformation passes ------------*- C++ -*-===//
#ifndef NOVA_DIALECT_NOVA_TRANSFORMS_PASSES_H
#define NOVA_DIALECT_NOVA_TRANSFORMS_PASSES_H

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
