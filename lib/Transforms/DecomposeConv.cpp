//===- DecomposeConv.cpp - conv_2d_nchw_fchw -> matmuls over views -*- C++ -*-===//
#include "nova/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "nova-decompose-conv"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVADECOMPOSECONV
#include "nova/Transforms/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

struct DecomposeConvPass
    : public nova::impl::NovaDecomposeConvBase<DecomposeConvPass> {
  using Base::Base;

  LogicalResult decompose(linalg::Conv2DNchwFchwOp conv) {
    auto input = cast<RankedTensorType>(conv.getInputs()[0].getType());
    auto filter = cast<RankedTensorType>(conv.getInputs()[1].getType());
    auto output = dyn_cast<RankedTensorType>(conv.getOutputs()[0].getType());
    if (!output || !input.hasStaticShape() || !filter.hasStaticShape() ||
        !output.hasStaticShape())
      return conv.emitError()
             << "nova-decompose-conv needs static tensor shapes";
    Type element = output.getElementType();
    if (input.getElementType() != element || filter.getElementType() != element)
      return conv.emitError()
             << "nova-decompose-conv needs one element type for input, "
                "filter and output";

    SmallVector<int64_t> strides = llvm::to_vector(
        llvm::map_range(conv.getStrides().getValues<int64_t>(),
                        [](int64_t v) { return v; }));
    SmallVector<int64_t> dilations = llvm::to_vector(
        llvm::map_range(conv.getDilations().getValues<int64_t>(),
                        [](int64_t v) { return v; }));
    int64_t n = output.getDimSize(0), f = output.getDimSize(1),
            oh = output.getDimSize(2), ow = output.getDimSize(3);
    int64_t c = filter.getDimSize(1), kh = filter.getDimSize(2),
            kw = filter.getDimSize(3);

    IRRewriter rewriter(conv);
    Location loc = conv.getLoc();
    Value x = conv.getInputs()[0], w = conv.getInputs()[1];
    Value result = conv.getOutputs()[0];
    auto i64 = [&](int64_t v) -> OpFoldResult {
      return rewriter.getIndexAttr(v);
    };
    auto wSliceType = RankedTensorType::get({f, c}, element);
    auto xSliceType = RankedTensorType::get({c, oh, ow}, element);
    auto xMatType = RankedTensorType::get({c, oh * ow}, element);
    auto accSliceType = RankedTensorType::get({f, oh, ow}, element);
    auto accType = RankedTensorType::get({f, oh * ow}, element);
    SmallVector<ReassociationIndices> collapse = {{0}, {1, 2}};

    // The filter taps are shared by every image: slice them once.
    SmallVector<Value> taps;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j)
        taps.push_back(tensor::ExtractSliceOp::create(
            rewriter, loc, wSliceType, w,
            ArrayRef<OpFoldResult>{i64(0), i64(0), i64(i), i64(j)},
            ArrayRef<OpFoldResult>{i64(f), i64(c), i64(1), i64(1)},
            ArrayRef<OpFoldResult>{i64(1), i64(1), i64(1), i64(1)}));

    for (int64_t b = 0; b < n; ++b) {
      SmallVector<OpFoldResult> outOffsets = {i64(b), i64(0), i64(0), i64(0)};
      SmallVector<OpFoldResult> outSizes = {i64(1), i64(f), i64(oh), i64(ow)};
      SmallVector<OpFoldResult> ones(4, i64(1));
      Value acc = tensor::ExtractSliceOp::create(
          rewriter, loc, accSliceType, result, outOffsets, outSizes, ones);
      acc = tensor::CollapseShapeOp::create(rewriter, loc, accType, acc,
                                            collapse);
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          Value xs = tensor::ExtractSliceOp::create(
              rewriter, loc, xSliceType, x,
              ArrayRef<OpFoldResult>{i64(b), i64(0), i64(i * dilations[0]),
                                     i64(j * dilations[1])},
              ArrayRef<OpFoldResult>{i64(1), i64(c), i64(oh), i64(ow)},
              ArrayRef<OpFoldResult>{i64(1), i64(1), i64(strides[0]),
                                     i64(strides[1])});
          Value xm = tensor::CollapseShapeOp::create(rewriter, loc, xMatType,
                                                     xs, collapse);
          acc = linalg::MatmulOp::create(rewriter, loc, TypeRange{accType},
                                         ValueRange{taps[i * kw + j], xm},
                                         ValueRange{acc})
                    .getResult(0);
          ++numMatmuls;
        }
      Value expanded = tensor::ExpandShapeOp::create(
          rewriter, loc, accSliceType, acc, collapse);
      result = tensor::InsertSliceOp::create(rewriter, loc, expanded, result,
                                             outOffsets, outSizes, ones);
    }
    rewriter.replaceOp(conv, result);
    ++numDecomposed;
    return success();
  }

  void runOnOperation() override {
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    getOperation().walk(
        [&](linalg::Conv2DNchwFchwOp conv) { convs.push_back(conv); });
    for (linalg::Conv2DNchwFchwOp conv : convs)
      if (failed(decompose(conv)))
        return signalPassFailure();
  }
};

} // namespace
