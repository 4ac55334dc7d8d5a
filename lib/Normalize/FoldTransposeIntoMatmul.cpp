//===- FoldTransposeIntoMatmul.cpp - transposed operands without a copy ---===//
//
// torch's x @ W.T (every nn.Linear's forward) and its weight gradient
// dY.T @ X reach linalg as a linalg.transpose feeding a linalg.matmul. The
// matmul reads either operand through a transposed indexing map instead:
// the tile's DMA brings the rows as they lie in HBM and the matrix unit
// reads the SRAM tile through a transposed view (docs/isa.md 2.3), so no
// transposed copy is written to HBM and read back.
//
//===----------------------------------------------------------------------===//
#include "nova/Normalize/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "nova-fold-transpose-into-matmul"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFOLDTRANSPOSEINTOMATMUL
#include "nova/Normalize/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// True if `map` reads a 2-D operand at two distinct loop dimensions (no
/// broadcast, no constant): the maps whose results may be swapped.
bool isTwoDimPermutation(AffineMap map) {
  if (map.getNumResults() != 2 || !map.isProjectedPermutation())
    return false;
  return llvm::all_of(map.getResults(),
                      [](AffineExpr e) { return isa<AffineDimExpr>(e); });
}

/// `map` with its two results swapped: the operand read transposed.
AffineMap swapResults(AffineMap map) {
  return AffineMap::get(map.getNumDims(), map.getNumSymbols(),
                        {map.getResult(1), map.getResult(0)},
                        map.getContext());
}

struct FoldTransposeIntoMatmulPass
    : public nova::impl::NovaFoldTransposeIntoMatmulBase<
          FoldTransposeIntoMatmulPass> {
  using Base::Base;

  /// Reads input `index` of `op` (0: A, 1: B) through its transpose's
  /// source, if that input is a 2-D [1, 0] transpose only matmuls read.
  /// Returns the new matmul, or null when nothing was folded.
  linalg::MatmulOp foldInput(IRRewriter &rewriter, linalg::MatmulOp op,
                             unsigned index) {
    auto transpose =
        op.getInputs()[index].getDefiningOp<linalg::TransposeOp>();
    if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
      return {};
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    if (!isTwoDimPermutation(maps[index]))
      return {};
    // Dead users do not count: nova-fold-ext-into-matmul leaves the
    // widening of a bf16 weight (x @ W.T under autocast) unused behind it.
    for (Operation *user : llvm::make_early_inc_range(transpose->getUsers()))
      if (user != op && isOpTriviallyDead(user))
        rewriter.eraseOp(user);
    if (!transpose->hasOneUse())
      return {};
    maps[index] = swapResults(maps[index]);
    SmallVector<Value> inputs(op.getInputs());
    inputs[index] = transpose.getInput();
    rewriter.setInsertionPoint(op);
    auto folded = linalg::MatmulOp::create(rewriter, op.getLoc(),
                                           op.getResultTypes(), inputs,
                                           op.getOutputs());
    SmallVector<Attribute> mapAttrs;
    for (AffineMap map : maps)
      mapAttrs.push_back(AffineMapAttr::get(map));
    folded.setIndexingMapsAttr(rewriter.getArrayAttr(mapAttrs));
    rewriter.replaceOp(op, folded.getResults());
    rewriter.eraseOp(transpose);
    ++numFolded;
    return folded;
  }

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    for (linalg::MatmulOp op : matmuls) {
      if (!op.hasPureTensorSemantics())
        continue;
      // The result must be C[m, n] for the lowering's two operand layouts.
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      if (!maps[2].isProjectedPermutation() ||
          maps[2] != AffineMap::getMultiDimIdentityMap(3, &getContext())
                         .getSubMap({0, 1}))
        continue;
      if (linalg::MatmulOp folded = foldInput(rewriter, op, 1))
        op = folded;
      foldInput(rewriter, op, 0);
    }
  }
};
} // namespace
