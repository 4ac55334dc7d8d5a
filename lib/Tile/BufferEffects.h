//===- BufferEffects.h - what ops between two others touch -------*- C++ -*-===//
//
// Shared by the tile-phase passes that move a read or a write across the
// ops between two others in one block (nova-forward-copies,
// nova-fuse-vector-pairs).
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_LIB_TILE_BUFFEREFFECTS_H
#define NOVA_LIB_TILE_BUFFEREFFECTS_H

#include "mlir/IR/Operation.h"

namespace mlir::nova::tile {

/// The buffer a view is a view of (the value itself if it is no view).
/// Effect-free ops from one memref to another (memref.transpose, which is
/// not a ViewLikeOpInterface) are views too.
Value rootOf(Value v);

/// True if `op` (or an op nested in it) may read (with `reads`) or write a
/// view of `root`. Ops that do not describe their effects count as touching.
bool mayTouch(Operation *op, Value root, bool reads);

/// True if an op strictly between `from` and `to` (one block) may touch
/// `root` (reads too with `reads`).
bool touchedBetween(Operation *from, Operation *to, Value root, bool reads);

} // namespace mlir::nova::tile

#endif // NOVA_LIB_TILE_BUFFEREFFECTS_H
