//===- PadMatmul.cpp - matmul widths the matrix unit can tile ---*- C++ -*-===//
#include "nova/Utils/Divisors.h"
#include "nova/Normalize/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"

#define DEBUG_TYPE "nova-pad-matmul"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAPADMATMUL
#include "nova/Normalize/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// Zero-pads dimension `dim` of `v` to `size`: a zero-filled tensor with `v`
/// inserted (it lives in HBM like any function-level tensor; tensor.pad's own
/// bufferization would not say where).
Value padDim(OpBuilder &b, Location loc, Value v, int64_t dim, int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  Value zero = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(type.getElementType()));
  Value empty = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  Value filled = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(type.getRank(), b.getIndexAttr(1));
  for (int64_t s : type.getShape())
    sizes.push_back(b.getIndexAttr(s));
  return tensor::InsertSliceOp::create(b, loc, v, filled, offsets, sizes, strides);
}

struct PadMatmulPass : public nova::impl::NovaPadMatmulBase<PadMatmulPass> {
  using Base::Base;

  void runOnOperation() override {
    nova::TargetAttr target = nova::lookupTarget(getOperation());
    if (!target)
      return;
    int64_t cols = target.getMatrixCols();
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::MatmulOp op : matmuls) {
      if (!op.hasPureTensorSemantics())
        continue;
      auto out = cast<RankedTensorType>(op.getResult(0).getType());
      if (!out.hasStaticShape())
        continue;
      int64_t n = out.getDimSize(1);
      // Only widths the tiler would cut into slivers (a vocabulary of 50257
      // = 29 x 1733 gives 29-column tiles of a 128-column array).
      if (n <= cols || nova::largestDivisorAtMost(n, cols) * 4 > cols)
        continue;
      // Which dimension of B holds N: B[k, n] (default) or B[n, k]
      // (nova-fold-transpose-into-matmul's transposed-B maps).
      AffineMap bMap = op.getIndexingMapsArray()[1];
      std::optional<int64_t> bDim;
      for (auto [i, e] : llvm::enumerate(bMap.getResults()))
        if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == 1)
          bDim = i;
      AffineMap cMap = op.getIndexingMapsArray()[2];
      if (!bDim || cMap != AffineMap::getMultiDimIdentityMap(3, &getContext())
                               .getSubMap({0, 1}))
        continue;
      int64_t padded = llvm::alignTo(n, cols);
      Location loc = op.getLoc();
      rewriter.setInsertionPoint(op);
      Value b = padDim(rewriter, loc, op.getInputs()[1], *bDim, padded);
      Value c = padDim(rewriter, loc, op.getOutputs()[0], 1, padded);
      auto wide = linalg::MatmulOp::create(
          rewriter, loc, TypeRange{c.getType()},
          ValueRange{op.getInputs()[0], b}, ValueRange{c});
      wide->setAttrs(op->getAttrs());
      SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(out.getDimSize(0)),
                                         rewriter.getIndexAttr(n)};
      SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
      Value result = tensor::ExtractSliceOp::create(
          rewriter, loc, wide.getResult(0), offsets, sizes, strides);
      rewriter.replaceOp(op, result);
      ++numPadded;
    }
  }
};

} // namespace
