//===- Pipeline.cpp - the partition phase's pipeline ------------*- C++ -*-===//
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "nova/Conversion/Passes.h"
#include "nova/Input/Passes.h"

using namespace mlir;
using namespace mlir::nova;

void mlir::nova::buildPartitionPassPipeline(OpPassManager &pm,
                                            const NovaPartitionOptions &options) {
  // Keep-dim reductions (LayerNorm's mean, softmax's max) index their unit
  // dimension with a constant, which the sharding interface of linalg ops
  // rejects; dropping unit dimensions turns them into plain projections.
  pm.addNestedPass<func::FuncOp>(createLinalgFoldUnitExtentDimsPass());
  // A 0-d operand (torch's scalar tensors: a mask's fill value) makes the
  // linalg sharding model build a sharding without a grid; read it in the
  // body instead (a captured, replicated value).
  pm.addNestedPass<func::FuncOp>(createLinalgInlineScalarOperandsPass());
  // Attention's batch matmuls collapse [B, H] into one dimension, which hides
  // the head dimension from sharding; give them a loop per batch dimension.
  pm.addNestedPass<func::FuncOp>(createNovaExpandBatchDims());
  // The rest of the normal form that does not depend on the chip count:
  // f64 demoted, dead generic results (softmax's argmax) erased.
  pm.addNestedPass<func::FuncOp>(createNovaDemoteF64());
  pm.addNestedPass<func::FuncOp>(createNovaEraseDeadGenericResults());
  pm.addPass(createCanonicalizerPass());
  // Sequence parallelism with a vocabulary-parallel embedding: the one-hot
  // product in Megatron's form (ids gathered, output split along the sequence).
  pm.addNestedPass<func::FuncOp>(createNovaSequenceParallelEmbedding());
  pm.addNestedPass<func::FuncOp>(createNovaPrepareSharding());
  // Values whose users propagation would shard differently (a training
  // step's LayerNorm gradients under sequence parallelism) get a sharding of
  // their own first: propagation asserts on them otherwise.
  pm.addNestedPass<func::FuncOp>(createNovaResolveShardingConflicts());
  // Forward-backward: the default order leaves a Megatron MLP's GELU chain
  // replicated (two all-gathers instead of one all-reduce).
  shard::ShardingPropagationOptions propagation;
  propagation.traversal = shard::TraversalOrder::ForwardBackward;
  pm.addNestedPass<func::FuncOp>(shard::createShardingPropagation(propagation));
  if (options.propagateOnly)
    return;
  pm.addNestedPass<func::FuncOp>(createNovaVerifySharding());
  // Changes of sharding on n-D grids, which shard-partition cannot do.
  pm.addNestedPass<func::FuncOp>(createNovaMaterializeReshards());
  // Partitioning keeps linalg.index local: give split loops their offsets.
  pm.addNestedPass<func::FuncOp>(createNovaRecordLoopRanges());
  pm.addNestedPass<func::FuncOp>(shard::createPartition());
  pm.addNestedPass<func::FuncOp>(createNovaOffsetSplitIndices());
  // CSE lets canonicalize fold the per-device `scf.if` that partitioning
  // puts around the zero init of a partial-sum matmul.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  // A vocabulary-parallel embedding's one-hot products -> each chip's
  // masked lookup of its own rows, forward and backward (after the
  // canonicalization that folds the zero init of a partial-sum matmul).
  pm.addNestedPass<func::FuncOp>(createNovaLocalizeOneHotLookups());
  // A bf16 sum widened after its all-reduce is reduced in f32, as DDP does.
  pm.addNestedPass<func::FuncOp>(createNovaWidenAllReduces());
  // Sums of all-reduced partials (TP's backward) -> one all-reduce.
  pm.addNestedPass<func::FuncOp>(createNovaCombineAllReduces());
  // Sequence parallelism's all-reduce + local slice -> reduce-scatter.
  pm.addNestedPass<func::FuncOp>(createNovaFormReduceScatter());
  // Gradients all-reduced together in buckets (latency paid once per bucket).
  NovaBucketAllReducesOptions bucket;
  bucket.bucketBytes = options.bucketBytes;
  pm.addNestedPass<func::FuncOp>(createNovaBucketAllReduces(bucket));
  // ZeRO's gathers of the updated parameter shards, likewise.
  NovaBucketAllGathersOptions gathers;
  gathers.bucketBytes = options.bucketBytes;
  pm.addNestedPass<func::FuncOp>(createNovaBucketAllGathers(gathers));
  // An all-reduce larger than a bucket flies chunk by chunk behind its own
  // producer's remaining tiles.
  NovaSplitAllReducesOptions split;
  split.chunkBytes = options.bucketBytes;
  pm.addNestedPass<func::FuncOp>(createNovaSplitAllReduces(split));
  pm.addPass(createConvertShardToNova());
}
