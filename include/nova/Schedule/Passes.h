//===- Passes.h - the schedule phase ----------------------------*- C++ -*-===//
//
// Tiled `nova` ops -> an ordered, memory-planned program (Passes.td), and
// the phase's pipeline.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_SCHEDULE_PASSES_H
#define NOVA_SCHEDULE_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
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
#include "nova/Schedule/Passes.h.inc"

/// Adds the schedule phase to `pm`, which must be anchored on
/// builtin.module and follow the tile phase: verify-collectives, then
/// overlap-collectives, interleave-loops, hoist-invariant-loads and (with `doubleBuffer`)
/// double-buffer in every function, nova-plan-memory, and the lowering to
/// `nova_isa` (lower-affine, convert-nova-to-isa). nova-merge-stages is
/// not in it: the Python pipeline-parallel driver runs it on its own.
void buildSchedulePassPipeline(OpPassManager &pm, bool doubleBuffer = true);

#define GEN_PASS_REGISTRATION
#include "nova/Schedule/Passes.h.inc"

} // namespace mlir::nova

#endif // NOVA_SCHEDULE_PASSES_H
