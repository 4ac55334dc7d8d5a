//===- Pipeline.cpp - the normalize phase's pipeline ------------*- C++ -*-===//
#include "nova/Normalize/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "nova/Input/Passes.h"

using namespace mlir;

void nova::buildNormalizePassPipeline(OpPassManager &fn, bool rollLayers) {
  fn.addPass(createNovaDecomposeConv());
  fn.addPass(createNovaCollapseBatchDims());
  fn.addPass(createNovaFoldExtIntoMatmul());
  fn.addPass(createNovaFoldTransposeIntoMatmul());
  fn.addPass(createNovaPadMatmul());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  // Before fusion: a fused broadcast picks up constant indexing maps, which
  // the loop-collapsing analysis does not take.
  fn.addPass(createNovaCollapseRank());
  fn.addPass(createNovaFuseElementwise());
  fn.addPass(createCanonicalizerPass());
  fn.addPass(createCSEPass());
  fn.addPass(createNovaVerifyNormalForm());
  // The loops' destinations again, as normalization left them (the input
  // phase's pass, run a second time).
  if (rollLayers)
    fn.addPass(createNovaRollLayers());
}
