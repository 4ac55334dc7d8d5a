//===- Passes.h - the input phase -------------------------------*- C++ -*-===//
//
// What the compiler takes in (Passes.td): torch-mlir's linalg-on-tensors
// checked, the target attached, loops unrolled or rolled, f64 demoted, dead
// generic results erased, shape-only computations folded.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_INPUT_PASSES_H
#define NOVA_INPUT_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"

namespace mlir::nova {

#define GEN_PASS_DECL
#include "nova/Input/Passes.h.inc"

/// Adds the input phase to `fn`, a pass manager anchored on func.func:
/// unroll-loops, demote-f64, math-expand-ops,
/// erase-dead-generic-results and fold-shape-constants; with `rollLayers`,
/// nova-roll-layers right after unroll-loops. nova-attach-target and
/// nova-check-input are not in it: the top-level pipelines and nova-opt add
/// them.
void buildInputPassPipeline(OpPassManager &fn, bool rollLayers = false);

#define GEN_PASS_REGISTRATION
#include "nova/Input/Passes.h.inc"

} // namespace mlir::nova

#endif // NOVA_INPUT_PASSES_H
