//===- CollectivesToNova.cpp - shard collectives to nova --------*- C++ -*-===//
//
// A shard collective on tensors becomes
//
//   %in  = bufferization.to_buffer %x read_only : ... to memref<..., #hbm>
//   %out = memref.alloc() : memref<..., #hbm>
//   %t   = nova.<collective> ins(%in) outs(%out) ... groups [[...], ...]
//   nova.wait %t
//   %y   = bufferization.to_tensor %out restrict writable : ...
//
// which one-shot bufferization folds into the surrounding buffers. Replica
// groups come from the shard.grid: the devices of a grid are numbered
// row-major (as shard.process_linear_index does), and one group holds the
// devices that differ only along `grid_axes`, ordered row-major over those
// axes in the order `grid_axes` lists them (the order shard collectives use
// for the in-group index).
//
//===----------------------------------------------------------------------===//
#include "nova/Conversion/ShardToNova/ShardToNova.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::nova;

namespace {

shard::GridOp lookupGrid(Operation *op, FlatSymbolRefAttr grid) {
  return SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, grid);
}

/// Replica groups of the devices of `gridOp` that differ only along `axes`.
ArrayAttr replicaGroups(shard::GridOp gridOp, ArrayRef<int16_t> axes) {
  ArrayRef<int64_t> shape = gridOp.getShape();
  int64_t rank = shape.size();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  SmallVector<int64_t> others;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(axes, d))
      others.push_back(d);

  // Enumerates the row-major multi-indices over `dims` of the grid, as the
  // linear offsets they contribute.
  auto offsets = [&](ArrayRef<int64_t> dims) {
    SmallVector<int64_t> result{0};
    for (int64_t d : dims) {
      SmallVector<int64_t> next;
      for (int64_t base : result)
        for (int64_t i = 0; i < shape[d]; ++i)
          next.push_back(base + i * strides[d]);
      result = std::move(next);
    }
    return result;
  };
  SmallVector<int64_t> axisDims(axes.begin(), axes.end());
  SmallVector<int64_t> inGroup = offsets(axisDims);
  MLIRContext *ctx = gridOp.getContext();
  SmallVector<Attribute> groups;
  for (int64_t base : offsets(others)) {
    SmallVector<int64_t> group;
    for (int64_t offset : inGroup)
      group.push_back(base + offset);
    groups.push_back(DenseI64ArrayAttr::get(ctx, group));
  }
  return ArrayAttr::get(ctx, groups);
}

MemRefType hbmBufferOf(Type tensorType) {
  auto tensor = cast<RankedTensorType>(tensorType);
  return MemRefType::get(
      tensor.getShape(), tensor.getElementType(), MemRefLayoutAttrInterface(),
      MemorySpaceAttr::get(tensor.getContext(), MemorySpace::HBM));
}

std::optional<ReductionKind> novaReduction(shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return ReductionKind::Sum;
  case shard::ReductionKind::Max:
    return ReductionKind::Max;
  case shard::ReductionKind::Min:
    return ReductionKind::Min;
  case shard::ReductionKind::Average:
    return ReductionKind::Avg;
  default:
    return std::nullopt;
  }
}

/// The shared part of every collective's lowering: buffers in, the nova op
/// built by `build`, a wait, a tensor out.
template <typename ShardOpT>
struct CollectiveToNova : public OpConversionPattern<ShardOpT> {
  using OpConversionPattern<ShardOpT>::OpConversionPattern;
  using OpAdaptor = typename ShardOpT::Adaptor;

  virtual Value build(ShardOpT op, OpBuilder &b, Value input, Value output,
                      ArrayAttr groups) const = 0;

  LogicalResult
  matchAndRewrite(ShardOpT op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!whyNotLowerableShardOp(op).empty())
      return rewriter.notifyMatchFailure(op, whyNotLowerableShardOp(op));
    shard::GridOp gridOp = lookupGrid(op, op.getGridAttr());
    ArrayAttr groups = replicaGroups(gridOp, op.getGridAxes());
    Location loc = op.getLoc();
    Value input = bufferization::ToBufferOp::create(
        rewriter, loc, hbmBufferOf(op.getInput().getType()),
        adaptor.getInput(), /*read_only=*/true);
    Type resultType = op.getResult().getType();
    Value output =
        memref::AllocOp::create(rewriter, loc, hbmBufferOf(resultType));
    Value token = build(op, rewriter, input, output, groups);
    WaitOp::create(rewriter, loc, ValueRange{token});
    Value result = bufferization::ToTensorOp::create(
        rewriter, loc, resultType, output, rewriter.getUnitAttr(),
        rewriter.getUnitAttr());
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct AllReduceToNova : public CollectiveToNova<shard::AllReduceOp> {
  using CollectiveToNova::CollectiveToNova;
  Value build(shard::AllReduceOp op, OpBuilder &b, Value input, Value output,
              ArrayAttr groups) const override {
    return AllReduceOp::create(b, op.getLoc(), TokenType::get(op.getContext()),
                               *novaReduction(op.getReduction()), input, output,
                               groups);
  }
};

struct AllGatherToNova : public CollectiveToNova<shard::AllGatherOp> {
  using CollectiveToNova::CollectiveToNova;
  Value build(shard::AllGatherOp op, OpBuilder &b, Value input, Value output,
              ArrayAttr groups) const override {
    return AllGatherOp::create(b, op.getLoc(), TokenType::get(op.getContext()),
                               input, output,
                               op.getGatherAxis().getZExtValue(), groups);
  }
};

struct ReduceScatterToNova : public CollectiveToNova<shard::ReduceScatterOp> {
  using CollectiveToNova::CollectiveToNova;
  Value build(shard::ReduceScatterOp op, OpBuilder &b, Value input,
              Value output, ArrayAttr groups) const override {
    return ReduceScatterOp::create(
        b, op.getLoc(), TokenType::get(op.getContext()),
        *novaReduction(op.getReduction()), input, output,
        op.getScatterAxis().getZExtValue(), groups);
  }
};

struct AllToAllToNova : public CollectiveToNova<shard::AllToAllOp> {
  using CollectiveToNova::CollectiveToNova;
  Value build(shard::AllToAllOp op, OpBuilder &b, Value input, Value output,
              ArrayAttr groups) const override {
    return AllToAllOp::create(b, op.getLoc(), TokenType::get(op.getContext()),
                              input, output, op.getSplitAxis().getZExtValue(),
                              op.getConcatAxis().getZExtValue(), groups);
  }
};

/// Why the grid that `op` names cannot give replica groups, or "".
std::string whyNotStaticGrid(Operation *op, FlatSymbolRefAttr grid) {
  shard::GridOp gridOp = lookupGrid(op, grid);
  if (!gridOp)
    return "grid " + grid.getValue().str() + " is not defined";
  if (llvm::any_of(gridOp.getShape(), ShapedType::isDynamic))
    return "grid " + grid.getValue().str() +
           " has a dynamic shape; nova needs a static one";
  return "";
}

std::string whyNotFloatTensors(Value input, Value result) {
  for (Value v : {input, result}) {
    auto tensor = dyn_cast<RankedTensorType>(v.getType());
    if (!tensor || !tensor.hasStaticShape())
      return "it works on memrefs or dynamic shapes; nova lowers collectives "
             "on statically shaped tensors";
    // Integer sums too: a data-parallel loss counts its labels (i64).
    Type elt = tensor.getElementType();
    if (!isa<Float32Type, BFloat16Type, Float16Type>(elt) &&
        !elt.isSignlessInteger(64) && !elt.isSignlessInteger(32)) {
      std::string why = "nova collectives take f32, bf16, f16, i64 or i32, got ";
      llvm::raw_string_ostream os(why);
      os << tensor.getElementType();
      return why;
    }
  }
  return "";
}

/// `shard.all_slice` keeps this chip's slice of a replicated tensor: no
/// data moves between chips, but which slice depends on the chip, so the
/// offset is computed from `nova.chip_id` (the chip's index in its group over
/// `grid_axes`, row-major as the shard dialect numbers it) and one DMA copies
/// the slice out of the replicated buffer.
struct AllSliceToNova : public OpConversionPattern<shard::AllSliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(shard::AllSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!whyNotLowerableShardOp(op).empty())
      return rewriter.notifyMatchFailure(op, whyNotLowerableShardOp(op));
    shard::GridOp gridOp = lookupGrid(op, op.getGridAttr());
    ArrayRef<int64_t> shape = gridOp.getShape();
    Location loc = op.getLoc();
    auto index = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    Value id = ChipIdOp::create(rewriter, loc, rewriter.getIndexType());
    Value group = index(0);
    for (int16_t axis : op.getGridAxes()) {
      int64_t stride = 1;
      for (size_t d = axis + 1; d < shape.size(); ++d)
        stride *= shape[d];
      Value coord = arith::RemUIOp::create(
          rewriter, loc, arith::DivUIOp::create(rewriter, loc, id, index(stride)),
          index(shape[axis]));
      group = arith::AddIOp::create(
          rewriter, loc, arith::MulIOp::create(rewriter, loc, group, index(shape[axis])),
          coord);
    }
    auto resultType = cast<RankedTensorType>(op.getResult().getType());
    int64_t axis = op.getSliceAxis().getSExtValue();
    SmallVector<OpFoldResult> offsets(resultType.getRank(), rewriter.getIndexAttr(0));
    offsets[axis] = arith::MulIOp::create(rewriter, loc, group,
                                          index(resultType.getDimSize(axis)))
                        .getResult();
    SmallVector<OpFoldResult> sizes, strides(resultType.getRank(),
                                             rewriter.getIndexAttr(1));
    for (int64_t size : resultType.getShape())
      sizes.push_back(rewriter.getIndexAttr(size));
    Value input = bufferization::ToBufferOp::create(
        rewriter, loc, hbmBufferOf(op.getInput().getType()), adaptor.getInput(),
        /*read_only=*/true);
    Value slice = memref::SubViewOp::create(rewriter, loc, input, offsets, sizes, strides);
    Value output = memref::AllocOp::create(rewriter, loc, hbmBufferOf(resultType));
    Value token = DmaStartOp::create(rewriter, loc, TokenType::get(op.getContext()),
                                     slice, output, IntegerAttr());
    WaitOp::create(rewriter, loc, ValueRange{token});
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               rewriter, loc, resultType, output,
                               rewriter.getUnitAttr(), rewriter.getUnitAttr()));
    return success();
  }
};

} // namespace

std::string mlir::nova::whyNotLowerableShardOp(Operation *op) {
  auto collective = [&](auto shardOp) -> std::string {
    std::string why = whyNotStaticGrid(op, shardOp.getGridAttr());
    if (why.empty())
      why = whyNotFloatTensors(shardOp.getInput(), shardOp.getResult());
    return why;
  };
  auto reduction = [&](shard::ReductionKind kind) -> std::string {
    if (novaReduction(kind))
      return "";
    return "reduction '" + shard::stringifyReductionKind(kind).str() +
           "' has no nova collective (sum, max, min, average)";
  };
  if (isa<shard::GridOp>(op))
    return "";
  if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
    std::string why = collective(allReduce);
    return why.empty() ? reduction(allReduce.getReduction()) : why;
  }
  if (auto reduceScatter = dyn_cast<shard::ReduceScatterOp>(op)) {
    std::string why = collective(reduceScatter);
    return why.empty() ? reduction(reduceScatter.getReduction()) : why;
  }
  if (auto allGather = dyn_cast<shard::AllGatherOp>(op))
    return collective(allGather);
  if (auto allToAll = dyn_cast<shard::AllToAllOp>(op))
    return collective(allToAll);
  if (auto allSlice = dyn_cast<shard::AllSliceOp>(op))
    return collective(allSlice);
  return "'" + op->getName().getStringRef().str() +
         "' has no nova lowering (run sharding-propagation and shard-partition "
         "first; only all_reduce, all_gather, reduce_scatter, all_to_all and "
         "all_slice are lowered)";
}

LogicalResult mlir::nova::lowerConcatenatedAllReduces(RewriterBase &rewriter,
                                                     tensor::ConcatOp concat) {
  auto type = dyn_cast<RankedTensorType>(concat.getType());
  if (concat.getDim() != 0 || !type || !type.hasStaticShape())
    return failure();
  SmallVector<shard::AllReduceOp> parts;
  for (Value part : concat.getInputs()) {
    auto reduce = part.getDefiningOp<shard::AllReduceOp>();
    if (!reduce || !part.hasOneUse() || reduce->getBlock() != concat->getBlock() ||
        reduce.getInput().getType() != part.getType() ||
        !whyNotLowerableShardOp(reduce).empty())
      return failure();
    parts.push_back(reduce);
  }
  Operation *first = parts.front();
  for (shard::AllReduceOp part : parts)
    if (part->isBeforeInBlock(first))
      first = part;
  rewriter.setInsertionPoint(first);
  Value whole = memref::AllocOp::create(rewriter, concat.getLoc(), hbmBufferOf(type));
  int64_t row = 0;
  for (shard::AllReduceOp part : parts) {
    rewriter.setInsertionPoint(part);
    Location loc = part.getLoc();
    auto partType = cast<RankedTensorType>(part.getResult().getType());
    SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
    offsets[0] = rewriter.getIndexAttr(row);
    SmallVector<OpFoldResult> sizes, strides(type.getRank(), rewriter.getIndexAttr(1));
    for (int64_t size : partType.getShape())
      sizes.push_back(rewriter.getIndexAttr(size));
    Value output = memref::SubViewOp::create(rewriter, loc, whole, offsets, sizes, strides);
    Value input = bufferization::ToBufferOp::create(
        rewriter, loc, hbmBufferOf(partType), part.getInput(), /*read_only=*/true);
    shard::GridOp gridOp = lookupGrid(part, part.getGridAttr());
    Value token = AllReduceOp::create(
        rewriter, loc, TokenType::get(part.getContext()),
        *novaReduction(part.getReduction()), input, output,
        replicaGroups(gridOp, part.getGridAxes()));
    WaitOp::create(rewriter, loc, ValueRange{token});
    row += partType.getDimSize(0);
  }
  rewriter.setInsertionPoint(concat);
  rewriter.replaceOp(concat, bufferization::ToTensorOp::create(
                                 rewriter, concat.getLoc(), type, whole,
                                 rewriter.getUnitAttr(), rewriter.getUnitAttr()));
  for (shard::AllReduceOp part : parts)
    rewriter.eraseOp(part);
  return success();
}

void mlir::nova::populateShardToNovaPatterns(RewritePatternSet &patterns) {
  patterns.add<AllReduceToNova, AllGatherToNova, ReduceScatterToNova,
               AllToAllToNova, AllSliceToNova>(patterns.getContext());
}
