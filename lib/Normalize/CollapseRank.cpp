//===- CollapseRank.cpp - generics of rank > 4 to rank 4 --------*- C++ -*-===//
#include "nova/Normalize/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "nova-collapse-rank"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVACOLLAPSERANK
#include "nova/Normalize/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The most tile dimensions a descriptor holds (docs/isa.md 1.3).
constexpr unsigned kMaxTileRank = 4;

/// Groups of adjacent loops to merge, innermost first, until `op` has at most
/// 4 loops or no merge keeps every operand's dimensions adjacent (then more
/// than 4 groups come back). Empty when a map is not a projected permutation
/// (a broadcast's unit dimension indexed by 0), which upstream's adjacency
/// check does not take.
SmallVector<ReassociationIndices> plan(linalg::GenericOp op) {
  unsigned rank = op.getNumLoops();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!llvm::all_of(maps, [](AffineMap m) { return m.isProjectedPermutation(); }))
    return {};
  auto types = op.getIteratorTypesArray();
  SmallVector<ReassociationIndices> groups;
  for (unsigned i = 0; i < rank; ++i)
    groups.push_back({int64_t(i)});
  // Merge the innermost mergeable pair first: inner loops are contiguous in
  // row-major operands.
  bool merged = true;
  while (groups.size() > kMaxTileRank && merged) {
    merged = false;
    for (int g = (int)groups.size() - 2; g >= 0; --g) {
      ReassociationIndices candidate = groups[g];
      llvm::append_range(candidate, groups[g + 1]);
      if (types[candidate.front()] != types[candidate.back()])
        continue;
      if (!linalg::areDimSequencesPreserved(maps, {candidate}))
        continue;
      groups[g] = candidate;
      groups.erase(groups.begin() + g + 1);
      merged = true;
      break;
    }
  }
  return groups;
}

/// Merges the loops of `op` by `groups` (singletons are no merge).
FailureOr<linalg::GenericOp> collapse(IRRewriter &rewriter, linalg::GenericOp op,
                                      ArrayRef<ReassociationIndices> groups) {
  SmallVector<ReassociationIndices> folded;
  for (const ReassociationIndices &g : groups)
    if (g.size() > 1)
      folded.push_back(g);
  if (folded.empty())
    return op;
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::CollapseResult> result =
      linalg::collapseOpIterationDims(op, folded, rewriter);
  if (failed(result))
    return failure();
  rewriter.replaceOp(op, result->results);
  return cast<linalg::GenericOp>(result->collapsedOp.getOperation());
}

/// Drops the unit loops of `op` (and operands' unit dimensions); the generic
/// that is left, or `op` when nothing was dropped.
linalg::GenericOp dropUnitLoops(IRRewriter &rewriter, linalg::GenericOp op) {
  rewriter.setInsertionPoint(op);
  linalg::ControlDropUnitDims control;
  FailureOr<linalg::DropUnitDimsResult> dropped =
      linalg::dropUnitDims(rewriter, op, control);
  if (failed(dropped))
    return op;
  rewriter.replaceOp(op, dropped->replacements);
  return cast<linalg::GenericOp>(dropped->resultOp.getOperation());
}

/// The fallback when merging is not enough (an interleaved broadcast, a full
/// transpose, reductions between parallel loops): the outermost loops become
/// scf.for loops of step 1 (upstream TilingInterface tiling; reduction loops
/// too, each step accumulating into the output slice), and the generic in
/// their body, with those loops now unit, drops them.
LogicalResult tileOuterLoops(IRRewriter &rewriter, linalg::GenericOp op) {
  unsigned outer = op.getNumLoops() - kMaxTileRank;
  SmallVector<OpFoldResult> sizes(op.getNumLoops(), rewriter.getIndexAttr(0));
  for (unsigned i = 0; i < outer; ++i)
    sizes[i] = rewriter.getIndexAttr(1);
  scf::SCFTilingOptions options;
  options.setTileSizes(sizes);
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  auto body = dyn_cast<linalg::GenericOp>(tiled->tiledOps.back());
  if (!body)
    return failure();
  return success(dropUnitLoops(rewriter, body).getNumLoops() <= kMaxTileRank);
}

/// A gather (`tensor.extract` in a payload) from a tensor of rank above 4
/// reads a collapse of the tensor's leading dimensions instead, at the
/// row-major linear index of those dimensions; the gather's descriptor then
/// has 4 dimensions (adaptive 3-D pooling and trilinear interpolation read
/// [N, C, D, H, W] inputs this way).
LogicalResult collapseGatherSource(IRRewriter &rewriter, tensor::ExtractOp op) {
  auto type = cast<RankedTensorType>(op.getTensor().getType());
  unsigned rank = type.getRank(), lead = rank - kMaxTileRank + 1;
  if (!type.hasStaticShape())
    return failure();
  ReassociationIndices first;
  for (unsigned d = 0; d < lead; ++d)
    first.push_back(d);
  SmallVector<ReassociationIndices> groups{first};
  for (unsigned d = lead; d < rank; ++d)
    groups.push_back({d});
  Operation *owner = op->getParentOfType<linalg::LinalgOp>();
  rewriter.setInsertionPoint(owner ? owner : op.getOperation());
  Value collapsed = tensor::CollapseShapeOp::create(rewriter, op.getLoc(),
                                                    op.getTensor(), groups);
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value linear = op.getIndices()[0];
  for (unsigned d = 1; d < lead; ++d) {
    Value size = arith::ConstantIndexOp::create(rewriter, loc, type.getDimSize(d));
    Value scaled = arith::MulIOp::create(rewriter, loc, linear, size);
    linear = arith::AddIOp::create(rewriter, loc, scaled, op.getIndices()[d]);
  }
  SmallVector<Value> indices{linear};
  llvm::append_range(indices, op.getIndices().drop_front(lead));
  rewriter.replaceOpWithNewOp<tensor::ExtractOp>(op, collapsed, indices);
  return success();
}

struct CollapseRankPass
    : public nova::impl::NovaCollapseRankBase<CollapseRankPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Fills, transposes, broadcasts and copies above the tile rank (a grouped
    // convolution's 5-D init and its weight gradient's layout change)
    // become generics, collapsed below like any other.
    SmallVector<linalg::LinalgOp> named;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isa<linalg::FillOp, linalg::TransposeOp, linalg::BroadcastOp,
              linalg::CopyOp>(op) &&
          op.getNumLoops() > kMaxTileRank && op.hasPureTensorSemantics())
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      (void)linalg::generalizeNamedOp(rewriter, op);
    }
    SmallVector<tensor::ExtractOp> gathers;
    getOperation().walk([&](tensor::ExtractOp op) {
      if (op.getTensor().getType().getRank() > kMaxTileRank)
        gathers.push_back(op);
    });
    for (tensor::ExtractOp op : gathers)
      (void)collapseGatherSource(rewriter, op);
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.getNumLoops() > kMaxTileRank && op.hasPureTensorSemantics())
        ops.push_back(op);
    });
    for (linalg::GenericOp op : ops) {
      // Unit loops first (the backward of Llama's repeat_kv sums a
      // [1, 1, n_rep, S, D] tensor into a keep-dim [1, 1, 1, S, D]): dropping
      // them may be enough, and leaves projected maps for the merge below.
      if (llvm::is_contained(op.getStaticLoopRanges(), 1))
        op = dropUnitLoops(rewriter, op);
      if (op.getNumLoops() > kMaxTileRank) {
        SmallVector<ReassociationIndices> groups = plan(op);
        if (!groups.empty()) {
          FailureOr<linalg::GenericOp> merged = collapse(rewriter, op, groups);
          if (failed(merged))
            continue;
          op = *merged;
        }
      }
      if (op.getNumLoops() > kMaxTileRank && failed(tileOuterLoops(rewriter, op)))
        continue;
      ++numCollapsed;
    }
  }
};

} // namespace
