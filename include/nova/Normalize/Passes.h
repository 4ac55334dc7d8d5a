//===- Passes.h - the normalize phase ---------------------------*- C++ -*-===//
//
// The input phase's output -> Nova normal form (Passes.td): convolutions as
// matmuls over views, batch matmuls as named ops, extensions and transposes
// folded into matmuls, fused elementwise epilogues.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_NORMALIZE_PASSES_H
#define NOVA_NORMALIZE_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::nova {

#define GEN_PASS_DECL
#include "nova/Normalize/Passes.h.inc"

/// Adds the normalize phase to `fn`, a pass manager anchored on func.func,
/// after the input phase: decompose-conv, collapse-batch-dims, fold-ext-into-matmul,
/// fold-transpose-into-matmul, pad-matmul, collapse-rank, fuse-elementwise
/// and verify-normal-form, with canonicalize and cse in between; with
/// `rollLayers`, nova-roll-layers again at the end.
void buildNormalizePassPipeline(OpPassManager &fn, bool rollLayers = false);

#define GEN_PASS_REGISTRATION
#include "nova/Normalize/Passes.h.inc"

} // namespace mlir::nova

#endif // NOVA_NORMALIZE_PASSES_H
