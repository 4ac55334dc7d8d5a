//===- FormScatter.cpp - one-hot matmul -> nova.scatter_add -----*- C++ -*-===//
//
// The frontend writes an accumulating index_put of rows (the embedding's
// backward, index_add) as a one-hot matmul, which Nova's normal form gives
// as
//
//   iota  = generic outs(tensor<Qxi64>) { index_cast(linalg.index 0) }
//   ids   = generic ins(raw) { tensor.extract iota[clamp(raw)] }  bounds check
//   A     = generic ins(ids [1, M] or [M], iota [Q, 1] or [Q])
//                   { uitofp(cmpi eq(id, q)) }               one-hot [Q, M]
//   C     = linalg.matmul ins(A, V : [Q, M], [M, D]) outs(B)    B + A V
//
// (reshapes of ids and iota in between; `linalg.index 0` in A's body may
// stand for the iota). C is B with row ids[m] of V added for every m, which
// is what nova.scatter_add does by indexed DMA, with the flat positions
// ids[m] * D + j: 2 M D bytes moved instead of 2 Q M D FLOPs.
//
// The ids must be read out of the iota itself (the frontend's bounds-checked
// gather): that proves them inside [0, Q), so a one-hot row that matches
// nothing (a write the program leaves out on purpose) never reaches a
// scatter, whose DMA would fault on it. Anything else keeps the matmul.
//
//===----------------------------------------------------------------------===//
#include "nova/Tile/Passes.h"

#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "nova-form-scatter"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAFORMSCATTER
#include "nova/Tile/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// `v` through expand/collapse_shape ops (they keep the row-major order of
/// the elements, so an iota stays an iota).
Value throughReshapes(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(def))
      v = e.getSrc();
    else if (auto c = dyn_cast<tensor::CollapseShapeOp>(def))
      v = c.getSrc();
    else
      break;
  }
  return v;
}

/// `v` through index and integer casts.
Value throughIntCasts(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<arith::IndexCastOp, arith::ExtSIOp, arith::IndexCastUIOp>(def))
      v = def->getOperand(0);
    else
      break;
  }
  return v;
}

/// Whether `v` is a 1-D integer tensor of `size` elements holding 0, 1, ..
/// size - 1 (through reshapes): a generic without inputs that yields its
/// `linalg.index 0`.
bool isIota(Value v, int64_t size) {
  v = throughReshapes(v);
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() != 1 || type.getDimSize(0) != size ||
      !type.getElementType().isSignlessInteger())
    return false;
  auto gen = v.getDefiningOp<linalg::GenericOp>();
  if (!gen || gen.getNumDpsInputs() != 0 || gen.getNumResults() != 1 ||
      !gen.getIndexingMapsArray()[0].isIdentity())
    return false;
  auto yield = cast<linalg::YieldOp>(gen.getBody()->getTerminator());
  auto index = throughIntCasts(yield.getOperand(0)).getDefiningOp<linalg::IndexOp>();
  return index && index.getDim() == 0;
}

/// Whether the integer tensor `v` holds only values of [0, size): it is
/// read elementwise out of an iota of `size` (the bounds-checked gather).
bool isCheckedIndex(Value v, int64_t size) {
  v = throughReshapes(v);
  auto gen = v.getDefiningOp<linalg::GenericOp>();
  if (!gen || gen.getNumResults() != 1)
    return false;
  auto yield = cast<linalg::YieldOp>(gen.getBody()->getTerminator());
  auto extract = yield.getOperand(0).getDefiningOp<tensor::ExtractOp>();
  return extract && isIota(extract.getTensor(), size);
}

/// The one-hot A[q, m] = (ids[m] == q) of a matmul's left operand, [Q, M]:
/// the input that holds the ids and its indexing map (which reads d1 only).
/// When the bounds-checked read of the ids out of the iota is fused into the
/// one-hot's body (as after partitioning), `ids` holds the raw ids and
/// `read` is that body's `tensor.extract` of the iota, with `readSlice` the
/// body ops it depends on (in order): they are recomputed for the positions.
struct OneHot {
  OpOperand *ids;
  AffineMap idsMap;
  tensor::ExtractOp read = nullptr;
  SmallVector<Operation *> readSlice;
};

/// Whether body value `v` of one-hot generic `gen` is `q`, the row index:
/// `linalg.index 0`, or an input read at (d0) out of an iota of `rows`.
bool isRowIndex(linalg::GenericOp gen, Value v, int64_t rows) {
  v = throughIntCasts(v);
  if (auto index = v.getDefiningOp<linalg::IndexOp>())
    return index.getDim() == 0;
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != gen.getBody())
    return false;
  OpOperand *operand = gen.getMatchingOpOperand(arg);
  if (!gen.isDpsInput(operand))
    return false;
  AffineMap map = gen.getMatchingIndexingMap(operand);
  // (d0, d1) -> (d0) or (d0, 0): element q of a [Q] or [Q, 1] tensor.
  auto type = cast<RankedTensorType>(operand->get().getType());
  if (map.getNumResults() == 0 || map.getResult(0) != getAffineDimExpr(0, gen.getContext()))
    return false;
  for (unsigned r = 1; r < map.getNumResults(); ++r)
    if (map.getResult(r) != getAffineConstantExpr(0, gen.getContext()) ||
        type.getDimSize(r) != 1)
      return false;
  return isIota(operand->get(), rows);
}

/// The ids operand when body value `v` is an input read through a map that
/// uses d1 only, with every other result a constant 0 on a unit dimension.
OpOperand *idsOperand(linalg::GenericOp gen, Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != gen.getBody())
    return nullptr;
  OpOperand *operand = gen.getMatchingOpOperand(arg);
  auto intType = dyn_cast<IntegerType>(arg.getType());
  if (!gen.isDpsInput(operand) || !intType || !intType.isSignless())
    return nullptr;
  AffineMap map = gen.getMatchingIndexingMap(operand);
  auto type = cast<RankedTensorType>(operand->get().getType());
  int ones = 0;
  for (unsigned r = 0; r < map.getNumResults(); ++r) {
    AffineExpr e = map.getResult(r);
    if (e == getAffineDimExpr(1, gen.getContext()))
      ++ones;
    else if (e != getAffineConstantExpr(0, gen.getContext()) || type.getDimSize(r) != 1)
      return nullptr;
  }
  return ones == 1 ? operand : nullptr;
}

/// The fused form of the bounds-checked read: body value `v` of `gen` is
/// `tensor.extract iota[i]` of an iota of `rows` (captured), with `i`
/// computed in the body from one integer input read through a map that uses
/// d1 only (and from constants). Fills `oneHot` and returns true then.
bool matchFusedRead(linalg::GenericOp gen, Value v, int64_t rows, OneHot &oneHot) {
  auto extract = v.getDefiningOp<tensor::ExtractOp>();
  if (!extract || extract->getBlock() != gen.getBody() || !isIota(extract.getTensor(), rows))
    return false;
  // The body ops the index depends on, and the one input they read.
  SetVector<Operation *> slice;
  OpOperand *raw = nullptr;
  SmallVector<Value> work(extract.getIndices().begin(), extract.getIndices().end());
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      if (arg.getOwner() != gen.getBody())
        return false;
      OpOperand *operand = idsOperand(gen, arg);
      if (!operand || (raw && raw != operand))
        return false;
      raw = operand;
      continue;
    }
    Operation *def = x.getDefiningOp();
    if (def->getBlock() != gen.getBody())
      continue; // defined above the generic: a constant or a captured value
    if (!isPure(def) || def->getNumRegions() || isa<linalg::IndexOp>(def))
      return false;
    if (slice.insert(def))
      work.append(def->operand_begin(), def->operand_end());
  }
  if (!raw)
    return false;
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  oneHot = OneHot{raw, gen.getMatchingIndexingMap(raw), extract, ordered};
  return true;
}

std::optional<OneHot> matchOneHot(Value a, int64_t rows) {
  auto gen = a.getDefiningOp<linalg::GenericOp>();
  if (!gen || gen.getNumResults() != 1 || gen.getNumLoops() != 2 ||
      gen.getNumParallelLoops() != 2 ||
      !gen.getIndexingMapsArray().back().isIdentity())
    return std::nullopt;
  // The body: yield tofloat(cmpi eq(x, y)), nothing else.
  Block *body = gen.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  Operation *toFloat = yield.getOperand(0).getDefiningOp();
  if (!toFloat || !isa<arith::UIToFPOp>(toFloat))
    return std::nullopt;
  auto cmp = toFloat->getOperand(0).getDefiningOp<arith::CmpIOp>();
  if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq)
    return std::nullopt;
  for (auto [x, y] : {std::pair(cmp.getLhs(), cmp.getRhs()),
                      std::pair(cmp.getRhs(), cmp.getLhs())}) {
    // The bounds-checked read fused into the body: nothing else may be
    // there but that read, the compare and the conversion.
    OneHot fused;
    if (isRowIndex(gen, y, rows) && matchFusedRead(gen, x, rows, fused)) {
      DenseSet<Operation *> allowed(fused.readSlice.begin(), fused.readSlice.end());
      allowed.insert(fused.read);
      for (Operation &op : body->without_terminator())
        if (!allowed.contains(&op) &&
            !isa<arith::UIToFPOp, arith::CmpIOp, arith::IndexCastOp, linalg::IndexOp>(op))
          return std::nullopt;
      return fused;
    }
  }
  for (Operation &op : body->without_terminator())
    if (!isa<arith::UIToFPOp, arith::CmpIOp, arith::IndexCastOp,
             linalg::IndexOp>(op))
      return std::nullopt;
  for (auto [x, y] : {std::pair(cmp.getLhs(), cmp.getRhs()),
                      std::pair(cmp.getRhs(), cmp.getLhs())}) {
    OpOperand *ids = idsOperand(gen, x);
    if (!ids || !isRowIndex(gen, y, rows))
      continue;
    // In range by construction, else the one-hot could drop a write.
    if (!isCheckedIndex(ids->get(), rows))
      return std::nullopt;
    return OneHot{ids, gen.getMatchingIndexingMap(ids)};
  }
  return std::nullopt;
}

/// positions[m, j] = ids[m] * cols + j, as an i64 [M, cols] generic that
/// reads the ids where the one-hot read them (d1 becomes m, d0 is unused).
Value buildPositions(OpBuilder &b, Location loc, const OneHot &oneHot,
                     int64_t rows, int64_t cols) {
  MLIRContext *ctx = b.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx);
  AffineMap idsMap = oneHot.idsMap.replaceDimsAndSymbols(
      {getAffineConstantExpr(0, ctx), m}, {}, 2, 0);
  Type i64 = b.getI64Type();
  Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{rows, cols}, i64);
  auto gen = linalg::GenericOp::create(
      b, loc, init.getType(), ValueRange{oneHot.ids->get()}, ValueRange{init},
      ArrayRef<AffineMap>{idsMap, b.getMultiDimIdentityMap(2)},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                    utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value id = args[0];
        if (oneHot.read) {
          // The fused bounds-checked read, recomputed from the raw id.
          IRMapping mapping;
          auto owner = cast<linalg::GenericOp>(oneHot.ids->getOwner());
          mapping.map(owner.getMatchingBlockArgument(oneHot.ids), args[0]);
          for (Operation *op : oneHot.readSlice)
            nb.clone(*op, mapping);
          id = nb.clone(*oneHot.read, mapping)->getResult(0);
        }
        if (id.getType() != i64)
          id = arith::ExtSIOp::create(nb, nloc, i64, id);
        Value stride = arith::ConstantIntOp::create(nb, nloc, i64, cols);
        Value row = arith::MulIOp::create(nb, nloc, id, stride);
        Value j = linalg::IndexOp::create(nb, nloc, 1);
        Value col = arith::IndexCastOp::create(nb, nloc, i64, j);
        linalg::YieldOp::create(nb, nloc, ValueRange{
            arith::AddIOp::create(nb, nloc, row, col).getResult()});
      });
  return gen.getResult(0);
}

/// A fresh copy of `init` when it is a fill shared with other users: the
/// scatter updates its destination in place, and bufferization would copy
/// a shared [Q, D] table otherwise.
Value ownDestination(OpBuilder &b, Location loc, Value init) {
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (!fill || init.hasOneUse())
    return init;
  auto type = cast<RankedTensorType>(init.getType());
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(),
                                        type.getElementType());
  return linalg::FillOp::create(b, loc, fill.getInputs(), ValueRange{empty})
      .getResult(0);
}

/// The indexing maps of C[m, n] += A[m, k] * B[n, k] (B read transposed).
SmallVector<AffineMap> transposedBMaps(MLIRContext *ctx) {
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  return {AffineMap::get(3, 0, {m, k}, ctx), AffineMap::get(3, 0, {n, k}, ctx),
          AffineMap::get(3, 0, {m, n}, ctx)};
}

struct FormScatterPass
    : public nova::impl::NovaFormScatterBase<FormScatterPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> candidates;
    getOperation().walk([&](linalg::MatmulOp op) { candidates.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::MatmulOp matmul : candidates) {
      if (!matmul.hasPureTensorSemantics())
        continue;
      // The values as [M, D], or as [D, M] with the matmul reading them
      // transposed (nova-fold-transpose-into-matmul's form).
      bool transposedValues = false;
      if (matmul.getIndexingMapsArray() != matmul.getDefaultIndexingMaps(&getContext())) {
        if (matmul.getIndexingMapsArray() != transposedBMaps(&getContext()))
          continue;
        transposedValues = true;
      }
      Value a = matmul.getInputs()[0], v = matmul.getInputs()[1];
      Value init = matmul.getOutputs()[0];
      auto aType = cast<RankedTensorType>(a.getType());
      auto vType = cast<RankedTensorType>(v.getType());
      auto cType = cast<RankedTensorType>(init.getType());
      if (!aType.hasStaticShape() || !vType.hasStaticShape() ||
          vType.getElementType() != cType.getElementType() ||
          !(cType.getElementType().isF32() || cType.getElementType().isBF16()))
        continue;
      int64_t rows = aType.getDimSize(0), m = aType.getDimSize(1),
              cols = cType.getDimSize(1);
      std::optional<OneHot> oneHot = matchOneHot(a, rows);
      if (!oneHot)
        continue;
      rewriter.setInsertionPoint(matmul);
      Location loc = matmul.getLoc();
      if (transposedValues) {
        // The rows DMA'd must be rows in memory: [M, D] (a copy of M D
        // elements, against the table's Q D).
        Value empty = tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{m, cols},
                                              vType.getElementType());
        v = linalg::TransposeOp::create(rewriter, loc, v, empty,
                                        ArrayRef<int64_t>{1, 0})
                .getResult()[0];
      }
      Value positions = buildPositions(rewriter, loc, *oneHot, m, cols);
      Value out = ownDestination(rewriter, loc, init);
      auto scatter = nova::ScatterAddOp::create(
          rewriter, loc, TypeRange{cType}, v, positions, out);
      rewriter.replaceOp(matmul, scatter.getResult());
      if (Operation *oneHotOp = a.getDefiningOp(); oneHotOp->use_empty())
        rewriter.eraseOp(oneHotOp);
      ++numFormed;
    }
  }
};
} // namespace
