//===- Staging.h - moving linalg operands on chip ---------------*- C++ -*-===//
//
// Shared by the linalg -> nova patterns: where a tile operand lives, how it
// gets into SRAM (DMA from HBM) and back, and reshaping on-chip tiles.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_LIB_CONVERSION_LINALGTONOVA_STAGING_H
#define NOVA_LIB_CONVERSION_LINALGTONOVA_STAGING_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "PayloadKinds.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

namespace mlir::nova::staging {

/// True if `buffer` lives in SRAM or the accumulator.
bool isOnChip(Value buffer);

/// A fresh on-chip tile.
Value allocTile(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                Type elementType, MemorySpace space = MemorySpace::SRAM);

/// Synchronous DMA copy (start + wait).
void copy(OpBuilder &b, Location loc, Value from, Value to);

/// `buffer` itself when it is on chip with an identity layout; otherwise a
/// fresh SRAM tile holding a copy of it (DMA from HBM, or a vector copy of a
/// strided on-chip view).
Value stageIn(OpBuilder &b, Location loc, Value buffer);

/// An output buffer and the on-chip tile that stands for it while computing.
struct StagedOutput {
  Value buffer;
  Value tile;
  /// Writes the tile back to `buffer` when they differ.
  void finish(OpBuilder &b, Location loc) const;
};

/// Stages an output; `load` copies the current contents in first (for ops
/// that read their output).
StagedOutput stageOut(OpBuilder &b, Location loc, Value buffer, bool load);

/// Views an identity-layout on-chip tile as `shape` (same elements, same
/// order) through collapse_shape/expand_shape.
Value reshapeTile(OpBuilder &b, Location loc, Value tile,
                  ArrayRef<int64_t> shape);

/// If the op right before `op` in its block fills `buffer` (linalg.fill or
/// nova.fill of the same value), returns that fill op.
Operation *precedingFill(Operation *op, Value buffer,
                         payload::Scalar *value = nullptr);

/// Static shape of a memref value.
ArrayRef<int64_t> shapeOf(Value buffer);

} // namespace mlir::nova::staging

#endif // NOVA_LIB_CONVERSION_LINALGTONOVA_STAGING_H
