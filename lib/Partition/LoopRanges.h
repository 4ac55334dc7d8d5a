//===- LoopRanges.h - what nova-record-loop-ranges stores -------*- C++ -*-===//
//
// The attributes nova-record-loop-ranges puts on a linalg op before
// shard-partition and nova-offset-split-indices reads and removes after it.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_LIB_PARTITION_LOOPRANGES_H
#define NOVA_LIB_PARTITION_LOOPRANGES_H

#include "llvm/ADT/StringRef.h"

namespace mlir::nova {

// Not `nova.`-prefixed: the nova dialect verifies its own attribute names.
/// Per loop, its global range.
inline constexpr llvm::StringLiteral kLoopRangesAttrName = "nova_loop_ranges";
/// Per loop, the grid axes its annotations split it over (major first).
inline constexpr llvm::StringLiteral kLoopAxesAttrName = "nova_loop_axes";

} // namespace mlir::nova

#endif // NOVA_LIB_PARTITION_LOOPRANGES_H
