//===- VerifyNormalForm.cpp - check Nova linalg normal form -----*- C++ -*-===//
#include "nova/Normalize/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "nova/Dialect/Nova/IR/ElementTypes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"

#define DEBUG_TYPE "nova-verify-normal-form"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAVERIFYNORMALFORM
#include "nova/Normalize/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

bool isProjectedPermutationOrBroadcast(AffineMap map) {
  // Results are distinct dims or the constant 0 (a unit broadcast dim).
  llvm::SmallBitVector seen(map.getNumDims());
  for (AffineExpr e : map.getResults()) {
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      if (seen.test(d.getPosition()))
        return false;
      seen.set(d.getPosition());
      continue;
    }
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0)
      return false;
  }
  return true;
}

LogicalResult checkPayloadOp(Operation &op) {
  // linalg.index, cf.assert (torch-mlir's bounds checks), tensor.extract of
  // a tensor from outside (a gather) and affine index arithmetic are
  // evaluated on tiles by convert-linalg-to-nova.
  if (isa<linalg::IndexOp, cf::AssertOp, tensor::ExtractOp,
          affine::AffineApplyOp>(op))
    return success();
  if (!isa<arith::ArithDialect, math::MathDialect>(op.getDialect()))
    return op.emitError() << "'" << op.getName()
                          << "' in a generic payload; only arith and math "
                             "ops are allowed";
  for (Type t : op.getResultTypes()) {
    if (nova::isTileFloatType(t) || t.isIndex() || nova::isTileIntegerType(t))
      continue;
    return op.emitError() << "payload value of type " << t
                          << "; payloads compute on f32, bf16, f16, i64, "
                             "i32, i8, i1 and index";
  }
  return success();
}

struct VerifyNormalFormPass
    : public nova::impl::NovaVerifyNormalFormBase<VerifyNormalFormPass> {
  using Base::Base;

  LogicalResult checkGeneric(linalg::GenericOp op) {
    if (op->getNumResults() != 1)
      return op.emitError() << "linalg.generic has " << op->getNumResults()
                            << " results; nova normal form needs exactly one";
    bool parallel = op.getNumLoops() == op.getNumParallelLoops();
    if (parallel && !llvm::all_of(op.getIndexingMapsArray(),
                                  isProjectedPermutationOrBroadcast))
      return op.emitError("elementwise linalg.generic with an indexing map "
                          "that is not a projected permutation");
    bool ok = true;
    for (Operation &inner : op.getBlock()->without_terminator())
      ok &= succeeded(checkPayloadOp(inner));
    return success(ok);
  }

  void runOnOperation() override {
    bool ok = true;
    for (BlockArgument arg : getOperation().getArguments())
      if (auto tensor = dyn_cast<RankedTensorType>(arg.getType());
          tensor && llvm::is_contained(tensor.getShape(), 0)) {
        getOperation().emitError()
            << "argument #" << arg.getArgNumber() << " is a zero-size tensor "
            << arg.getType() << "; nova does not compile tensors without elements";
        ok = false;
      }
    getOperation().getBody().walk([&](Operation *op) {
      if (op->getParentOfType<linalg::LinalgOp>())
        return; // payload: checked with its generic
      ++numChecked;
      for (Type t : op->getResultTypes())
        if (auto tensor = dyn_cast<RankedTensorType>(t);
            tensor && llvm::is_contained(tensor.getShape(), 0)) {
          op->emitError() << "zero-size tensor " << t
                          << "; nova does not compile tensors without elements";
          ok = false;
        }
      for (Type t : op->getResultTypes())
        if (auto tensor = dyn_cast<TensorType>(t);
            tensor && !nova::isTileElementType(tensor.getElementType())) {
          op->emitError() << "tensor of element type "
                          << tensor.getElementType()
                          << "; nova normal form holds f32, bf16, f16, i64, "
                             "i32, i8 and i1 tensors";
          ok = false;
        }
      if (isa<linalg::ConvolutionOpInterface>(op)) {
        if (isa<linalg::Conv2DNchwFchwOp, linalg::Conv2DNgchwGfchwOp,
                linalg::DepthwiseConv2DNchwChwOp, linalg::PoolingNchwSumOp,
                linalg::PoolingNchwMaxOp>(op))
          op->emitError("convolution left; run nova-decompose-conv");
        else
          op->emitError() << "convolution '" << op->getName()
                        << "' has no lowering: nova-decompose-conv turns "
                           "linalg.conv_2d_nchw_fchw, "
                           "linalg.conv_2d_ngchw_gfchw, "
                           "linalg.depthwise_conv_2d_nchw_chw and "
                           "linalg.pooling_nchw_sum/max into loops over "
                           "kernel taps; other "
                           "convolution and pooling forms are not supported";
        ok = false;
      }
      if (auto generic = dyn_cast<linalg::GenericOp>(op))
        ok &= succeeded(checkGeneric(generic));
    });
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
