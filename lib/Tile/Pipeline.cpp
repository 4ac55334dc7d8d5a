//===- Pipeline.cpp - the tile phase's pipeline -----------------*- C++ -*-===//
#include "nova/Tile/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "nova/Conversion/Passes.h"

using namespace mlir;

void nova::buildTilePassPipeline(OpPassManager &pm, const NovaTileOptions &tile,
                                 bool fuseAttention) {
  // Attention as one op (flash attention) before tiling, which would cut the
  // score matrix into tiles that go through HBM.
  if (fuseAttention)
    pm.addNestedPass<func::FuncOp>(createNovaFuseAttention());
  // Rows added by a one-hot matmul (the embedding's backward) as indexed
  // DMAs, before tiling cuts the matmul.
  pm.addNestedPass<func::FuncOp>(createNovaFormScatter());
  // Donated arguments (a training step's parameters and optimizer state)
  // are updated in their own buffers.
  pm.addNestedPass<func::FuncOp>(createNovaAliasOutputs());
  pm.addNestedPass<func::FuncOp>(createNovaTile(tile));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createNovaBufferize());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToNova());
  // A value staged through a fresh tile costs a vector pass per copy.
  pm.addNestedPass<func::FuncOp>(createNovaForwardCopies());
  // Two elementwise ops through a fresh tile: one vector pass (VFUSED).
  pm.addNestedPass<func::FuncOp>(createNovaFuseVectorPairs());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}
