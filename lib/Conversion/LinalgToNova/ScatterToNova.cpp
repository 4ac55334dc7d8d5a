//===- ScatterToNova.cpp - scatter-add rows by indexed DMA -------*- C++ -*-===//
//
// nova.scatter_add on buffers, values and positions [R, C], becomes a loop
// over blocks of rows:
//
//   the block's positions DMAed into an SRAM tile (unless already there);
//   one accumulating nova.scatter of the block's values into `out`.
//
// The DMA engine does the adds (a read-modify-write of each run), so the
// values never visit the matrix or vector unit. Rows whose positions are
// consecutive (a table row, ids * C + 0..C-1) move as one run each.
// Scatters into one table are ordered by the synchronisation pass (each
// writes all of `out`), so repeated positions across blocks add up too.
//
//===----------------------------------------------------------------------===//
#include "Patterns.h"
#include "Staging.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

using namespace mlir;
using namespace mlir::nova;

namespace {

struct ScatterAddToNova : public OpRewritePattern<ScatterAddOp> {
  ScatterAddToNova(MLIRContext *ctx, TargetAttr target)
      : OpRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(ScatterAddOp op,
                                PatternRewriter &rewriter) const override {
    auto values = dyn_cast<MemRefType>(op.getValues().getType());
    auto positions = dyn_cast<MemRefType>(op.getPositions().getType());
    if (!values || !positions)
      return rewriter.notifyMatchFailure(op, "not bufferized");
    int64_t rows = values.getDimSize(0), cols = values.getDimSize(1);
    int64_t indexBytes =
        positions.getElementType().getIntOrFloatBitWidth() / 8;
    // An eighth of SRAM for the positions block: the rest stays free for
    // whatever runs beside it.
    int64_t budget = target.getSramBytes() / 8;
    int64_t block = std::clamp<int64_t>(budget / (cols * indexBytes), 1, rows);

    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    rewriter.setInsertionPoint(op);
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    auto rowsAt = [&](Value buffer, OpFoldResult row0, int64_t n) -> Value {
      SmallVector<OpFoldResult> offsets{row0, b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes{b.getIndexAttr(n), b.getIndexAttr(cols)};
      SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
      return memref::SubViewOp::create(b, loc, buffer, offsets, sizes, strides);
    };
    bool positionsOnChip =
        staging::isOnChip(op.getPositions()) &&
        getMemorySpace(positions) == MemorySpace::SRAM;
    auto emitBlock = [&](OpFoldResult row0, int64_t n, Value tile) {
      Value idx = rowsAt(op.getPositions(), row0, n);
      if (!positionsOnChip) {
        staging::copy(b, loc, idx, tile);
        idx = tile;
      }
      Value token = ScatterOp::create(b, loc, rowsAt(op.getValues(), row0, n),
                                      idx, op.getOut());
      WaitOp::create(b, loc, ValueRange{token});
    };
    auto tileFor = [&](int64_t n) -> Value {
      if (positionsOnChip)
        return Value();
      return staging::allocTile(b, loc, {n, cols},
                                positions.getElementType());
    };

    int64_t full = rows / block, tail = rows % block;
    if (full == 1) {
      emitBlock(b.getIndexAttr(0), block, tileFor(block));
    } else if (full > 1) {
      Value tile = tileFor(block);
      auto loop = scf::ForOp::create(b, loc, index(0), index(full), index(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value row0 = arith::MulIOp::create(b, loc, loop.getInductionVar(),
                                         index(block));
      emitBlock(row0, block, tile);
    }
    if (tail)
      emitBlock(b.getIndexAttr(full * block), tail, tileFor(tail));
    rewriter.eraseOp(op);
    return success();
  }

  TargetAttr target;
};

} // namespace

void mlir::nova::lowering::populateScatterToNovaPatterns(
    RewritePatternSet &patterns, TargetAttr target) {
  patterns.add<ScatterAddToNova>(patterns.getContext(), target);
}
