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
    int64_t cols = target.getMatrixCols(), rows = target.getMatrixRows();
    // The longest row tile nova-tile gives a matmul (half the accumulator
    // in f32 over a full-width tile).
    int64_t maxRows = std::max<int64_t>(rows, target.getAccBytes() / 2 / (cols * 4));
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    IRRewriter rewriter(&getContext());
    AffineMap identity =
        AffineMap::getMultiDimIdentityMap(3, &getContext()).getSubMap({0, 1});
    for (linalg::MatmulOp op : matmuls) {
      if (!op.hasPureTensorSemantics())
        continue;
      auto out = cast<RankedTensorType>(op.getResult(0).getType());
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      if (!out.hasStaticShape() || maps[2] != identity)
        continue;
      // Loop d's extent, read from the first operand that indexes it.
      SmallVector<int64_t> extent(3, ShapedType::kDynamic);
      for (auto [value, map] : llvm::zip(op->getOperands(), maps))
        for (auto [i, e] : llvm::enumerate(map.getResults()))
          if (auto d = dyn_cast<AffineDimExpr>(e))
            extent[d.getPosition()] = cast<ShapedType>(value.getType()).getDimSize(i);
      if (llvm::any_of(extent, ShapedType::isDynamic))
        continue;
      // The padded extent of each loop (0: as it is). Only extents the
      // tiler would cut into slivers:
      // - N (columns) above the array width whose best divisor is under a
      //   quarter of it (a vocabulary of 50257 = 29 x 1733: 29-column tiles);
      // - K (the contraction, fed to the array in chunks of its rows) the
      //   same against the rows (a backward dX = dY W over that vocabulary);
      // - M (rows) whose best row tile is shorter than the array.
      int64_t m = extent[0], n = extent[1], k = extent[2];
      SmallVector<int64_t> padded(3, 0);
      if (n > cols && nova::largestDivisorAtMost(n, cols) * 4 <= cols)
        padded[1] = llvm::alignTo(n, cols);
      if (k > rows && nova::largestDivisorAtMost(k, rows) * 4 <= rows)
        padded[2] = llvm::alignTo(k, rows);
      if (m > rows && nova::largestDivisorAtMost(m, maxRows) < rows &&
          nova::largestDivisorAtMost(m, rows) * 4 <= rows)
        padded[0] = llvm::alignTo(m, rows);
      if (llvm::all_of(padded, [](int64_t p) { return p == 0; }))
        continue;
      Location loc = op.getLoc();
      rewriter.setInsertionPoint(op);
      // Zero rows of A, columns of B and lanes of K add nothing to C.
      SmallVector<Value> operands;
      for (auto [value, map] : llvm::zip(op->getOperands(), maps)) {
        Value v = value;
        for (auto [i, e] : llvm::enumerate(map.getResults()))
          if (auto d = dyn_cast<AffineDimExpr>(e); d && padded[d.getPosition()])
            v = padDim(rewriter, loc, v, i, padded[d.getPosition()]);
        operands.push_back(v);
      }
      auto wide = linalg::MatmulOp::create(
          rewriter, loc, TypeRange{operands[2].getType()},
          ValueRange{operands[0], operands[1]}, ValueRange{operands[2]});
      wide->setAttrs(op->getAttrs());
      Value result = wide.getResult(0);
      if (padded[0] || padded[1]) {
        SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
        SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(m),
                                           rewriter.getIndexAttr(n)};
        SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
        result = tensor::ExtractSliceOp::create(rewriter, loc, result, offsets,
                                                sizes, strides);
      }
      rewriter.replaceOp(op, result);
      ++numPadded;
    }
  }
};

} // namespace
