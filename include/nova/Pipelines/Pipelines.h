//===- Pipelines.h - Nova's end-to-end pass pipelines -----------*- C++ -*-===//
//
// The compiler's stages as named pipelines, so that `nova-opt` and the
// Python driver run exactly the same thing. Each stitches whole phases (a
// folder each: Input, Normalize, Partition, Tile, Schedule, with its own
// Passes.td and build<Phase>PassPipeline):
//
//   nova-partition        Partition: shard-annotated linalg -> per-chip SPMD
//                         linalg with nova collectives (before
//                         nova-lower-to-tiles)
//   nova-linalg-normalize Input, Normalize: torch-mlir's linalg-on-tensors ->
//                         Nova normal form
//   nova-lower-to-tiles   nova-attach-target, Input, Normalize, Tile:
//                         linalg-on-tensors -> tiled, bufferized `nova` ops
//   nova-tiles-to-isa     Schedule: tiled `nova` -> memory-planned `nova_isa`
//   nova-lower-to-isa     the two in sequence
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_PIPELINES_PIPELINES_H
#define NOVA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"
#include "nova/Partition/Passes.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlir::nova {

struct NovaPipelineOptions : public PassPipelineOptions<NovaPipelineOptions> {
  PassOptions::Option<std::string> target{
      *this, "target",
      llvm::cl::desc("target name (targets/<name>.json) or path"),
      llvm::cl::init("nova-t1")};
  PassOptions::Option<int64_t> chips{
      *this, "chips",
      llvm::cl::desc("number of chips; 0 keeps the target file's"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> doubleBuffer{
      *this, "double-buffer",
      llvm::cl::desc("prefetch the next tile of each loop (nova-double-buffer)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("fuse matmul-softmax-matmul attention (nova-fuse-attention)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> rollLayers{
      *this, "roll-layers",
      llvm::cl::desc("share the code of identical consecutive layers through "
                     "a loop over layers (nova-roll-layers)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> tileMaxRows{
      *this, "tile-max-rows",
      llvm::cl::desc("nova-tile's max-rows (a tile-size search tries others)"),
      llvm::cl::init(512)};
  PassOptions::Option<int64_t> tileMaxCols{
      *this, "tile-max-cols",
      llvm::cl::desc("nova-tile's max-cols (a tile-size search tries others)"),
      llvm::cl::init(512)};
};

struct NovaTilesToISAOptions
    : public PassPipelineOptions<NovaTilesToISAOptions> {
  PassOptions::Option<bool> doubleBuffer{
      *this, "double-buffer",
      llvm::cl::desc("prefetch the next tile of each loop (nova-double-buffer)"),
      llvm::cl::init(true)};
};

/// Attach the target, normalise, tile, bufferize and lower to `nova`.
void buildNovaLowerToTilesPipeline(OpPassManager &pm,
                                   const NovaPipelineOptions &options);

/// Memory planning and instruction selection on the tiles pipeline's output.
void buildNovaTilesToISAPipeline(OpPassManager &pm,
                                 const NovaTilesToISAOptions &options);

/// Everything up to `nova_isa`: the tiles pipeline, then memory planning and
/// instruction selection.
void buildNovaLowerToISAPipeline(OpPassManager &pm,
                                 const NovaPipelineOptions &options);

/// Name under which `registerNovaPipelines` registers the normal-form
/// pipeline (`nova-opt --nova-linalg-normalize`).
inline constexpr llvm::StringLiteral kLinalgNormalizePipelineName =
    "nova-linalg-normalize";

/// The input and normalize phases: torch-mlir's linalg-on-tensors -> Nova
/// normal form; with `rollLayers`, identical layers share one copy of their
/// code (nova-roll-layers).
void buildLinalgNormalizePipeline(OpPassManager &pm, bool rollLayers = false);

/// Registers nova-partition, nova-linalg-normalize, nova-lower-to-tiles,
/// nova-tiles-to-isa and nova-lower-to-isa.
void registerNovaPipelines();

} // namespace mlir::nova

#endif // NOVA_PIPELINES_PIPELINES_H
