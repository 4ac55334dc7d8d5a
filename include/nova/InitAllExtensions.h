//===- InitAllExtensions.h - register Nova's extensions ---------*- C++ -*-===//
//
// Interface models Nova attaches to upstream ops. Register them before
// upstream's extensions: where both attach an interface to one op (the
// convolutions' ShardingInterface), the first attachment wins.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_INITALLEXTENSIONS_H
#define NOVA_INITALLEXTENSIONS_H

#include "mlir/IR/DialectRegistry.h"
#include "nova/Extensions/ReshapeSharding.h"

namespace nova {
inline void registerAllExtensions(mlir::DialectRegistry &registry) {
  mlir::nova::registerReshapeShardingModels(registry);
  mlir::nova::registerPadShardingModel(registry);
  mlir::nova::registerSliceShardingModels(registry);
  mlir::nova::registerConvShardingModels(registry);
}
} // namespace nova

#endif // NOVA_INITALLEXTENSIONS_H
