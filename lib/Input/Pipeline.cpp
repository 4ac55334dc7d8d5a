//===- Pipeline.cpp - the input phase's pipeline ----------------*- C++ -*-===//
#include "nova/Input/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

void nova::buildInputPassPipeline(OpPassManager &fn, bool rollLayers) {
  fn.addPass(createNovaUnrollLoops());
  // Before the rest: torch-mlir's layers are still copies of one another
  // (canonicalization folds the reshapes at the first layer's input
  // differently), and the rest then normalises one copy.
  if (rollLayers)
    fn.addPass(createNovaRollLayers());
  fn.addPass(createNovaDemoteF64());
  // Half-precision sums accumulate in f32, as in PyTorch.
  fn.addPass(createNovaWidenSums());
  // Hyperbolic functions and tan as exp/log/sqrt/sin/cos, which the vector
  // unit has (upstream's expansions; fma as a multiply and an add).
  {
    math::MathExpandOpsPassOptions expand;
    expand.opMnemonics = {"sinh", "cosh", "tan", "asinh", "acosh", "atanh", "fma"};
    fn.addPass(math::createMathExpandOpsPass(expand));
  }
  fn.addPass(createNovaEraseDeadGenericResults());
  fn.addPass(createNovaFoldShapeConstants());
}
