//===- NamedOpsToNova.cpp - fill, transpose and copies ----------*- C++ -*-===//
#include "Patterns.h"
#include "Staging.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::nova;

namespace {

struct FillToNova : public OpRewritePattern<linalg::FillOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::FillOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return failure();
    auto cst = op.getInputs().front().getDefiningOp<arith::ConstantOp>();
    std::optional<payload::Scalar> value;
    if (cst)
      value = payload::scalarOf(cst.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "fill value is not a constant");
    Value out = op.getOutputs().front();
    // The tile's kind of immediate: an exact i64 for integer tiles.
    value = payload::convert(*value, cast<MemRefType>(out.getType()).getElementType());
    if (!value)
      return rewriter.notifyMatchFailure(op, "fill value does not convert to "
                                             "the output's element type");
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    // The accumulator can be filled in place; HBM goes through SRAM.
    staging::StagedOutput staged{out, out};
    if (getMemorySpace(cast<MemRefType>(out.getType())) != MemorySpace::ACC)
      staged = staging::stageOut(rewriter, loc, out, /*load=*/false);
    FillOp::create(rewriter, loc, payload::immediateAttr(rewriter, *value),
                   staged.tile);
    staged.finish(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

struct TransposeToNova : public OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Bytes of the HBM access granule on every shipped target
  /// (timing.hbm_burst_bytes, docs/isa.md 2.2): a DMA run at least this long
  /// costs no bandwidth beyond its bytes.
  static constexpr int64_t kHbmBurstBytes = 64;

  /// A permutation that keeps the innermost dimension in place moves whole
  /// rows: one DMA from a permuted view of the input in HBM (rows of at least
  /// one burst cost nothing extra) into the output replaces staging the
  /// input plus a vector-unit transpose (the head split of attention's q, k
  /// and v). Fails, creating nothing, for any other transpose.
  static LogicalResult rowsByDma(linalg::TransposeOp op,
                                 PatternRewriter &rewriter) {
    Value input = op.getInput(), init = op.getInit();
    auto inType = cast<MemRefType>(input.getType());
    ArrayRef<int64_t> perm = op.getPermutation();
    int64_t rank = inType.getRank();
    if (rank < 2 || perm.back() != rank - 1 || staging::isOnChip(input) ||
        getMemorySpace(cast<MemRefType>(init.getType())) == MemorySpace::ACC)
      return failure();
    int64_t elementBytes =
        std::max<int64_t>(1, inType.getElementTypeBitWidth() / 8);
    if (inType.getShape().back() * elementBytes < kHbmBurstBytes)
      return failure();
    Location loc = op.getLoc();
    Value view = memref::TransposeOp::create(
        rewriter, loc, input,
        AffineMapAttr::get(
            AffineMap::getPermutationMap(perm, rewriter.getContext())));
    // HBM to HBM directly, or into the on-chip output.
    staging::copy(rewriter, loc, view, init);
    return success();
  }
  LogicalResult matchAndRewrite(linalg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return failure();
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    if (succeeded(rowsByDma(op, rewriter))) {
      rewriter.eraseOp(op);
      return success();
    }
    Value in = staging::stageIn(rewriter, loc, op.getInput());
    staging::StagedOutput out =
        staging::stageOut(rewriter, loc, op.getInit(), /*load=*/false);
    TransposeOp::create(rewriter, loc, in, out.tile, op.getPermutationAttr());
    out.finish(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }
};

/// Groups of adjacent dimensions that are contiguous in both layouts, so
/// that a copy above the tile rank can run on collapsed views (a 5-D copy of
/// a strided slice that bufferization makes for a grouped convolution).
static SmallVector<ReassociationIndices> contiguousGroups(MemRefType a,
                                                          MemRefType b) {
  SmallVector<int64_t> sa, sb;
  int64_t oa, ob;
  if (failed(a.getStridesAndOffset(sa, oa)) ||
      failed(b.getStridesAndOffset(sb, ob)))
    return {};
  ArrayRef<int64_t> shape = a.getShape();
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    bool merge = !groups.empty() && !ShapedType::isDynamic(sa[d]) &&
                 !ShapedType::isDynamic(sb[d]) &&
                 sa[d] == sa[d + 1] * shape[d + 1] &&
                 sb[d] == sb[d + 1] * shape[d + 1];
    if (merge)
      groups.back().insert(groups.back().begin(), d);
    else
      groups.push_back({d});
  }
  std::reverse(groups.begin(), groups.end());
  return groups;
}

/// memref.copy / linalg.copy: a DMA (HBM side) or a vector copy (on chip).
template <typename CopyOpTy>
struct CopyToNova : public OpRewritePattern<CopyOpTy> {
  using OpRewritePattern<CopyOpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(CopyOpTy op,
                                PatternRewriter &rewriter) const override {
    Value from = op->getOperand(0), to = op->getOperand(1);
    auto fromType = dyn_cast<MemRefType>(from.getType());
    auto toType = dyn_cast<MemRefType>(to.getType());
    if (!fromType || !toType || !fromType.hasStaticShape() ||
        !toType.hasStaticShape())
      return failure();
    if (from == to) {
      rewriter.eraseOp(op);
      return success();
    }
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    constexpr int64_t kMaxTileRank = 4;
    if (fromType.getRank() > kMaxTileRank) {
      SmallVector<ReassociationIndices> groups =
          contiguousGroups(fromType, toType);
      if (groups.empty() || int64_t(groups.size()) > kMaxTileRank)
        return op->emitOpError()
               << "copies a rank-" << fromType.getRank()
               << " view whose layouts do not collapse to the tile "
                  "descriptor's "
               << kMaxTileRank << " dimensions";
      from = memref::CollapseShapeOp::create(rewriter, loc, from, groups);
      to = memref::CollapseShapeOp::create(rewriter, loc, to, groups);
      fromType = cast<MemRefType>(from.getType());
      toType = cast<MemRefType>(to.getType());
    }
    if (staging::isOnChip(from) != staging::isOnChip(to) ||
        !staging::isOnChip(from)) {
      if (getMemorySpace(fromType) == MemorySpace::ACC) {
        // The accumulator drains through SRAM.
        Value tile = staging::allocTile(rewriter, loc, fromType.getShape(),
                                        toType.getElementType());
        staging::copy(rewriter, loc, from, tile);
        from = tile;
      }
      staging::copy(rewriter, loc, from, to);
    } else {
      staging::copy(rewriter, loc, from, to);
    }
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void mlir::nova::lowering::populateNamedOpsToNovaPatterns(
    RewritePatternSet &patterns) {
  patterns.add<FillToNova, TransposeToNova, CopyToNova<memref::CopyOp>,
               CopyToNova<linalg::CopyOp>>(patterns.getContext());
}
