//===- MatmulToNova.cpp - contractions onto the matrix unit -----*- C++ -*-===//
//
// A matmul tile becomes: operands staged in SRAM, an accumulator tile filled
// with zero, an scf.for over K in chunks of the matrix unit's rows issuing
// `nova.matmul ... accumulate`, and a drain of the accumulator into the
// destination (a copy when the destination was just zero-filled, an add
// otherwise, since linalg.matmul accumulates into its init).
//
//===----------------------------------------------------------------------===//
#include "nova/Utils/Divisors.h"
#include "Patterns.h"
#include "Staging.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::nova;

namespace {

/// Which operands of a 2-D matmul are read transposed: the maps of
/// `C[m, n] += A[m, k] * B[k, n]` with A read as A[k, m] and/or B as B[n, k]
/// (nova-fold-transpose-into-matmul); none for any other maps.
struct OperandLayouts {
  bool transposedA = false, transposedB = false;
};
std::optional<OperandLayouts> matmulLayouts(linalg::MatmulOp matmul) {
  MLIRContext *ctx = matmul.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto map = [&](AffineExpr a, AffineExpr b) {
    return AffineMap::get(3, 0, {a, b}, ctx);
  };
  SmallVector<AffineMap> maps = matmul.getIndexingMapsArray();
  if (maps[2] != map(m, n))
    return std::nullopt;
  OperandLayouts layouts;
  if (maps[0] == map(k, m))
    layouts.transposedA = true;
  else if (maps[0] != map(m, k))
    return std::nullopt;
  if (maps[1] == map(n, k))
    layouts.transposedB = true;
  else if (maps[1] != map(k, n))
    return std::nullopt;
  return layouts;
}

/// A view of a staged 2-D tile with its dimensions swapped.
Value transposedView(OpBuilder &b, Location loc, Value tile) {
  AffineMap swap =
      AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, b.getContext());
  return memref::TransposeOp::create(b, loc, tile, AffineMapAttr::get(swap));
}

/// Drops the leading unit batch dimension of a tile ([1, M, K] -> [M, K]).
Value dropBatch(OpBuilder &b, Location loc, Value tile) {
  ArrayRef<int64_t> shape = staging::shapeOf(tile);
  return staging::reshapeTile(b, loc, tile, shape.drop_front());
}

struct MatmulToNova : public OpInterfaceRewritePattern<linalg::LinalgOp> {
  MatmulToNova(MLIRContext *ctx, TargetAttr target)
      : OpInterfaceRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(linalg::LinalgOp op,
                                PatternRewriter &rewriter) const override {
    bool batched = isa<linalg::BatchMatmulOp>(op);
    if (!isa<linalg::MatmulOp>(op) && !batched)
      return failure();
    if (!op.hasPureBufferSemantics())
      return failure();
    // The default indexing maps, or A and/or B read transposed (torch's
    // x @ W.T and dY.T @ X, see nova-fold-transpose-into-matmul).
    OperandLayouts layouts;
    if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation())) {
      std::optional<OperandLayouts> found = matmulLayouts(matmul);
      if (!found)
        return failure();
      layouts = *found;
    }
    if (auto bmm = dyn_cast<linalg::BatchMatmulOp>(op.getOperation()))
      if (!llvm::equal(bmm.getIndexingMapsArray(),
                       linalg::BatchMatmulOp::getDefaultIndexingMaps(
                           op->getContext())))
        return failure();
    Value lhsBuf = op.getDpsInputs()[0], rhsBuf = op.getDpsInputs()[1];
    Value outBuf = op.getDpsInits()[0];
    if (batched && (staging::shapeOf(lhsBuf)[0] != 1))
      return rewriter.notifyMatchFailure(op, "batch must be tiled to 1");

    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    payload::Scalar fillValue = payload::Scalar::ofFloat(1.0);
    Operation *fill = staging::precedingFill(op, outBuf, &fillValue);
    bool overwrite = fill && fillValue.is(0);
    if (overwrite)
      rewriter.eraseOp(fill);

    Value lhs = staging::stageIn(rewriter, loc, lhsBuf);
    Value rhs = staging::stageIn(rewriter, loc, rhsBuf);
    // A transposed operand (B = W^T with W [N, K] row-major for x @ W.T;
    // A = dY^T with dY [K, M] for a weight gradient) is staged as its rows
    // lie in HBM (whole runs; a transposing DMA would move one element per
    // HBM burst) and the matrix unit reads the SRAM tile through a
    // transposed view, which SRAM's element granule makes free.
    if (layouts.transposedA)
      lhs = transposedView(rewriter, loc, lhs);
    if (layouts.transposedB)
      rhs = transposedView(rewriter, loc, rhs);
    staging::StagedOutput out =
        staging::stageOut(rewriter, loc, outBuf, /*load=*/!overwrite);
    Value outTile = out.tile;
    if (batched) {
      lhs = dropBatch(rewriter, loc, lhs);
      rhs = dropBatch(rewriter, loc, rhs);
      outTile = dropBatch(rewriter, loc, outTile);
    }
    ArrayRef<int64_t> lhsShape = staging::shapeOf(lhs);
    int64_t m = lhsShape[0], k = lhsShape[1], n = staging::shapeOf(rhs)[1];
    Type f32 = rewriter.getF32Type();
    // Inputs of different float types are converted to the lhs's type.
    Type inType = cast<MemRefType>(lhs.getType()).getElementType();
    if (cast<MemRefType>(rhs.getType()).getElementType() != inType) {
      Value conv = staging::allocTile(rewriter, loc, {k, n}, inType);
      ElementwiseOp::create(rewriter, loc, ElementwiseKind::Copy,
                            ValueRange{rhs}, conv, nullptr);
      rhs = conv;
    }

    // The matrix unit writes at most its columns per matmul: a wider tile
    // (an output-stationary block, see nova-tile) is cut into column chunks
    // that share the staged operands, each with its own accumulator. A
    // chunk's drain is emitted after the next chunk's matmuls, so that the
    // vector unit drains one accumulator while the matrix unit fills the
    // other.
    int64_t cols = largestDivisorAtMost(n, target.getMatrixCols());
    int64_t chunk = largestDivisorAtMost(k, target.getMatrixRows());
    OpFoldResult zero = rewriter.getIndexAttr(0), one = rewriter.getIndexAttr(1);
    auto columns = [&](Value tile, int64_t rows, int64_t at) -> Value {
      if (cols == n)
        return tile;
      return memref::SubViewOp::create(
          rewriter, loc, tile,
          ArrayRef<OpFoldResult>{zero, rewriter.getIndexAttr(at)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(rows),
                                 rewriter.getIndexAttr(cols)},
          ArrayRef<OpFoldResult>{one, one});
    };
    auto multiply = [&](Value rhsCols) {
      Value acc =
          staging::allocTile(rewriter, loc, {m, cols}, f32, MemorySpace::ACC);
      auto chunkAt = [&](OpBuilder &b, OpFoldResult at) {
        Value lhsChunk = memref::SubViewOp::create(
            b, loc, lhs, ArrayRef<OpFoldResult>{zero, at},
            ArrayRef<OpFoldResult>{b.getIndexAttr(m), b.getIndexAttr(chunk)},
            ArrayRef<OpFoldResult>{one, one});
        Value rhsChunk = memref::SubViewOp::create(
            b, loc, rhsCols, ArrayRef<OpFoldResult>{at, zero},
            ArrayRef<OpFoldResult>{b.getIndexAttr(chunk), b.getIndexAttr(cols)},
            ArrayRef<OpFoldResult>{one, one});
        return std::make_pair(lhsChunk, rhsChunk);
      };
      if (chunk == k) {
        MatmulOp::create(rewriter, loc, lhs, rhsCols, acc, /*accumulate=*/false);
        return acc;
      }
      // The first chunk overwrites the accumulator (no zero fill on the
      // vector unit for the matrix unit to wait for); the rest accumulate.
      auto [lhs0, rhs0] = chunkAt(rewriter, zero);
      MatmulOp::create(rewriter, loc, lhs0, rhs0, acc, /*accumulate=*/false);
      Value lb = arith::ConstantIndexOp::create(rewriter, loc, chunk);
      Value ub = arith::ConstantIndexOp::create(rewriter, loc, k);
      Value step = arith::ConstantIndexOp::create(rewriter, loc, chunk);
      auto loop = scf::ForOp::create(rewriter, loc, lb, ub, step);
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(loop.getBody());
      auto [lhsChunk, rhsChunk] = chunkAt(rewriter, loop.getInductionVar());
      MatmulOp::create(rewriter, loc, lhsChunk, rhsChunk, acc,
                       /*accumulate=*/true);
      return acc;
    };
    // Drain an accumulator into its columns of the destination.
    Type outType = cast<MemRefType>(outTile.getType()).getElementType();
    auto drain = [&](Value acc, Value dest) {
      if (overwrite) {
        ElementwiseOp::create(rewriter, loc, ElementwiseKind::Copy,
                              ValueRange{acc}, dest, nullptr);
      } else if (outType == f32) {
        ElementwiseOp::create(rewriter, loc, ElementwiseKind::Add,
                              ValueRange{dest, acc}, dest, nullptr);
      } else {
        Value wide = staging::allocTile(rewriter, loc, {m, cols}, f32);
        ElementwiseOp::create(rewriter, loc, ElementwiseKind::Copy,
                              ValueRange{dest}, wide, nullptr);
        ElementwiseOp::create(rewriter, loc, ElementwiseKind::Add,
                              ValueRange{wide, acc}, wide, nullptr);
        ElementwiseOp::create(rewriter, loc, ElementwiseKind::Copy,
                              ValueRange{wide}, dest, nullptr);
      }
    };
    std::optional<std::pair<Value, int64_t>> pending;
    for (int64_t at = 0; at < n; at += cols) {
      Value acc = multiply(columns(rhs, k, at));
      if (pending)
        drain(pending->first, columns(outTile, m, pending->second));
      pending = std::make_pair(acc, at);
    }
    drain(pending->first, columns(outTile, m, pending->second));
    out.finish(rewriter, loc);
    rewriter.eraseOp(op);
    return success();
  }

  TargetAttr target;
};
} // namespace

std::string mlir::nova::lowering::whyMatmulNotLowerable(linalg::MatmulOp op) {
  if (matmulLayouts(op))
    return "";
  return "its indexing maps are not C[m, n] += A[m, k] * B[k, n] with A "
         "and B each possibly read transposed";
}

void mlir::nova::lowering::populateMatmulToNovaPatterns(
    RewritePatternSet &patterns, TargetAttr target) {
  patterns.add<MatmulToNova>(patterns.getContext(), target);
}
