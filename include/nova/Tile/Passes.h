//===- Passes.h - the tile phase --------------------------------*- C++ -*-===//
//
// Normal-form linalg -> tiled, bufferized `nova` ops (Passes.td), and the
// phase's pipeline.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_TILE_PASSES_H
#define NOVA_TILE_PASSES_H

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
#include "nova/Tile/Passes.h.inc"

/// Adds the tile phase to `pm`, which must be anchored on builtin.module and
/// follow the normalize phase: fuse-attention (with `fuseAttention`),
/// form-scatter,
/// alias-outputs and nova-tile (with `tile`'s limits) in every function,
/// then nova-bufferize, convert-linalg-to-nova and nova-forward-copies, with
/// canonicalize and cse in between.
void buildTilePassPipeline(OpPassManager &pm, const NovaTileOptions &tile,
                           bool fuseAttention = true);

#define GEN_PASS_REGISTRATION
#include "nova/Tile/Passes.h.inc"

} // namespace mlir::nova

#endif // NOVA_TILE_PASSES_H
