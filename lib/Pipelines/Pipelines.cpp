//===- Pipelines.cpp - Nova's end-to-end pass pipelines ---------*- C++ -*-===//
//
// Each pipeline stitches phases together; the passes and the reasons for
// their order are in the phases' own pipeline builders (lib/<Phase>/
// Pipeline.cpp).
//
//===----------------------------------------------------------------------===//
#include "nova/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "nova/Input/Passes.h"
#include "nova/Normalize/Passes.h"
#include "nova/Partition/Passes.h"
#include "nova/Schedule/Passes.h"
#include "nova/Tile/Passes.h"

using namespace mlir;
using namespace mlir::nova;

void mlir::nova::buildLinalgNormalizePipeline(OpPassManager &pm,
                                              bool rollLayers) {
  // One nest for both phases: the textual pipeline is
  // func.func(<input>,<normalize>).
  OpPassManager &fn = pm.nest<func::FuncOp>();
  buildInputPassPipeline(fn, rollLayers);
  buildNormalizePassPipeline(fn, rollLayers);
}

void mlir::nova::buildNovaLowerToTilesPipeline(
    OpPassManager &pm, const NovaPipelineOptions &options) {
  NovaAttachTargetOptions attach;
  attach.target = options.target;
  attach.chips = options.chips;
  pm.addPass(createNovaAttachTarget(attach));
  // Identical layers share one copy of their code (a loop over layers).
  buildLinalgNormalizePipeline(pm, options.rollLayers);
  NovaTileOptions tile;
  tile.maxRows = options.tileMaxRows;
  tile.maxCols = options.tileMaxCols;
  buildTilePassPipeline(pm, tile, options.fuseAttention);
}

void mlir::nova::buildNovaTilesToISAPipeline(
    OpPassManager &pm, const NovaTilesToISAOptions &options) {
  buildSchedulePassPipeline(pm, options.doubleBuffer);
}

void mlir::nova::buildNovaLowerToISAPipeline(
    OpPassManager &pm, const NovaPipelineOptions &options) {
  buildNovaLowerToTilesPipeline(pm, options);
  NovaTilesToISAOptions isaOptions;
  isaOptions.doubleBuffer = options.doubleBuffer;
  buildNovaTilesToISAPipeline(pm, isaOptions);
}

void mlir::nova::registerNovaPipelines() {
  PassPipelineRegistration<NovaPartitionOptions>(
      "nova-partition",
      "partition a shard-annotated linalg program into the per-chip SPMD "
      "program with nova collectives",
      buildPartitionPassPipeline);
  PassPipelineRegistration<>(
      kLinalgNormalizePipelineName,
      "bring torch-mlir linalg-on-tensors into Nova normal form (f32 only, "
      "shape constants folded, single-result float generics, convolutions "
      "as matmuls, fused elementwise epilogues)",
      [](OpPassManager &pm) { buildLinalgNormalizePipeline(pm); });
  PassPipelineRegistration<NovaPipelineOptions>(
      "nova-lower-to-tiles",
      "lower linalg-on-tensors to tiled, bufferized nova ops on the target",
      buildNovaLowerToTilesPipeline);
  PassPipelineRegistration<NovaTilesToISAOptions>(
      "nova-tiles-to-isa",
      "plan memory and select instructions for tiled nova ops (the second "
      "half of nova-lower-to-isa)",
      buildNovaTilesToISAPipeline);
  PassPipelineRegistration<NovaPipelineOptions>(
      "nova-lower-to-isa",
      "lower linalg-on-tensors all the way to nova_isa instructions",
      buildNovaLowerToISAPipeline);
}
