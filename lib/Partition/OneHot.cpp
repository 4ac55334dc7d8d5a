//===- OneHot.cpp - one-hot lookups the partition passes match --*- C++ -*-===//
#include "OneHot.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::nova {

bool isElementwise(linalg::GenericOp gen) {
  return gen.getNumLoops() == gen.getNumParallelLoops() &&
         llvm::all_of(gen.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isIdentity(); });
}

bool isElementwiseCast(linalg::GenericOp gen) {
  if (!gen || gen.getNumDpsInputs() != 1 || gen.getNumResults() != 1 || !isElementwise(gen))
    return false;
  Block *body = gen.getBody();
  if (!llvm::hasSingleElement(body->without_terminator()))
    return false;
  Operation &op = body->front();
  if (!isa<arith::ExtUIOp, arith::ExtSIOp, arith::UIToFPOp, arith::SIToFPOp,
           arith::TruncFOp, arith::ExtFOp>(op))
    return false;
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  return op.getOperand(0) == body->getArgument(0) && yield.getOperand(0) == op.getResult(0);
}

/// Whether `v` is an integer tensor [size] holding 0 .. size - 1.
static bool isIota(Value v, int64_t size) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() != 1 || type.getDimSize(0) != size ||
      !type.getElementType().isSignlessInteger())
    return false;
  auto gen = v.getDefiningOp<linalg::GenericOp>();
  if (!gen || gen.getNumDpsInputs() != 0 || gen.getNumResults() != 1)
    return false;
  auto yield = cast<linalg::YieldOp>(gen.getBody()->getTerminator());
  Value x = yield.getOperand(0);
  if (auto cast = x.getDefiningOp<arith::IndexCastOp>())
    x = cast.getIn();
  auto index = x.getDefiningOp<linalg::IndexOp>();
  return index && index.getDim() == 0;
}

OpOperand *oneHotIdsOperand(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return nullptr;
  int64_t classes = type.getShape().back();
  if (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>()) {
    SmallVector<ReassociationIndices> groups = collapse.getReassociationIndices();
    if (groups.back().size() != 1)
      return nullptr;
    v = collapse.getSrc();
  }
  auto gen = v.getDefiningOp<linalg::GenericOp>();
  while (gen && isElementwiseCast(gen)) {
    v = gen.getDpsInputs()[0];
    gen = v.getDefiningOp<linalg::GenericOp>();
  }
  if (!gen || gen.getNumResults() != 1 || gen.getNumLoops() != gen.getNumParallelLoops() ||
      !gen.getIndexingMapsArray().back().isIdentity())
    return nullptr;
  unsigned rank = gen.getNumLoops();
  Block *body = gen.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  // The compare, through the same 0/1-keeping casts fused into the body.
  Value yielded = yield.getOperand(0);
  while (Operation *def = yielded.getDefiningOp()) {
    if (def->getBlock() != body ||
        !isa<arith::ExtUIOp, arith::ExtSIOp, arith::UIToFPOp, arith::SIToFPOp,
             arith::TruncFOp, arith::ExtFOp>(def))
      break;
    yielded = def->getOperand(0);
  }
  auto cmp = yielded.getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq || cmp->getBlock() != body)
    return nullptr;
  MLIRContext *ctx = gen.getContext();
  // The class index: an iota read along the last loop, or that loop's index.
  auto isClass = [&](Value x) {
    if (auto c = x.getDefiningOp<arith::IndexCastOp>())
      x = c.getIn();
    if (auto index = x.getDefiningOp<linalg::IndexOp>())
      return index.getDim() == rank - 1;
    auto arg = dyn_cast<BlockArgument>(x);
    if (!arg || arg.getOwner() != body || arg.getArgNumber() >= gen.getNumDpsInputs())
      return false;
    OpOperand *operand = gen.getDpsInputOperand(arg.getArgNumber());
    AffineMap map = gen.getMatchingIndexingMap(operand);
    return map == AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, ctx)) &&
           isIota(operand->get(), classes);
  };
  // The ids: an input read along every loop but the last.
  auto idsOf = [&](Value x) -> OpOperand * {
    auto arg = dyn_cast<BlockArgument>(x);
    if (!arg || arg.getOwner() != body || arg.getArgNumber() >= gen.getNumDpsInputs() ||
        !arg.getType().isSignlessInteger())
      return nullptr;
    OpOperand *operand = gen.getDpsInputOperand(arg.getArgNumber());
    SmallVector<AffineExpr> leading;
    for (unsigned d = 0; d + 1 < rank; ++d)
      leading.push_back(getAffineDimExpr(d, ctx));
    if (gen.getMatchingIndexingMap(operand) != AffineMap::get(rank, 0, leading, ctx))
      return nullptr;
    return operand;
  };
  for (Operation &op : body->without_terminator())
    if (!isa<arith::CmpIOp, arith::IndexCastOp, linalg::IndexOp, arith::ExtUIOp,
             arith::ExtSIOp, arith::UIToFPOp, arith::SIToFPOp, arith::TruncFOp,
             arith::ExtFOp>(op))
      return nullptr;
  for (auto [x, y] : {std::pair(cmp.getLhs(), cmp.getRhs()),
                      std::pair(cmp.getRhs(), cmp.getLhs())})
    if (OpOperand *ids = idsOf(x); ids && isClass(y)) {
      auto idsType = cast<RankedTensorType>(ids->get().getType());
      if (idsType.getRank() + 1 != rank)
        return nullptr;
      return ids;
    }
  return nullptr;
}

} // namespace mlir::nova
