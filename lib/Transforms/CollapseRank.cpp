//===- CollapseRank.cpp - generics of rank > 4 to rank 4 --------*- C++ -*-===//
#include "nova/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "nova-collapse-rank"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVACOLLAPSERANK
#include "nova/Transforms/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The most tile dimensions a descriptor holds (docs/isa.md 1.3).
constexpr unsigned kMaxTileRank = 4;

/// Groups of adjacent loops to merge so that `op` has at most 4 loops, or
/// nothing when no such merge keeps every operand's dimensions adjacent.
SmallVector<ReassociationIndices> plan(linalg::GenericOp op) {
  unsigned rank = op.getNumLoops();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  // Upstream's adjacency check takes projected permutations only.
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
  if (groups.size() > kMaxTileRank)
    return {};
  SmallVector<ReassociationIndices> folded;
  for (ReassociationIndices &g : groups)
    if (g.size() > 1)
      folded.push_back(g);
  return folded;
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
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.getNumLoops() > kMaxTileRank && op.hasPureTensorSemantics())
        ops.push_back(op);
    });
    for (linalg::GenericOp op : ops) {
      // Unit loops first (the backward of Llama's repeat_kv sums a
      // [1, 1, n_rep, S, D] tensor into a keep-dim [1, 1, 1, S, D]): dropping
      // them may be enough, and leaves projected maps for the merge below.
      if (llvm::is_contained(op.getStaticLoopRanges(), 1)) {
        rewriter.setInsertionPoint(op);
        linalg::ControlDropUnitDims control;
        FailureOr<linalg::DropUnitDimsResult> dropped =
            linalg::dropUnitDims(rewriter, op, control);
        if (succeeded(dropped)) {
          rewriter.replaceOp(op, dropped->replacements);
          op = cast<linalg::GenericOp>(dropped->resultOp.getOperation());
          if (op.getNumLoops() <= kMaxTileRank) {
            ++numCollapsed;
            continue;
          }
        }
      }
      SmallVector<ReassociationIndices> folded = plan(op);
      if (folded.empty())
        continue;
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::CollapseResult> result =
          linalg::collapseOpIterationDims(op, folded, rewriter);
      if (failed(result))
        continue;
      rewriter.replaceOp(op, result->results);
      ++numCollapsed;
    }
  }
};

} // namespace
