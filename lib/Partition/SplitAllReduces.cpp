//===- SplitAllReduces.cpp - the nova-split-all-reduces pass ----*- C++ -*-===//
//
// An all-reduce larger than a bucket is split along the first dimension of
// its input into chunks, each computed by its own tile of the producer
// (TilingInterface) and all-reduced as soon as it exists, so the transfer of
// one chunk flies while the next is computed. The last gradient of a
// backward pass (a token embedding's, 154 MB at GPT-2 size) otherwise has
// nothing left to hide behind.
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"
#include "nova/Utils/TensorBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVASPLITALLREDUCES
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// Elementwise producers are fused into each chunk: every loop parallel, so
/// disjoint chunks of the result read disjoint work and nothing is computed
/// twice.
bool isFusibleProducer(Operation *op) {
  auto linalgOp = dyn_cast_if_present<linalg::LinalgOp>(op);
  return linalgOp && linalgOp.hasPureTensorSemantics() &&
         linalgOp.getNumLoops() == linalgOp.getNumParallelLoops() &&
         op->getNumResults() == 1 && isa<TilingInterface>(op);
}

/// The `cmpi eq` of a one-hot's body: in the body itself, or (before
/// elementwise fusion) in the generic producing its `uitofp`'s input.
arith::CmpIOp oneHotCompare(linalg::GenericOp oneHot) {
  auto yield = cast<linalg::YieldOp>(oneHot.getBody()->getTerminator());
  auto toFloat = yield.getOperand(0).getDefiningOp<arith::UIToFPOp>();
  if (!toFloat)
    return nullptr;
  if (auto cmp = toFloat.getIn().getDefiningOp<arith::CmpIOp>())
    return cmp;
  auto arg = dyn_cast<BlockArgument>(toFloat.getIn());
  if (!arg || arg.getOwner() != oneHot.getBody() || oneHot.getNumDpsInputs() != 1)
    return nullptr;
  auto compare = oneHot.getDpsInputs()[0].getDefiningOp<linalg::GenericOp>();
  if (!compare)
    return nullptr;
  auto inner = cast<linalg::YieldOp>(compare.getBody()->getTerminator());
  return inner.getOperand(0).getDefiningOp<arith::CmpIOp>();
}

/// A matmul of a one-hot of ids read out of the rows' iota (the frontend's
/// bounds-checked embedding backward): nova-form-scatter turns it into a DMA
/// scatter-add after elementwise fusion, which row chunks of it would hide
/// from that pass (each chunk a [rows x tokens] matmul: 13.8 ms per
/// GPT-2-small data-parallel step, against reducing the scattered gradient
/// whole).
bool isOneHotMatmul(Operation *op) {
  auto matmul = dyn_cast_if_present<linalg::MatmulOp>(op);
  if (!matmul)
    return false;
  auto oneHot = matmul.getInputs()[0].getDefiningOp<linalg::GenericOp>();
  if (!oneHot || oneHot.getNumResults() != 1)
    return false;
  arith::CmpIOp cmp = oneHotCompare(oneHot);
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq)
    return false;
  auto compare = cmp->getParentOfType<linalg::GenericOp>();
  if (!compare || compare.getNumDpsInputs() != 2)
    return false;
  // One input is read out of the other with tensor.extract: the checked ids.
  Value a = compare.getDpsInputs()[0], b = compare.getDpsInputs()[1];
  for (auto [ids, rows] : {std::pair(a, b), std::pair(b, a)}) {
    auto read = ids.getDefiningOp<linalg::GenericOp>();
    if (!read || read.getNumResults() != 1)
      continue;
    auto yield = cast<linalg::YieldOp>(read.getBody()->getTerminator());
    auto extract = yield.getOperand(0).getDefiningOp<tensor::ExtractOp>();
    if (extract && extract.getTensor() == rows)
      return true;
  }
  return false;
}

struct SplitAllReducesPass
    : public nova::impl::NovaSplitAllReducesBase<SplitAllReducesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (chunkBytes <= 0)
      return;
    SmallVector<shard::AllReduceOp> candidates;
    getOperation().walk([&](shard::AllReduceOp op) {
      auto type = dyn_cast<RankedTensorType>(op.getInput().getType());
      if (type && type.hasStaticShape() && type.getRank() > 0 &&
          type == op.getResult().getType() && nova::tensorBytes(type) > chunkBytes &&
          type.getDimSize(0) > 1 && op.getInput().hasOneUse() &&
          op.getInput().getDefiningOp<TilingInterface>() &&
          op.getInput().getDefiningOp()->getNumResults() == 1 &&
          !isOneHotMatmul(op.getInput().getDefiningOp()))
        candidates.push_back(op);
    });
    for (shard::AllReduceOp op : candidates)
      if (succeeded(split(op)))
        ++numSplit;
  }

  /// Rows per chunk: the fewest chunks of at most `chunkBytes`, rounded up to
  /// whole 128-row tiles (the matrix unit's) where there are that many rows.
  int64_t rowsPerChunk(RankedTensorType type) const {
    int64_t rows = type.getDimSize(0);
    int64_t chunks = llvm::divideCeil(nova::tensorBytes(type), chunkBytes);
    int64_t perChunk = llvm::divideCeil(rows, chunks);
    if (rows >= 128 * chunks)
      perChunk = llvm::alignTo(perChunk, 128);
    return perChunk;
  }

  LogicalResult split(shard::AllReduceOp op) {
    auto type = cast<RankedTensorType>(op.getInput().getType());
    auto result = cast<OpResult>(op.getInput());
    auto producer = cast<TilingInterface>(result.getOwner());
    int64_t rows = type.getDimSize(0), perChunk = rowsPerChunk(type);
    if (perChunk >= rows)
      return failure();

    IRRewriter b(op.getContext());
    b.setInsertionPoint(op);
    Location loc = op.getLoc();
    SmallVector<Value> pieces;
    SmallVector<Operation *> tiles;
    for (int64_t row = 0; row < rows; row += perChunk) {
      SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes;
      offsets[0] = b.getIndexAttr(row);
      sizes.push_back(b.getIndexAttr(std::min(perChunk, rows - row)));
      for (int64_t d = 1; d < type.getRank(); ++d)
        sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      FailureOr<TilingResult> tile = producer.generateResultTileValue(
          b, result.getResultNumber(), offsets, sizes);
      if (failed(tile) || tile->tiledValues.size() != 1) {
        // Nothing uses the chunks so far: drop them (their tiles are dead
        // code for the canonicalizer) and reduce the tensor whole.
        for (Value piece : llvm::reverse(pieces))
          b.eraseOp(piece.getDefiningOp());
        return failure();
      }
      llvm::append_range(tiles, tile->tiledOps);
      Value chunk = tile->tiledValues.front();
      auto reduced = shard::AllReduceOp::create(
          b, loc, chunk.getType(), op.getGridAttr(), op.getGridAxesAttr(), chunk,
          op.getReductionAttr());
      pieces.push_back(reduced.getResult());
    }
    Value whole = tensor::ConcatOp::create(b, loc, /*dim=*/0, pieces);
    b.replaceOp(op, whole);
    if (producer->use_empty())
      b.eraseOp(producer);
    fuseProducers(b, tiles);
    return success();
  }

  /// Replaces the operand slices of `tiles` taken from an elementwise
  /// producer that only such slices use by the producer's own tiles, one
  /// level of producers at a time (a producer's slices all go before it does,
  /// which lets the producer of its operands qualify at the next level).
  void fuseProducers(IRRewriter &b, SmallVector<Operation *> tiles) {
    while (!tiles.empty()) {
      llvm::MapVector<Operation *, SmallVector<tensor::ExtractSliceOp>> slices;
      for (Operation *tile : tiles)
        for (Value operand : tile->getOperands())
          if (auto slice = operand.getDefiningOp<tensor::ExtractSliceOp>())
            if (Operation *producer = slice.getSource().getDefiningOp();
                isFusibleProducer(producer))
              slices[producer].push_back(slice);
      tiles.clear();
      for (auto &[producer, uses] : slices) {
        // A fill is cloned into each chunk even when something else reads it
        // too: a chunk's matmul then starts from a known zero accumulator
        // instead of reading zeros from memory.
        if (!isa<linalg::FillOp>(producer) &&
            !llvm::all_of(producer->getUsers(), [](Operation *user) {
              return isa<tensor::ExtractSliceOp>(user);
            }))
          continue;
        for (tensor::ExtractSliceOp slice : uses) {
          b.setInsertionPoint(slice);
          FailureOr<TilingResult> fused = tensor::replaceExtractSliceWithTiledProducer(
              b, slice, cast<OpResult>(slice.getSource()));
          if (failed(fused) || fused->tiledValues.size() != 1)
            continue;
          b.replaceOp(slice, fused->tiledValues.front());
          llvm::append_range(tiles, fused->tiledOps);
          ++numFused;
        }
        if (producer->use_empty())
          b.eraseOp(producer);
      }
    }
  }
};

} // namespace
