//===- Pipeline.cpp - the nova-linalg-normalize pipeline --------*- C++ -*-===//
#include "nova/Transforms/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void nova::buildLinalgNormalizePipeline(OpPassManager &pm, bool rollLayers) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  fn.addPass(createNovaUnrollLoops());
  // Before the rest: torch-mlir's layers are still copies of one another
  // (canonicalization folds the reshapes at the first layer's input
  // differently), and the rest then normalises one copy.
  if (rollLayers)
    fn.addPass(createNovaRollLayers());
  fn.addPass(createNovaDemoteF64());
  // Hyperbolic functions and tan as exp/log/sqrt/sin/cos, which the vector
  // unit has (upstream's expansions; fma as a multiply and an add).
  {
    math::MathExpandOpsPassOptions expand;
    expand.opMnemonics = {"sinh", "cosh", "tan", "asinh", "acosh", "atanh", "fma"};
    fn.addPass(math::createMathExpandOpsPass(expand));
  }
  fn.addPass(createNovaEraseDeadGenericResults());
  fn.addPass(createNovaFoldShapeConstants());
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
  // The loops' destinations again, as normalization left them.
  if (rollLayers)
    fn.addPass(createNovaRollLayers());
}

void nova::registerNovaLinalgNormalizePipeline() {
  PassPipelineRegistration<>(
      kLinalgNormalizePipelineName,
      "bring torch-mlir linalg-on-tensors into Nova normal form (f32 only, "
      "shape constants folded, single-result float generics, convolutions "
      "as matmuls, fused elementwise epilogues)",
      [](OpPassManager &pm) { buildLinalgNormalizePipeline(pm); });
}
