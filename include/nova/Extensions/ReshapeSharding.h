//===- ReshapeSharding.h - shard interface of tensor reshapes ---*- C++ -*-===//
//
// `shard::ShardingInterface` models for `tensor.expand_shape` and
// `tensor.collapse_shape`, which MLIR 22 lacks: without them
// `sharding-propagation` stops at every reshape ("sharding interface is not
// implemented"), and torch-mlir puts one around every linear layer and
// attention head split.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_EXTENSIONS_RESHAPESHARDING_H
#define NOVA_EXTENSIONS_RESHAPESHARDING_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir {
class DialectRegistry;
namespace nova {

/// Mesh axes per tensor dimension (`shard.sharding`'s split_axes).
using DimAxes = SmallVector<SmallVector<shard::GridAxis>>;

/// Split axes of the collapsed (coarse) tensor equivalent to `fineAxes` on
/// the expanded (fine) one, or nullopt when a group's local block is not
/// contiguous in the collapsed order (then no split of the collapsed
/// dimension matches). `gridShape` sizes the axes.
std::optional<DimAxes>
collapseSplitAxes(ArrayRef<int64_t> fineShape,
                  ArrayRef<ReassociationIndices> groups, const DimAxes &fineAxes,
                  ArrayRef<int64_t> gridShape);

/// The inverse: split axes of the fine tensor equivalent to `coarseAxes`,
/// or nullopt when a collapsed dimension's split does not fall on the
/// boundaries of its fine dimensions.
std::optional<DimAxes>
expandSplitAxes(ArrayRef<int64_t> fineShape,
                ArrayRef<ReassociationIndices> groups, const DimAxes &coarseAxes,
                ArrayRef<int64_t> gridShape);

/// Attaches the models to `tensor.expand_shape` and `tensor.collapse_shape`.
void registerReshapeShardingModels(DialectRegistry &registry);

/// Attaches the model of `tensor.pad` (lib/Extensions/PadSharding.cpp):
/// unpadded dimensions keep their split, padded ones are whole per chip.
void registerPadShardingModel(DialectRegistry &registry);

/// Registers the models of `tensor.extract_slice` and `tensor.concat`
/// (lib/Extensions/SliceSharding.cpp).
void registerSliceShardingModels(DialectRegistry &registry);

/// Attaches the model of the linalg convolutions and poolings
/// (lib/Extensions/ConvSharding.cpp): batch and output-channel splits
/// partition. Must be registered before upstream's linalg models.
void registerConvShardingModels(DialectRegistry &registry);

} // namespace nova
} // namespace mlir

#endif // NOVA_EXTENSIONS_RESHAPESHARDING_H
