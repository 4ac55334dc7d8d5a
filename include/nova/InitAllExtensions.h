//===- InitAllExtensions.h - register Nova's extensions ---------*- C++ -*-===//
//
// Interface models Nova attaches to upstream ops.
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
}
} // namespace nova

#endif // NOVA_INITALLEXTENSIONS_H
