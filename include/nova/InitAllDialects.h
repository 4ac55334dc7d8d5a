//===- InitAllDialects.h - register Nova's dialects -------------*- C++ -*-===//
#ifndef NOVA_INITALLDIALECTS_H
#define NOVA_INITALLDIALECTS_H

#include "mlir/IR/DialectRegistry.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"
#include "nova/Dialect/NovaISA/IR/NovaISADialect.h"

namespace nova {
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::nova::NovaDialect, mlir::nova_isa::NovaISADialect>();
}
} // namespace nova

#endif // NOVA_INITALLDIALECTS_H
