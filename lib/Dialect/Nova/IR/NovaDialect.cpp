//===- NovaDialect.cpp - nova dialect registration --------------*- C++ -*-===//
#include "nova/Dialect/Nova/IR/NovaDialect.h"
#include "nova/Dialect/Nova/IR/NovaAttentionTrainOps.h"
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
  addOperations<
#define GET_OP_LIST
#include "nova/Dialect/Nova/IR/NovaAttentionTrainOps.cpp.inc"
      >();
  registerAttributes();
  registerTypes();
}

LogicalResult NovaDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == getTargetAttrName()) {
    if (!isa<TargetAttr>(value))
      return op->emitError() << "'" << name
                             << "' must be a #nova.target attribute";
    return success();
  }
  // Set by memory planning: a buffer's byte address, a function's peaks.
  if (name == AddressAttrHelper::getNameStr() ||
      name == SramPeakAttrHelper::getNameStr() ||
      name == AccPeakAttrHelper::getNameStr() ||
      name == HbmPeakAttrHelper::getNameStr()) {
    auto integer = dyn_cast<IntegerAttr>(value);
    if (!integer || integer.getInt() < 0)
      return op->emitError() << "'" << name
                             << "' must be a non-negative integer";
    return success();
  }
  // The chips that run a function (one program per pipeline stage).
  if (name == ChipsAttrHelper::getNameStr()) {
    auto chips = dyn_cast<DenseI64ArrayAttr>(value);
    if (!chips || chips.empty() ||
        llvm::any_of(chips.asArrayRef(), [](int64_t c) { return c < 0; }))
      return op->emitError() << "'" << name
                             << "' must be a non-empty array of chip ids";
    return success();
  }
  // A loop over identical layers (nova-roll-layers): kept as a loop.
  if (name == LayersAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(value) || op->getNumRegions() != 1)
      return op->emitError() << "'" << name
                             << "' must be a unit attribute on a loop";
    return success();
  }
  return op->emitError() << "unknown nova attribute '" << name << "'";
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
