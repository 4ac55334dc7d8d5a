//===- DecomposeConv.cpp - conv_2d_nchw_fchw -> matmuls over views -*- C++ -*-===//
#include "nova/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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

    // Loops over images and kernel taps rather than one matmul per (image,
    // tap) pair: the program stays proportional to the input (a weight
    // gradient's "kernel" is the output gradient, H x W taps), and so does
    // the compile time of everything downstream (one-shot bufferization is
    // quadratic in the number of aliasing slices).
    IRRewriter rewriter(conv);
    Location loc = conv.getLoc();
    Value x = conv.getInputs()[0], w = conv.getInputs()[1];
    llvm::SmallDenseMap<int64_t, Value> constants;
    auto index = [&](int64_t v) -> Value {
      Value &c = constants[v];
      if (!c)
        c = arith::ConstantIndexOp::create(rewriter, loc, v);
      return c;
    };
    auto attr = [&](int64_t v) -> OpFoldResult {
      return rewriter.getIndexAttr(v);
    };
    // Loop bounds and dilations, made once in front of the loops.
    Value zero = index(0), one = index(1), images = index(n),
          rows = index(kh), cols = index(kw);
    Value dilation[2] = {dilations[0] == 1 ? Value() : index(dilations[0]),
                         dilations[1] == 1 ? Value() : index(dilations[1])};
    // The tap's offset along spatial dim `d`: `iv * dilation` (or `iv`).
    auto scaled = [&](Value iv, int d) -> OpFoldResult {
      if (!dilation[d])
        return iv;
      return arith::MulIOp::create(rewriter, loc, iv, dilation[d]).getResult();
    };
    auto wSliceType = RankedTensorType::get({f, c}, element);
    auto xSliceType = RankedTensorType::get({c, oh, ow}, element);
    auto xMatType = RankedTensorType::get({c, oh * ow}, element);
    auto accSliceType = RankedTensorType::get({f, oh, ow}, element);
    auto accType = RankedTensorType::get({f, oh * ow}, element);
    SmallVector<ReassociationIndices> collapse = {{0}, {1, 2}};
    SmallVector<OpFoldResult> ones(4, attr(1));

    auto imageLoop = scf::ForOp::create(
        rewriter, loc, zero, images, one,
        ValueRange{conv.getOutputs()[0]},
        [&](OpBuilder &, Location, Value b, ValueRange imageArgs) {
          SmallVector<OpFoldResult> outOffsets = {b, attr(0), attr(0),
                                                  attr(0)};
          SmallVector<OpFoldResult> outSizes = {attr(1), attr(f), attr(oh),
                                                attr(ow)};
          Value acc = tensor::ExtractSliceOp::create(
              rewriter, loc, accSliceType, imageArgs[0], outOffsets, outSizes,
              ones);
          acc = tensor::CollapseShapeOp::create(rewriter, loc, accType, acc,
                                                collapse);
          auto rowLoop = scf::ForOp::create(
              rewriter, loc, zero, rows, one, ValueRange{acc},
              [&](OpBuilder &, Location, Value i, ValueRange rowArgs) {
                auto colLoop = scf::ForOp::create(
                    rewriter, loc, zero, cols, one, ValueRange{rowArgs[0]},
                    [&](OpBuilder &, Location, Value j, ValueRange colArgs) {
                      Value tap = tensor::ExtractSliceOp::create(
                          rewriter, loc, wSliceType, w,
                          ArrayRef<OpFoldResult>{attr(0), attr(0), i, j},
                          ArrayRef<OpFoldResult>{attr(f), attr(c), attr(1),
                                                 attr(1)},
                          ones);
                      Value xs = tensor::ExtractSliceOp::create(
                          rewriter, loc, xSliceType, x,
                          ArrayRef<OpFoldResult>{b, attr(0),
                                                 scaled(i, 0), scaled(j, 1)},
                          ArrayRef<OpFoldResult>{attr(1), attr(c), attr(oh),
                                                 attr(ow)},
                          ArrayRef<OpFoldResult>{attr(1), attr(1),
                                                 attr(strides[0]),
                                                 attr(strides[1])});
                      Value xm = tensor::CollapseShapeOp::create(
                          rewriter, loc, xMatType, xs, collapse);
                      Value mm = linalg::MatmulOp::create(
                                     rewriter, loc, TypeRange{accType},
                                     ValueRange{tap, xm},
                                     ValueRange{colArgs[0]})
                                     .getResult(0);
                      scf::YieldOp::create(rewriter, loc, mm);
                    });
                scf::YieldOp::create(rewriter, loc, colLoop.getResult(0));
              });
          Value expanded = tensor::ExpandShapeOp::create(
              rewriter, loc, accSliceType, rowLoop.getResult(0), collapse);
          Value written = tensor::InsertSliceOp::create(
              rewriter, loc, expanded, imageArgs[0], outOffsets, outSizes,
              ones);
          scf::YieldOp::create(rewriter, loc, written);
        });
    Value result = imageLoop.getResult(0);
    numMatmuls += n * kh * kw;
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
