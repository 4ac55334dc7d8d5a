//===- DemoteF64.cpp - demote f64 to f32 ------------------------*- C++ -*-===//
#include "nova/Input/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#define DEBUG_TYPE "nova-demote-f64"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVADEMOTEF64
#include "nova/Input/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

bool holdsF64(Type type) { return getElementTypeOrSelf(type).isF64(); }

Type demoted(Type type) {
  auto f32 = Float32Type::get(type.getContext());
  if (type.isF64())
    return f32;
  if (auto shaped = dyn_cast<ShapedType>(type); shaped && holdsF64(shaped))
    return shaped.clone(f32);
  return type;
}

APFloat toF32(APFloat value) {
  bool losesInfo = false;
  value.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven,
                &losesInfo);
  return value;
}

/// Returns the f32 form of an f64 constant's value, or null if `attr` holds
/// no f64.
TypedAttr demotedValue(TypedAttr attr) {
  if (auto f = dyn_cast<FloatAttr>(attr); f && f.getType().isF64())
    return FloatAttr::get(Float32Type::get(attr.getContext()),
                          toF32(f.getValue()));
  if (auto dense = dyn_cast<DenseFPElementsAttr>(attr);
      dense && holdsF64(dense.getType()))
    return dense.mapValues(Float32Type::get(attr.getContext()),
                           [](const APFloat &v) {
                             return toF32(v).bitcastToAPInt();
                           });
  return nullptr;
}

struct DemoteF64Pass : public nova::impl::NovaDemoteF64Base<DemoteF64Pass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (llvm::any_of(func.getFunctionType().getInputs(), holdsF64) ||
        llvm::any_of(func.getFunctionType().getResults(), holdsF64)) {
      func.emitError() << "function signature holds f64; nova-demote-f64 "
                          "only demotes values inside function bodies";
      return signalPassFailure();
    }
    // Refuse before touching anything, so a failure loses nothing.
    WalkResult refused = func.walk([&](arith::BitcastOp cast) {
      if (holdsF64(cast.getIn().getType()) || holdsF64(cast.getType())) {
        cast.emitError() << "cannot demote a bitcast of f64 to f32";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (refused.wasInterrupted())
      return signalPassFailure();

    func.getBody().walk([&](Operation *op) {
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            if (holdsF64(arg.getType())) {
              arg.setType(demoted(arg.getType()));
              ++numDemotedValues;
            }
      for (OpResult result : op->getResults())
        if (holdsF64(result.getType())) {
          result.setType(demoted(result.getType()));
          ++numDemotedValues;
        }
      if (auto cst = dyn_cast<arith::ConstantOp>(op))
        if (TypedAttr value = demotedValue(cst.getValue())) {
          cst.setValueAttr(value);
          ++numDemotedConstants;
        }
    });
    // Entry block arguments are the signature, already checked above; nested
    // blocks were handled by the walk.

    SmallVector<Operation *> identityCasts;
    func.walk([&](Operation *op) {
      if (isa<arith::ExtFOp, arith::TruncFOp>(op) &&
          op->getOperand(0).getType() == op->getResult(0).getType())
        identityCasts.push_back(op);
    });
    for (Operation *cast : identityCasts) {
      cast->getResult(0).replaceAllUsesWith(cast->getOperand(0));
      cast->erase();
      ++numErasedCasts;
    }
  }
};

} // namespace
