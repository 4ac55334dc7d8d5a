//===- ShardToNova.h - shard collectives to nova collectives ----*- C++ -*-===//
//
// Patterns that lower the collectives `shard-partition` leaves in a per-chip
// SPMD program (shard.all_reduce, all_gather, reduce_scatter, all_to_all on
// tensors) to nova collectives on HBM buffers, in a form that one-shot
// bufferization accepts. The pass (convert-shard-to-nova) applies them.
//
// No TypeConverter: tensor types do not change, only the ops.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_CONVERSION_SHARDTONOVA_SHARDTONOVA_H
#define NOVA_CONVERSION_SHARDTONOVA_SHARDTONOVA_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::nova {

/// Adds the shard collective -> nova collective patterns. They read the
/// shard.grid the collectives name, so the grid is erased only afterwards.
void populateShardToNovaPatterns(RewritePatternSet &patterns);

/// Why `op` (an op of the shard dialect) cannot be lowered to nova, or an
/// empty string if it can.
std::string whyNotLowerableShardOp(Operation *op);

/// All-reduces whose results are only concatenated along dimension 0 (the
/// chunks of nova-split-all-reduces) write their rows of one buffer, so the
/// whole result is not copied together afterwards. Fails, changing nothing,
/// on any other concatenation.
LogicalResult lowerConcatenatedAllReduces(RewriterBase &rewriter,
                                          tensor::ConcatOp concat);

} // namespace mlir::nova

#endif // NOVA_CONVERSION_SHARDTONOVA_SHARDTONOVA_H
