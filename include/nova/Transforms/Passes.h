//===- Passes.h - linalg-on-tensors normal-form passes ----------*- C++ -*-===//
//
// Passes that bring torch-mlir's linalg-on-tensors output into Nova normal
// form: f32-only tensors, shape-only integer computations folded to f32
// constants, single-result generics with float bodies, convolutions as
// matmuls over views, and fused elementwise epilogues.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_TRANSFORMS_PASSES_H
#define NOVA_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::nova {

#define GEN_PASS_DECL
#include "nova/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "nova/Transforms/Passes.h.inc"

/// Name under which `registerNovaLinalgNormalizePipeline` registers the
/// normal-form pipeline (`nova-opt --nova-linalg-normalize`).
inline constexpr llvm::StringLiteral kLinalgNormalizePipelineName =
    "nova-linalg-normalize";

/// Adds the normal-form pipeline to `pm`, which must be anchored on
/// builtin.module: every function gets unroll-loops, demote-f64, erase-dead-generic-results,
/// fold-shape-constants, decompose-conv, fuse-elementwise and
/// verify-normal-form, with canonicalize and cse in between; with
/// `rollLayers`, nova-roll-layers right after unroll-loops.
void buildLinalgNormalizePipeline(OpPassManager &pm, bool rollLayers = false);

/// Registers `buildLinalgNormalizePipeline` as `nova-linalg-normalize`.
void registerNovaLinalgNormalizePipeline();

} // namespace mlir::nova

#endif // NOVA_TRANSFORMS_PASSES_H
