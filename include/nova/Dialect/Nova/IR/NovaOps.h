//===- NovaOps.h - nova dialect operations ----------------------*- C++ -*-===//
#ifndef NOVA_DIALECT_NOVA_IR_NOVAOPS_H
#define NOVA_DIALECT_NOVA_IR_NOVAOPS_H

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"

namespace mlir::nova {
// The generated declarations of ShardingInterface methods name it unqualified.
using shard::Sharding;
} // namespace mlir::nova

#define GET_OP_CLASSES
#include "nova/Dialect/Nova/IR/NovaOps.h.inc"

#endif // NOVA_DIALECT_NOVA_IR_NOVAOPS_H
