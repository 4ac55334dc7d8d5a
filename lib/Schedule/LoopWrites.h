//===- LoopWrites.h - which buffers a tile loop writes ----------*- C++ -*-===//
//
// Shared by the passes that move DMA loads across loop iterations
// (nova-hoist-invariant-loads, nova-double-buffer).
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_LIB_DIALECT_NOVA_TRANSFORMS_LOOPWRITES_H
#define NOVA_LIB_DIALECT_NOVA_TRANSFORMS_LOOPWRITES_H

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::nova {

/// The buffer a chain of views is ultimately taken of.
Value rootOf(Value v);

/// Whether any op in `loop` other than `except` may write the buffer `root`
/// (conservatively true for ops that declare no memory effects). Two
/// get_global of one symbol are the same buffer.
bool mayWriteInLoop(scf::ForOp loop, Value root, Operation *except = nullptr);
/// Whether any op in `loop` other than those in `except` may read or write
/// the buffer `root` (as conservative as mayWriteInLoop).
bool mayAccessInLoop(scf::ForOp loop, Value root, ArrayRef<Operation *> except);

} // namespace mlir::nova

#endif // NOVA_LIB_DIALECT_NOVA_TRANSFORMS_LOOPWRITES_H
