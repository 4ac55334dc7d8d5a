//===- LocalizeOneHotLookups.cpp - split-vocabulary one-hots ----*- C++ -*-===//
//
// nova-localize-one-hot-lookups: after shard-partition, a one-hot product
// over a vocabulary split by rows (the vocabulary-parallel embedding's
// forward and backward) becomes each chip's masked lookup of its own rows
// (Passes.td has the before/after). The one-hot of the whole vocabulary,
// which every chip built, is then dead.
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"

#include "OneHot.h"

#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "nova-localize-one-hot-lookups"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVALOCALIZEONEHOTLOOKUPS
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using mlir::nova::isElementwise;
using mlir::nova::oneHotIds;

namespace {

/// `ids` as a 1-D tensor (its dimensions collapsed into one).
Value flatIds(OpBuilder &b, Location loc, Value ids) {
  auto type = cast<RankedTensorType>(ids.getType());
  if (type.getRank() == 1)
    return ids;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return tensor::CollapseShapeOp::create(b, loc, ids, ArrayRef<ReassociationIndices>{all});
}

/// The chip's first row of a slice over grid axes `axes` (major first) that
/// leaves it `rows` rows: its block along the axes times `rows`.
Value firstRow(OpBuilder &b, Location loc, shard::GridOp grid, ArrayRef<int16_t> axes,
               int64_t rows) {
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value id = nova::ChipIdOp::create(b, loc, b.getIndexType());
  ArrayRef<int64_t> shape = grid.getShape();
  auto coordinate = [&](int64_t axis) -> Value {
    int64_t stride = 1;
    for (int64_t later : shape.drop_front(axis + 1))
      stride *= later;
    return arith::RemUIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, id, constant(stride)), constant(shape[axis]));
  };
  Value block = coordinate(axes.front());
  for (int16_t axis : axes.drop_front())
    block = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, block, constant(shape[axis])),
        coordinate(axis));
  return arith::MulIOp::create(b, loc, block, constant(rows));
}

/// In a body being built: the id's row on this chip (`id - off`, index),
/// whether it lies in [0, rows), and that row clamped to 0 outside.
struct LocalRow {
  Value ok, row;
};
LocalRow localRow(OpBuilder &b, Location loc, Value id, Value off, int64_t rows) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
  Value l = arith::SubIOp::create(b, loc, i, off);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value ge = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, l, zero);
  Value lt = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, l,
                                   arith::ConstantIndexOp::create(b, loc, rows));
  Value ok = arith::AndIOp::create(b, loc, ge, lt);
  return {ok, arith::SelectOp::create(b, loc, ok, l, zero)};
}

/// `x` converted to float type `to` (x is a float).
Value convertFloat(OpBuilder &b, Location loc, Value x, Type to) {
  Type from = x.getType();
  if (from == to)
    return x;
  if (cast<FloatType>(from).getWidth() < cast<FloatType>(to).getWidth())
    return arith::ExtFOp::create(b, loc, to, x);
  return arith::TruncFOp::create(b, loc, to, x);
}

bool isZeroFill(Value v) {
  auto fill = v.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Value x = fill.getInputs()[0];
  return matchPattern(x, m_AnyZeroFloat()) || matchPattern(x, m_Zero());
}

bool isDefaultMatmul(linalg::MatmulOp mm) {
  return mm.hasPureTensorSemantics() &&
         mm.getIndexingMapsArray() == mm.getDefaultIndexingMaps(mm.getContext());
}

/// The loop of elementwise generic `gen` that its result's dimension `dim`
/// is, and whether each input is a projection (distinct loops, in order or
/// not): the form whose slice along `dim` is the same generic on slices.
bool isSliceableGeneric(linalg::GenericOp gen) {
  if (gen.getNumResults() != 1 || gen.getNumLoops() != gen.getNumParallelLoops() ||
      !gen.getIndexingMapsArray().back().isIdentity())
    return false;
  for (OpOperand *in : gen.getDpsInputOperands())
    if (!gen.getMatchingIndexingMap(in).isProjectedPermutation())
      return false;
  // No lookups in the body (a gather's rows are not its loops').
  for (Operation &op : gen.getBody()->without_terminator())
    if (!isPure(&op) || op.getNumRegions() || isa<tensor::ExtractOp>(op))
      return false;
  return true;
}

/// The position of loop `loop` among `map`'s results, if it is one.
std::optional<unsigned> resultOf(AffineMap map, unsigned loop) {
  for (unsigned r = 0; r < map.getNumResults(); ++r)
    if (auto d = dyn_cast<AffineDimExpr>(map.getResult(r)); d && d.getPosition() == loop)
      return r;
  return std::nullopt;
}

/// Whether `v`'s dimension `dim` depends only on iotas: `v` is a sliceable
/// generic whose inputs that index that loop are such values too, down to
/// generics without inputs (an iota, `linalg.index` of the loop). A one-hot
/// of labels over the vocabulary, and products of it with row factors.
bool builtFromIotas(Value v, unsigned dim, int depth = 0) {
  auto gen = v.getDefiningOp<linalg::GenericOp>();
  if (!gen || depth > 8 || !isSliceableGeneric(gen))
    return false;
  for (OpOperand *in : gen.getDpsInputOperands())
    if (std::optional<unsigned> r = resultOf(gen.getMatchingIndexingMap(in), dim))
      if (!builtFromIotas(in->get(), *r, depth + 1))
        return false;
  return true;
}

/// `v` (builtFromIotas along `dim`) computed on this chip's `local`
/// entries of `dim` only, from `off` on: each generic again on its inputs'
/// slices, `linalg.index` of the sliced loop counting from `off`.
Value buildSlice(OpBuilder &b, Location loc, Value v, unsigned dim, int64_t local,
                 Value off) {
  auto gen = v.getDefiningOp<linalg::GenericOp>();
  SmallVector<Value> inputs;
  for (OpOperand *in : gen.getDpsInputOperands()) {
    std::optional<unsigned> r = resultOf(gen.getMatchingIndexingMap(in), dim);
    inputs.push_back(r ? buildSlice(b, loc, in->get(), *r, local, off) : in->get());
  }
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = local;
  auto sliced = RankedTensorType::get(shape, type.getElementType());
  Value init = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
  auto clone = linalg::GenericOp::create(b, loc, TypeRange{sliced}, inputs, ValueRange{init},
                                         gen.getIndexingMapsArray(),
                                         gen.getIteratorTypesArray());
  IRMapping mapping;
  gen.getRegion().cloneInto(&clone.getRegion(), mapping);
  SmallVector<linalg::IndexOp> indices;
  clone.getBody()->walk([&](linalg::IndexOp index) {
    if (index.getDim() == dim)
      indices.push_back(index);
  });
  for (linalg::IndexOp index : indices) {
    OpBuilder nb(index->getBlock(), std::next(index->getIterator()));
    auto shifted = arith::AddIOp::create(nb, index.getLoc(), index.getResult(), off);
    index.getResult().replaceAllUsesExcept(shifted, shifted);
  }
  return clone.getResult(0);
}

struct LocalizeOneHotLookupsPass
    : public nova::impl::NovaLocalizeOneHotLookupsBase<LocalizeOneHotLookupsPass> {
  using Base::Base;

  /// matmul(all_slice(one_hot(ids), dim 1), W) -> the masked gather of W.
  LogicalResult lookup(shard::AllSliceOp slice, shard::GridOp grid, IRRewriter &rewriter) {
    if (slice.getSliceAxis().getSExtValue() != 1 || !slice->hasOneUse())
      return failure();
    auto mm = dyn_cast<linalg::MatmulOp>(*slice->getUsers().begin());
    if (!mm || !isDefaultMatmul(mm) || mm.getInputs()[0] != slice.getResult() ||
        !isZeroFill(mm.getOutputs()[0]))
      return failure();
    Value ids = oneHotIds(slice.getInput());
    if (!ids)
      return failure();
    Value table = mm.getInputs()[1];
    auto tableType = cast<RankedTensorType>(table.getType());
    auto outType = cast<RankedTensorType>(mm.getResultTypes()[0]);
    int64_t rows = tableType.getDimSize(0);
    if (!isa<FloatType>(tableType.getElementType()) ||
        !isa<FloatType>(outType.getElementType()) || !outType.hasStaticShape() ||
        ShapedType::isDynamic(rows))
      return failure();
    rewriter.setInsertionPoint(mm);
    Location loc = mm.getLoc();
    Value off = firstRow(rewriter, loc, grid, slice.getGridAxes(), rows);
    Value flat = flatIds(rewriter, loc, ids);
    MLIRContext *ctx = rewriter.getContext();
    AffineExpr m = getAffineDimExpr(0, ctx);
    Type elt = outType.getElementType();
    Value init = tensor::EmptyOp::create(rewriter, loc, outType.getShape(), elt);
    auto gather = linalg::GenericOp::create(
        rewriter, loc, TypeRange{outType}, ValueRange{flat}, ValueRange{init},
        ArrayRef<AffineMap>{AffineMap::get(2, 0, m), rewriter.getMultiDimIdentityMap(2)},
        ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                      utils::IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) {
          LocalRow local = localRow(b, l, args[0], off, rows);
          Value j = linalg::IndexOp::create(b, l, 1);
          Value x = tensor::ExtractOp::create(b, l, table, ValueRange{local.row, j});
          x = convertFloat(b, l, x, elt);
          Value zero = arith::ConstantOp::create(b, l, elt, b.getZeroAttr(elt));
          linalg::YieldOp::create(
              b, l, ValueRange{arith::SelectOp::create(b, l, local.ok, x, zero).getResult()});
        });
    rewriter.replaceOp(mm, gather.getResults());
    rewriter.eraseOp(slice);
    ++numLookups;
    return success();
  }

  /// all_slice(casts(all_reduce(matmul(transpose(one_hot(ids)), dY))), dim 0)
  /// -> the same chain on the chip's rows, one_hot(clamp(ids - off)) @ mask(dY).
  LogicalResult gradient(shard::AllSliceOp slice, shard::GridOp grid, IRRewriter &rewriter) {
    if (slice.getSliceAxis().getSExtValue() != 0)
      return failure();
    auto sliceType = cast<RankedTensorType>(slice.getResult().getType());
    if (sliceType.getRank() != 2 || !sliceType.hasStaticShape())
      return failure();
    int64_t rows = sliceType.getDimSize(0), cols = sliceType.getDimSize(1);
    // The elementwise casts between the all-reduce and the slice, last first.
    SmallVector<linalg::GenericOp> casts;
    Value v = slice.getInput();
    while (auto gen = v.getDefiningOp<linalg::GenericOp>()) {
      if (!isElementwise(gen) || gen.getNumDpsInputs() != 1 || gen.getNumResults() != 1 ||
          !v.hasOneUse())
        return failure();
      casts.push_back(gen);
      v = gen.getDpsInputs()[0];
    }
    // The data-parallel all-reduce, when there is one.
    auto reduce = v.getDefiningOp<shard::AllReduceOp>();
    if (reduce) {
      if (!v.hasOneUse() || reduce.getReduction() != shard::ReductionKind::Sum)
        return failure();
      for (int16_t axis : slice.getGridAxes())
        if (llvm::is_contained(reduce.getGridAxes(), axis))
          return failure();
      v = reduce.getInput();
    }
    auto mm = v.getDefiningOp<linalg::MatmulOp>();
    if (!mm || !isDefaultMatmul(mm) || !mm->hasOneUse() || !isZeroFill(mm.getOutputs()[0]))
      return failure();
    auto transpose = mm.getInputs()[0].getDefiningOp<linalg::TransposeOp>();
    if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
      return failure();
    Value ids = oneHotIds(transpose.getInput());
    if (!ids)
      return failure();
    Value grad = mm.getInputs()[1];
    auto gradType = cast<RankedTensorType>(grad.getType());
    auto accType = cast<RankedTensorType>(mm.getResultTypes()[0]);
    Type acc = accType.getElementType();
    if (!isa<FloatType>(acc) || !isa<FloatType>(gradType.getElementType()) ||
        !gradType.hasStaticShape() || gradType.getDimSize(1) != cols)
      return failure();
    int64_t tokens = gradType.getDimSize(0);

    rewriter.setInsertionPoint(slice);
    Location loc = mm.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value off = firstRow(rewriter, loc, grid, slice.getGridAxes(), rows);
    Value flat = flatIds(rewriter, loc, ids);
    Type i64 = rewriter.getI64Type();
    auto parallel = [](unsigned n) {
      return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
    };
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx);
    // An iota of the chip's rows, and the ids read out of it at their
    // clamped local rows: in [0, rows) by construction (nova-form-scatter's
    // bounds-checked form).
    auto iota = linalg::GenericOp::create(
        rewriter, loc, TypeRange{RankedTensorType::get({rows}, i64)}, ValueRange{},
        ValueRange{tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{rows}, i64)},
        ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(1)}, parallel(1),
        [&](OpBuilder &b, Location l, ValueRange) {
          Value i = linalg::IndexOp::create(b, l, 0);
          linalg::YieldOp::create(b, l, ValueRange{
              arith::IndexCastOp::create(b, l, i64, i).getResult()});
        });
    Value iotaV = iota.getResult(0);
    auto checked = linalg::GenericOp::create(
        rewriter, loc, TypeRange{RankedTensorType::get({tokens}, i64)}, ValueRange{flat},
        ValueRange{tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{tokens}, i64)},
        ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(1),
                            rewriter.getMultiDimIdentityMap(1)},
        parallel(1), [&](OpBuilder &b, Location l, ValueRange args) {
          LocalRow local = localRow(b, l, args[0], off, rows);
          linalg::YieldOp::create(b, l, ValueRange{
              tensor::ExtractOp::create(b, l, iotaV, ValueRange{local.row}).getResult()});
        });
    // The gradient rows of tokens outside the chip's range zeroed, in the
    // accumulator's type.
    auto masked = linalg::GenericOp::create(
        rewriter, loc, TypeRange{RankedTensorType::get({tokens, cols}, acc)},
        ValueRange{flat, grad},
        ValueRange{tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{tokens, cols}, acc)},
        ArrayRef<AffineMap>{AffineMap::get(2, 0, d0), rewriter.getMultiDimIdentityMap(2),
                            rewriter.getMultiDimIdentityMap(2)},
        parallel(2), [&](OpBuilder &b, Location l, ValueRange args) {
          LocalRow local = localRow(b, l, args[0], off, rows);
          Value x = convertFloat(b, l, args[1], acc);
          Value zero = arith::ConstantOp::create(b, l, acc, b.getZeroAttr(acc));
          linalg::YieldOp::create(
              b, l, ValueRange{arith::SelectOp::create(b, l, local.ok, x, zero).getResult()});
        });
    // one_hot[q, m] = (checked[m] == q), [rows, tokens].
    auto oneHot = linalg::GenericOp::create(
        rewriter, loc, TypeRange{RankedTensorType::get({rows, tokens}, acc)},
        ValueRange{checked.getResult(0), iotaV},
        ValueRange{tensor::EmptyOp::create(rewriter, loc, ArrayRef<int64_t>{rows, tokens}, acc)},
        ArrayRef<AffineMap>{AffineMap::get(2, 0, d1), AffineMap::get(2, 0, d0),
                            rewriter.getMultiDimIdentityMap(2)},
        parallel(2), [&](OpBuilder &b, Location l, ValueRange args) {
          Value eq = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, args[0], args[1]);
          linalg::YieldOp::create(b, l, ValueRange{
              arith::UIToFPOp::create(b, l, acc, eq).getResult()});
        });
    auto localAcc = RankedTensorType::get({rows, cols}, acc);
    Value zero = linalg::FillOp::create(
                     rewriter, loc,
                     ValueRange{arith::ConstantOp::create(rewriter, loc, acc,
                                                          rewriter.getZeroAttr(acc))},
                     ValueRange{tensor::EmptyOp::create(rewriter, loc, localAcc.getShape(), acc)})
                     .getResult(0);
    Value sum = linalg::MatmulOp::create(rewriter, loc, TypeRange{localAcc},
                                         ValueRange{oneHot.getResult(0), masked.getResult(0)},
                                         ValueRange{zero})
                    .getResult(0);
    // The all-reduce and the casts, on the chip's rows.
    Value current = sum;
    if (reduce) {
      IRMapping mapping;
      mapping.map(reduce.getInput(), sum);
      Operation *newReduce = rewriter.clone(*reduce, mapping);
      newReduce->getResult(0).setType(localAcc);
      current = newReduce->getResult(0);
    }
    for (linalg::GenericOp gen : llvm::reverse(casts)) {
      auto type = cast<RankedTensorType>(gen.getResultTypes()[0]);
      auto local = RankedTensorType::get({rows, cols}, type.getElementType());
      Value init = tensor::EmptyOp::create(rewriter, loc, local.getShape(),
                                           local.getElementType());
      IRMapping m;
      m.map(gen.getDpsInputs()[0], current);
      m.map(gen.getDpsInits()[0], init);
      Operation *clone = rewriter.clone(*gen, m);
      clone->getResult(0).setType(local);
      current = clone->getResult(0);
    }
    if (current.getType() != slice.getResult().getType())
      return failure(); // cannot happen: the slice keeps the element type
    rewriter.replaceOp(slice, current);
    for (linalg::GenericOp gen : casts)
      rewriter.eraseOp(gen);
    if (reduce)
      rewriter.eraseOp(reduce);
    rewriter.eraseOp(mm);
    ++numGradients;
    return success();
  }

  /// all_slice(v) of a `v` built from iotas along the sliced dimension (a
  /// one-hot of labels, times row factors) -> `v` built on the chip's slice.
  LogicalResult fromIotas(shard::AllSliceOp slice, shard::GridOp grid, IRRewriter &rewriter) {
    unsigned dim = slice.getSliceAxis().getZExtValue();
    auto type = cast<RankedTensorType>(slice.getResult().getType());
    if (!type.hasStaticShape() || !builtFromIotas(slice.getInput(), dim))
      return failure();
    rewriter.setInsertionPoint(slice);
    Location loc = slice.getLoc();
    int64_t local = type.getDimSize(dim);
    Value off = firstRow(rewriter, loc, grid, slice.getGridAxes(), local);
    rewriter.replaceOp(slice, buildSlice(rewriter, loc, slice.getInput(), dim, local, off));
    ++numBuiltSlices;
    return success();
  }

  void runOnOperation() override {
    SmallVector<shard::AllSliceOp> slices;
    getOperation().walk([&](shard::AllSliceOp op) { slices.push_back(op); });
    IRRewriter rewriter(&getContext());
    bool changed = false;
    for (shard::AllSliceOp slice : slices) {
      if (slice.getGridAxes().empty())
        continue;
      auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(slice, slice.getGridAttr());
      if (!grid || grid.getShape().empty() || ShapedType::isDynamicShape(grid.getShape()))
        continue;
      changed |= succeeded(lookup(slice, grid, rewriter)) ||
                 succeeded(gradient(slice, grid, rewriter)) ||
                 succeeded(fromIotas(slice, grid, rewriter));
    }
    // The one-hots of the whole vocabulary, now unread.
    if (!changed)
      return;
    for (Block &block : getOperation().getBody()) {
      SmallVector<Operation *> ops;
      for (Operation &op : llvm::reverse(block))
        ops.push_back(&op);
      for (Operation *op : ops)
        if (isOpTriviallyDead(op))
          rewriter.eraseOp(op);
    }
  }
};

} // namespace
