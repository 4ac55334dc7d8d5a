//===- AttachTarget.cpp - attach #nova.target to a module -------*- C++ -*-===//
#include "nova/Input/Passes.h"
#include "nova/Target/TargetDescription.h"

#define DEBUG_TYPE "nova-attach-target"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAATTACHTARGET
#include "nova/Input/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {
struct AttachTargetPass
    : public nova::impl::NovaAttachTargetBase<AttachTargetPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (chips < 0) {
      module.emitError() << "chips must not be negative, got " << chips.getValue();
      return signalPassFailure();
    }
    llvm::Expected<std::string> path = findTargetFile(target);
    if (!path) {
      module.emitError() << llvm::toString(path.takeError());
      return signalPassFailure();
    }
    llvm::Expected<TargetAttr> attr =
        loadTarget(module.getContext(), *path, chips);
    if (!attr) {
      module.emitError() << llvm::toString(attr.takeError());
      return signalPassFailure();
    }
    module->setAttr(NovaDialect::getTargetAttrName(), *attr);
  }
};
} // namespace
