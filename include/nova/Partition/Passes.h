//===- Passes.h - the partition phase ---------------------------*- C++ -*-===//
//
// A shard-annotated linalg program -> one SPMD program per chip with nova
// collectives (Passes.td), and the phase's pipeline, nova-partition.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_PARTITION_PASSES_H
#define NOVA_PARTITION_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::nova {

#define GEN_PASS_DECL
#include "nova/Partition/Passes.h.inc"

struct NovaPartitionOptions
    : public PassPipelineOptions<NovaPartitionOptions> {
  PassOptions::Option<int64_t> bucketBytes{
      *this, "bucket-bytes",
      llvm::cl::desc("largest all-reduce bucket in bytes (nova-bucket-all-reduces; "
                     "DDP's default 25 MiB; larger ones are split into chunks of it, "
                     "nova-split-all-reduces; 0: neither)"),
      llvm::cl::init(26214400)};
  PassOptions::Option<bool> propagateOnly{
      *this, "propagate-only",
      llvm::cl::desc("stop after sharding propagation: the shardings the "
                     "pipeline partitions by (a pipeline stage's forward reads "
                     "its saved results' placements from them)"),
      llvm::cl::init(false)};
};

/// Propagate `shard` annotations, partition into the per-chip SPMD program
/// and lower its shard collectives to nova collectives. Its output is the
/// input of nova-lower-to-tiles (with `chips` set to the grid's size).
void buildPartitionPassPipeline(OpPassManager &pm,
                                const NovaPartitionOptions &options = {});

#define GEN_PASS_REGISTRATION
#include "nova/Partition/Passes.h.inc"

} // namespace mlir::nova

#endif // NOVA_PARTITION_PASSES_H
