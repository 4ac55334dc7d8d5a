//===- CheckInput.cpp - the nova-check-input pass ---------------*- C++ -*-===//
//
// Upstream verifiers that assert on what they assume: checked first, reported
// as diagnostics, then the verifier runs.
//
//===----------------------------------------------------------------------===//
#include "nova/Input/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVACHECKINPUT
#include "nova/Input/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The largest rank among an op's shaped operands and results.
int64_t maxRank(Operation *op) {
  int64_t rank = 0;
  auto visit = [&](Type type) {
    if (auto shaped = dyn_cast<ShapedType>(type); shaped && shaped.hasRank())
      rank = std::max(rank, shaped.getRank());
  };
  for (Type t : op->getOperandTypes())
    visit(t);
  for (Type t : op->getResultTypes())
    visit(t);
  return rank;
}

/// `reassociation = [[0, 1], [2]]` (collapse/expand_shape of tensors and
/// memrefs): every index a dimension of the expanded type.
LogicalResult checkReassociation(Operation *op) {
  if (!isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
           memref::CollapseShapeOp, memref::ExpandShapeOp>(op))
    return success();
  auto groups = op->getAttrOfType<ArrayAttr>("reassociation");
  if (!groups)
    return success();
  int64_t rank = maxRank(op);
  for (Attribute group : groups) {
    auto indices = dyn_cast<ArrayAttr>(group);
    if (!indices)
      return op->emitOpError() << "reassociation group " << group
                               << " is not a list of dimensions";
    for (Attribute index : indices) {
      auto value = dyn_cast<IntegerAttr>(index);
      if (!value || value.getValue().getSignificantBits() > 64 ||
          value.getInt() < 0 || value.getInt() >= rank)
        return op->emitOpError()
               << "reassociation index "
               << (value ? llvm::toString(value.getValue(), 10, /*Signed=*/true)
                         : std::string("(not an integer)"))
               << " is not a dimension of the rank-" << rank << " type";
    }
  }
  return success();
}

/// `permutation = [1, 0]` (linalg.transpose): entries within the rank.
LogicalResult checkPermutation(Operation *op) {
  if (!isa<linalg::TransposeOp>(op))
    return success();
  auto perm = op->getAttrOfType<DenseI64ArrayAttr>("permutation");
  if (!perm)
    return success();
  int64_t rank = maxRank(op);
  for (int64_t p : perm.asArrayRef())
    if (p < 0 || p >= rank)
      return op->emitOpError() << "permutation entry " << p
                               << " is not a dimension of the rank-" << rank
                               << " operands";
  return success();
}

/// `strides` / `dilations` of linalg convolutions and poolings: positive
/// (the verifier composes the indexing maps with them first).
LogicalResult checkWindow(Operation *op) {
  if (!isa<linalg::LinalgOp>(op))
    return success();
  for (StringRef name : {"strides", "dilations"}) {
    auto values = op->getAttrOfType<DenseIntElementsAttr>(name);
    if (!values)
      continue;
    for (const APInt &v : values.getValues<APInt>())
      if (v.getSignificantBits() > 32 || v.getSExtValue() < 1)
        return op->emitOpError()
               << name << " must be positive, got "
               << llvm::toString(v, 10, /*Signed=*/true);
  }
  return success();
}

/// tensor.pad: a static padding equal to the dynamic sentinel (INT64_MIN
/// written as a number) must come with an operand; its folder indexes the
/// operands by the sentinels.
LogicalResult checkPad(Operation *op) {
  auto pad = dyn_cast<tensor::PadOp>(op);
  if (!pad)
    return success();
  auto count = [](ArrayRef<int64_t> values) {
    return llvm::count_if(values, ShapedType::isDynamic);
  };
  if (count(pad.getStaticLow()) != int64_t(pad.getLow().size()) ||
      count(pad.getStaticHigh()) != int64_t(pad.getHigh().size()))
    return pad.emitOpError()
           << "has " << count(pad.getStaticLow()) + count(pad.getStaticHigh())
           << " dynamic paddings but "
           << pad.getLow().size() + pad.getHigh().size()
           << " padding operands (" << ShapedType::kDynamic
           << " is the dynamic marker, not a padding)";
  // The verifier infers the padded type; a size that overflows asserts.
  auto source = dyn_cast<RankedTensorType>(pad.getSource().getType());
  if (!source)
    return success();
  for (int64_t d = 0; d < source.getRank(); ++d) {
    int64_t size = source.getDimSize(d), low = pad.getStaticLow()[d],
            high = pad.getStaticHigh()[d], sum;
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(low) ||
        ShapedType::isDynamic(high))
      continue;
    if (llvm::AddOverflow(size, low, sum) || llvm::AddOverflow(sum, high, sum) ||
        sum < 0)
      return pad.emitOpError() << "pads dimension " << d << " of size " << size
                               << " by " << low << " and " << high
                               << ", which is not a valid size";
  }
  return success();
}

LogicalResult checkGrid(shard::GridOp grid) {
  for (int64_t size : grid.getShape())
    if (!ShapedType::isDynamic(size) && size <= 0)
      return grid.emitOpError() << "axis size " << size << " is not positive";
  return success();
}

/// Grids by name, found without a SymbolTable (which asserts on the duplicate
/// names that only the verifier, run after these checks, reports).
using Grids = llvm::StringMap<shard::GridOp>;

LogicalResult checkSharding(shard::ShardingOp op, const Grids &grids) {
  auto it = grids.find(op.getGridAttr().getValue());
  if (it == grids.end())
    return success(); // the verifier reports the missing symbol
  shard::GridOp grid = it->second;
  for (shard::GridAxesAttr axes : op.getSplitAxes().getAxes())
    for (int16_t axis : axes.asArrayRef())
      if (axis < 0 || axis >= grid.getRank())
        return op.emitOpError() << "grid axis " << axis << " is not an axis of the "
                                << grid.getRank() << "-D grid @"
                                << grid.getSymName();
  return success();
}

struct CheckInputPass : public nova::impl::NovaCheckInputBase<CheckInputPass> {
  using Base::Base;

  void runOnOperation() override {
    Grids grids;
    bool duplicate = false;
    getOperation()->walk([&](shard::GridOp grid) {
      duplicate |= !grids.try_emplace(grid.getSymName(), grid).second;
    });
    bool ok = true;
    getOperation()->walk([&](Operation *op) {
      LogicalResult r = success();
      if (auto grid = dyn_cast<shard::GridOp>(op))
        r = checkGrid(grid);
      else if (auto sharding = dyn_cast<shard::ShardingOp>(op))
        r = duplicate ? success() : checkSharding(sharding, grids);
      else if (failed(checkReassociation(op)) || failed(checkPermutation(op)) ||
               failed(checkWindow(op)) || failed(checkPad(op)))
        r = failure();
      ok &= succeeded(r);
    });
    if (!ok || failed(verify(getOperation())))
      signalPassFailure();
  }
};

} // namespace
