//===- Pipelines.h - Nova's end-to-end pass pipelines -----------*- C++ -*-===//
//
// The compiler's stages as named pipelines, so that `nova-opt` and the
// Python driver run exactly the same thing:
//
//   nova-lower-to-tiles  linalg-on-tensors -> tiled, bufferized `nova` ops
//   nova-tiles-to-isa    tiled `nova` -> memory-planned `nova_isa`
//   nova-lower-to-isa    the two in sequence
//   nova-partition       shard-annotated linalg -> per-chip SPMD linalg with
//                        nova collectives (runs before nova-lower-to-tiles)
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_PIPELINES_PIPELINES_H
#define NOVA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

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

struct NovaPartitionOptions
    : public PassPipelineOptions<NovaPartitionOptions> {
  PassOptions::Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("largest all-reduce bucket in bytes (nova-bucket-all-reduces; "
                     "DDP's default 25 MiB; larger ones are split into chunks of it, "
                     "nova-split-all-reduces; 0: neither)"),
      llvm::cl::init(26214400)};
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

/// Propagate `shard` annotations, partition into the per-chip SPMD program
/// and lower its shard collectives to nova collectives. Its output is the
/// input of nova-lower-to-tiles (with `chips` set to the grid's size).
void buildNovaPartitionPipeline(OpPassManager &pm,
                                const NovaPartitionOptions &options = {});

void registerNovaPipelines();

} // namespace mlir::nova

#endif // NOVA_PIPELINES_PIPELINES_H
