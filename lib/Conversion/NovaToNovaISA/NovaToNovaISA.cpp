//===- NovaToNovaISA.cpp - the convert-nova-to-isa pass ---------*- C++ -*-===//
#include "nova/Conversion/NovaToNovaISA/NovaToNovaISA.h"
#include "nova/Conversion/Passes.h"
#include "nova/Dialect/NovaISA/IR/NovaISADialect.h"

#define DEBUG_TYPE "convert-nova-to-isa"

namespace mlir::nova {
#define GEN_PASS_DEF_CONVERTNOVATOISA
#include "nova/Conversion/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {
struct ConvertNovaToISAPass
    : public nova::impl::ConvertNovaToISABase<ConvertNovaToISAPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    NovaToNovaISAOptions options;
    options.dmaQueues = dmaQueues;
    options.activationEngine = activationEngine;
    if (dmaQueues < 1 || dmaQueues > 5) {
      func.emitError() << "dma-queues must be in 1..5, got "
                       << static_cast<int64_t>(dmaQueues);
      return signalPassFailure();
    }
    if (loopDmaQueues < 1 || loopDmaQueues > dmaQueues) {
      func.emitError() << "loop-dma-queues must be in 1..dma-queues ("
                       << static_cast<int64_t>(dmaQueues) << "), got "
                       << static_cast<int64_t>(loopDmaQueues);
      return signalPassFailure();
    }
    options.loopDmaQueues = loopDmaQueues;
    if (loopDmaPolicy == "split") {
      options.loopDmaPolicy = LoopDmaPolicy::Split;
    } else if (loopDmaPolicy == "round-robin") {
      options.loopDmaPolicy = LoopDmaPolicy::RoundRobin;
    } else {
      func.emitError() << "loop-dma-policy must be `split` or `round-robin`, "
                          "got `"
                       << static_cast<std::string>(loopDmaPolicy) << "`";
      return signalPassFailure();
    }
    if (semaphores < 1 || semaphores > 64) {
      func.emitError() << "semaphores must be in 1..64, got "
                       << static_cast<int64_t>(semaphores);
      return signalPassFailure();
    }
    options.semaphores = semaphores;
    if (TargetAttr target = lookupTarget(func)) {
      options.dmaQueues =
          std::min<int64_t>(options.dmaQueues, target.getDmaEngines());
      options.loopDmaQueues =
          std::min<int64_t>(options.loopDmaQueues, options.dmaQueues);
    }
    NovaToNovaISAPatterns patterns;
    populateNovaToNovaISAPatterns(patterns);
    NovaToNovaISAStats stats;
    if (failed(convertFuncToNovaISA(func, patterns, options, stats)))
      return signalPassFailure();
    numInstructions += stats.instructions;
    numActivation += stats.activation;
    numSemaphores += stats.semaphores;
    numWaits += stats.waits;
    numLoopQueueFallbacks += stats.loopQueueFallbacks;
  }
};
} // namespace
