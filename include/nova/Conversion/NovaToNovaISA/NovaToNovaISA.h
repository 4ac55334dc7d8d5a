//===- NovaToNovaISA.h - nova on addressed buffers to nova_isa --*- C++ -*-===//
//
// Lowering of a function body (nova ops on memrefs that carry `nova.address`,
// scf.for loops and index arithmetic) to nova_isa instructions, followed by
// the insertion of the semaphores that order the engines. The pass
// (convert-nova-to-isa) drives it; the per-op lowerings live in topic files
// (addressing and index arithmetic, compute, data movement and collectives)
// behind populateNovaToNovaISAPatterns.
//
// The lowering is a table of per-op functions rather than rewrite patterns:
// it is a stateful translation (register reuse, DMA queue assignment and
// the byte ranges every instruction touches, which the synchronisation step
// reads), and every tile address comes from the root buffer's attribute, so
// the source memref values have no nova_isa counterpart to convert to.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_CONVERSION_NOVATONOVAISA_NOVATONOVAISA_H
#define NOVA_CONVERSION_NOVATONOVAISA_NOVATONOVAISA_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/DenseMap.h"
#include <functional>

namespace mlir::nova {
namespace isa_lowering {
class FuncLowering;
} // namespace isa_lowering

/// Lowers one source op through the function-wide lowering state.
using IsaOpLowering =
    std::function<LogicalResult(Operation *, isa_lowering::FuncLowering &)>;

/// The per-op lowerings, keyed by op type.
class NovaToNovaISAPatterns {
public:
  template <typename OpTy, typename Fn>
  void add(Fn fn) {
    table[TypeID::get<OpTy>()] = [fn](Operation *op,
                                      isa_lowering::FuncLowering &l) {
      return fn(llvm::cast<OpTy>(op), l);
    };
  }
  const IsaOpLowering *lookup(Operation *op) const {
    auto it = table.find(op->getName().getTypeID());
    return it == table.end() ? nullptr : &it->second;
  }

private:
  llvm::DenseMap<TypeID, IsaOpLowering> table;
};

/// Adds the lowerings of memref views, index arithmetic, nova compute, DMA,
/// waits and collectives.
void populateNovaToNovaISAPatterns(NovaToNovaISAPatterns &patterns);

/// How the DMAs of a loop body are spread over its DMA queues.
enum class LoopDmaPolicy {
  /// Loads (into sram) and stores (to hbm) on separate queues, each kind
  /// round robin over its half of the queues (loads get the larger half).
  Split,
  /// Every DMA of the body round robin over the queues, in body order.
  RoundRobin,
};

struct NovaToNovaISAOptions {
  /// DMA queues used for straight-line DMAs (round robin); 1..5.
  int64_t dmaQueues = 4;
  /// DMA queues a loop body may use (1: all on queue 0); at most dmaQueues.
  /// If the synchroniser runs out of semaphores, the function is lowered
  /// again with fewer (a slower program, never a failure).
  int64_t loopDmaQueues = 2;
  LoopDmaPolicy loopDmaPolicy = LoopDmaPolicy::Split;
  /// Semaphores the synchroniser may use: the ISA's 64 (fewer in tests).
  int64_t semaphores = 64;
  /// Place work on the target's activation engine, if it has one.
  bool activationEngine = true;
};

struct NovaToNovaISAStats {
  int64_t instructions = 0;
  int64_t activation = 0;
  int64_t semaphores = 0;
  int64_t waits = 0;
  /// Times a function was lowered again with one loop queue fewer.
  int64_t loopQueueFallbacks = 0;
};

/// Replaces the body of `func` by nova_isa instructions. Emits a diagnostic
/// at the offending op and leaves `func` unchanged on failure.
LogicalResult convertFuncToNovaISA(func::FuncOp func,
                                   const NovaToNovaISAPatterns &patterns,
                                   const NovaToNovaISAOptions &options,
                                   NovaToNovaISAStats &stats);

} // namespace mlir::nova

#endif // NOVA_CONVERSION_NOVATONOVAISA_NOVATONOVAISA_H
