//===- Pipeline.cpp - the schedule phase's pipeline -------------*- C++ -*-===//
#include "nova/Schedule/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "nova/Conversion/Passes.h"

using namespace mlir;

void nova::buildSchedulePassPipeline(OpPassManager &pm, bool doubleBuffer) {
  // Per-chip programs (pipeline stages) must issue matching collectives.
  pm.addPass(createNovaVerifyCollectives());
  // Compute that does not touch a collective's buffers runs while it flies.
  pm.addNestedPass<func::FuncOp>(createNovaOverlapCollectives());
  // Independent ops bound on different engines dispatch alternately.
  pm.addNestedPass<func::FuncOp>(createNovaInterleaveLoops());
  pm.addNestedPass<func::FuncOp>(createNovaHoistInvariantLoads());
  if (doubleBuffer) {
    // Prefetch the next tile of a loop while the current one is computed.
    pm.addNestedPass<func::FuncOp>(createNovaDoubleBuffer());
    pm.addPass(createCanonicalizerPass());
  }
  pm.addPass(createNovaPlanMemory());
  pm.addPass(createLowerAffinePass());
  pm.addNestedPass<func::FuncOp>(createConvertNovaToISA());
}
