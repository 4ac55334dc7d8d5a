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

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  SmallVector<OpFoldResult> attrs;
  for (int64_t v : values)
    attrs.push_back(b.getIndexAttr(v));
  return attrs;
}

/// Zero-pads dimension `dim` of `v` to `size`: `v` inserted into a tensor
/// whose padding alone is zero-filled (it lives in HBM like any
/// function-level tensor; tensor.pad's own bufferization would not say
/// where). Filling the whole padded tensor first cost a vector pass and a DMA
/// over every element that `v` then overwrites (the 50257-word LM head's
/// [50304 x 768] weight: 77 MB of zeros for 47 rows).
Value padDim(OpBuilder &b, Location loc, Value v, int64_t dim, int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  Type element = type.getElementType();
  SmallVector<int64_t> shape(type.getShape()), strip(type.getShape());
  shape[dim] = size;
  strip[dim] = size - type.getDimSize(dim);
  // The zero-padded tensor is built before `v`'s producer, so that
  // nova-bufferize can have the producer compute `v` in place in it.
  OpBuilder::InsertionGuard guard(b);
  OpBuilder::InsertPoint use = b.saveInsertionPoint();
  if (Operation *producer = v.getDefiningOp();
      producer && producer->getBlock() == use.getBlock())
    b.setInsertionPoint(producer);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  Value wide = tensor::EmptyOp::create(b, loc, shape, element);
  Value stripEmpty = tensor::EmptyOp::create(b, loc, strip, element);
  Value zeros = linalg::FillOp::create(b, loc, zero, stripEmpty).getResult(0);
  SmallVector<int64_t> stripOffsets(type.getRank(), 0);
  stripOffsets[dim] = type.getDimSize(dim);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  wide = tensor::InsertSliceOp::create(b, loc, zeros, wide,
                                       indexAttrs(b, stripOffsets),
                                       indexAttrs(b, strip), strides);
  b.restoreInsertionPoint(use);
  return tensor::InsertSliceOp::create(
      b, loc, v, wide, indexAttrs(b, SmallVector<int64_t>(type.getRank(), 0)),
      indexAttrs(b, type.getShape()), strides);
}

/// The part [offset, offset + length) of `v` along the dimensions that `map`
/// indexes by loop `loop`; the whole of every other dimension.
Value sliceLoop(OpBuilder &b, Location loc, Value v, AffineMap map,
                unsigned loop, int64_t offset, int64_t length) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape());
  for (auto [i, e] : llvm::enumerate(map.getResults()))
    if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == loop) {
      offsets[i] = offset;
      sizes[i] = length;
    }
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, v, indexAttrs(b, offsets),
                                        indexAttrs(b, sizes), strides);
}

/// Whether feeding a contraction of `extent` to the array in chunks of its
/// best divisor up to `width` (what nova-tile does) leaves the array idle an
/// eighth of its passes more than whole widths and one ragged remainder
/// would: K = 12576 = 131 x 96 (a 50304-word vocabulary over 4 chips, the LM
/// head's dX = dY W) runs at 75 % of a 128-row array, 98 x 128 + 32 at 99 %.
/// Narrower extents (192 = 2 x 96, already 2 passes) are left alone.
bool wastesArray(int64_t extent, int64_t width) {
  if (extent <= width || extent % width == 0)
    return false;
  int64_t best = nova::largestDivisorAtMost(extent, width);
  int64_t passes = llvm::divideCeil(extent, width);
  return 8 * (extent - best * passes) > passes * width;
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
      // K cut in wide but not whole chunks (the local vocabulary of a
      // tensor-parallel LM head's dX): split as a sliver K is, below.
      if (llvm::all_of(padded, [](int64_t p) { return p == 0; }) && wastesArray(k, rows))
        padded[2] = llvm::alignTo(k, rows);
      if (llvm::all_of(padded, [](int64_t p) { return p == 0; }))
        continue;
      Location loc = op.getLoc();
      rewriter.setInsertionPoint(op);
      if (padded[2] && !padded[0] && !padded[1]) {
        // K alone: two matmuls over K = k0 + k1 (k0 a whole number of array
        // rows, k1 < rows), the second accumulating into the first, each
        // reading a slice of the unpadded operands. Padding K copied dY into
        // a zero-filled [2048 x 50304] tensor (the LM head's dX = dY W at
        // GPT-2's 50257 words: 206 MB of fill and 206 MB of copy a step).
        int64_t k0 = k / rows * rows;
        Value acc = op.getDpsInits()[0];
        for (auto [offset, length] :
             {std::pair<int64_t, int64_t>{0, k0}, {k0, k - k0}}) {
          auto part = linalg::MatmulOp::create(
              rewriter, loc, TypeRange{acc.getType()},
              ValueRange{sliceLoop(rewriter, loc, op.getDpsInputs()[0], maps[0],
                                   2, offset, length),
                         sliceLoop(rewriter, loc, op.getDpsInputs()[1], maps[1],
                                   2, offset, length)},
              ValueRange{acc});
          part->setAttrs(op->getAttrs());
          acc = part.getResult(0);
        }
        rewriter.replaceOp(op, acc);
        ++numPadded;
        continue;
      }
      // Zero rows of A, columns of B and lanes of K add nothing to C.
      SmallVector<Value> operands;
      for (auto [position, pair] :
           llvm::enumerate(llvm::zip(op->getOperands(), maps))) {
        auto [value, map] = pair;
        auto type = cast<RankedTensorType>(value.getType());
        SmallVector<int64_t> shape(type.getShape());
        bool grows = false;
        for (auto [i, e] : llvm::enumerate(map.getResults()))
          if (auto d = dyn_cast<AffineDimExpr>(e); d && padded[d.getPosition()]) {
            shape[i] = padded[d.getPosition()];
            grows = true;
          }
        // A destination that is a fill (the forward's zero accumulator) is
        // filled at the padded shape: padding the narrow fill copied a
        // [2048 x 50257] f32 tensor of zeros into a [2048 x 50304] one that
        // was zero-filled too (412 MB filled twice and copied once a step).
        if (auto fill = value.getDefiningOp<linalg::FillOp>();
            grows && position == 2 && fill) {
          Value empty = tensor::EmptyOp::create(rewriter, loc, shape,
                                                type.getElementType());
          operands.push_back(
              linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], empty)
                  .getResult(0));
          continue;
        }
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
