//===- NovaDialect.cpp - nova dialect registration --------------*- C++ -*-===//
#include "nova/Dialect/Nova/IR/NovaDialect.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::nova;

#include "nova/Dialect/Nova/IR/NovaDialect.cpp.inc"

void NovaDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "nova/Dialect/Nova/IR/NovaOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
}

LogicalResult NovaDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == getTargetAttrName()) {
    if (!isa<TargetAttr>(attr.getValue()))
      return op->emitError() << "'" << getTargetAttrName()
                             << "' must be a #nova.target attribute";
    return success();
  }
  // Byte addresses and per-function peaks written by nova-plan-memory.
  if (llvm::is_contained({"nova.address", "nova.sram_peak", "nova.acc_peak",
                          "nova.hbm_peak"},
                         attr.getName().getValue())) {
    auto value = dyn_cast<IntegerAttr>(attr.getValue());
    if (!value || !value.getType().isInteger(64) || value.getInt() < 0)
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a non-negative i64";
    return success();
  }
  return op->emitError() << "unknown nova attribute '" << attr.getName().getValue()
                         << "'";
}

TargetAttr mlir::nova::lookupTarget(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto target = op->getAttrOfType<TargetAttr>(
            NovaDialect::getTargetAttrName()))
      return target;
  return {};
}

std::optional<MemorySpace> mlir::nova::getMemorySpace(MemRefType type) {
  if (auto space = dyn_cast_or_null<MemorySpaceAttr>(type.getMemorySpace()))
    return space.getValue();
  return std::nullopt;
}
