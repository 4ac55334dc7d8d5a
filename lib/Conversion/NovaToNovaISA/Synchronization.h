//===- Synchronization.h - semaphores between nova_isa engines ---*- C++ -*-===//
//
// Internal to convert-nova-to-isa: orders the engines of a lowered body by
// adding wait/signal lists, nops, sequencer waits and the final drain. The
// scheme is described in the pass description (Conversion/Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef LIB_CONVERSION_NOVATONOVAISA_SYNCHRONIZATION_H
#define LIB_CONVERSION_NOVATONOVAISA_SYNCHRONIZATION_H

#include "FuncLowering.h"

namespace mlir::nova::isa_lowering {

/// Synchronises `body` (the lowered function body, without terminator) and
/// appends the drain and `halt`. `strictWaits` maps each placeholder
/// (`nop on scalar`) of a sequencer wait to the instruction it waits for.
/// `semaphoreLimit`: semaphores ids below it may be used (the ISA has 64).
/// With `outOfSemaphores`, running out of them sets it and fails
/// without a diagnostic (the caller retries with fewer queues); without it,
/// that is an error.
LogicalResult synchronize(Block &body, Location loc, int64_t dmaQueues,
                          int64_t semaphoreLimit,
                          const DenseMap<Operation *, SmallVector<Access>> &accesses,
                          const DenseMap<Operation *, Operation *> &strictWaits,
                          NovaToNovaISAStats &stats,
                          bool *outOfSemaphores = nullptr);

} // namespace mlir::nova::isa_lowering

#endif // LIB_CONVERSION_NOVATONOVAISA_SYNCHRONIZATION_H
