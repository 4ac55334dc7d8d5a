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
      func.emitError() << "dma-queues must be in 1..5, got " << dmaQueues;
      return signalPassFailure();
    }
    if (TargetAttr target = lookupTarget(func))
      options.dmaQueues =
          std::min<int64_t>(options.dmaQueues, target.getDmaEngines());
    NovaToNovaISAPatterns patterns;
    populateNovaToNovaISAPatterns(patterns);
    NovaToNovaISAStats stats;
    if (failed(convertFuncToNovaISA(func, patterns, options, stats)))
      return signalPassFailure();
    numInstructions += stats.instructions;
    numActivation += stats.activation;
    numSemaphores += stats.semaphores;
    numWaits += stats.waits;
  }
};
} // namespace
