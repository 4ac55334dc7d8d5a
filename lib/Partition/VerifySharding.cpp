//===- VerifySharding.cpp - the nova-verify-sharding pass -------*- C++ -*-===//
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "nova/Target/Binary/BinaryFormat.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAVERIFYSHARDING
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

bool isShardable(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() > 0;
}

struct VerifyShardingPass
    : public nova::impl::NovaVerifyShardingBase<VerifyShardingPass> {
  using Base::Base;

  /// An op that propagation left without annotations runs
  /// replicated: results annotated replicated (all their uses read the
  /// annotation), operands read through a replicated annotation for users.
  /// Partitioning then gathers what such an op reads and slices what it gives.
  void replicateUnannotated(func::FuncOp func, SymbolTableCollection &symbols) {
    shard::ShardingOp someSharding;
    func.walk([&](shard::ShardingOp op) {
      someSharding = op;
      return WalkResult::interrupt();
    });
    if (!someSharding)
      return;
    shard::GridOp grid =
        shard::getGridOrNull(someSharding, someSharding.getGridAttr(), symbols);
    if (!grid)
      return;
    OpBuilder b(func.getContext());
    Value replicated;
    auto getReplicated = [&]() {
      if (!replicated) {
        b.setInsertionPointAfter(someSharding);
        replicated = shard::ShardingOp::create(b, func.getLoc(),
                                               someSharding.getGridAttr(),
                                               ArrayRef<shard::GridAxesAttr>{});
      }
      return replicated;
    };
    auto annotatedResult = [](OpResult result) {
      return result.hasOneUse() &&
             isa<shard::ShardOp>(*result.getUsers().begin()) &&
             !cast<shard::ShardOp>(*result.getUsers().begin())
                  .getAnnotateForUsers();
    };
    // Only ops whose existing annotations are all replicated (or missing)
    // can run replicated as they are; one that is also placed split
    // somewhere is a real conflict, reported below.
    auto isReplicated = [](Value sharding) {
      auto op = sharding.getDefiningOp<shard::ShardingOp>();
      return op && llvm::all_of(shard::Sharding(op).getSplitAxes(),
                                [](shard::GridAxesAttr a) { return a.empty(); });
    };
    auto replicable = [&](Operation &op) {
      bool missing = false;
      for (OpResult result : op.getResults()) {
        if (!isShardable(result.getType()))
          continue;
        if (!annotatedResult(result)) {
          missing = true;
          continue;
        }
        if (!isReplicated(cast<shard::ShardOp>(*result.getUsers().begin()).getSharding()))
          return false;
      }
      for (OpOperand &operand : op.getOpOperands()) {
        if (!isShardable(operand.get().getType()))
          continue;
        auto shard = operand.get().getDefiningOp<shard::ShardOp>();
        if (!shard || !shard.getAnnotateForUsers()) {
          missing = true;
          continue;
        }
        if (!isReplicated(shard.getSharding()))
          return false;
      }
      return missing;
    };
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().getOps())
      if (!isa<shard::ShardOp, shard::ShardingOp>(op) &&
          !op.hasTrait<OpTrait::IsTerminator>() &&
          !op.hasTrait<OpTrait::ConstantLike>() && replicable(op))
        ops.push_back(&op);
    for (Operation *op : ops) {
      bool changed = false;
      for (OpResult result : op->getResults()) {
        if (!isShardable(result.getType()) || annotatedResult(result))
          continue;
        Value sharding = getReplicated();
        b.setInsertionPointAfter(op);
        auto annotation = shard::ShardOp::create(b, op->getLoc(), result,
                                                 sharding, false);
        result.replaceAllUsesExcept(annotation.getResult(), annotation);
        changed = true;
      }
      if (changed)
        ++numReplicated;
    }
    for (Operation *op : ops) {
      bool changed = false;
      for (OpOperand &operand : op->getOpOperands()) {
        if (!isShardable(operand.get().getType()))
          continue;
        auto shard = operand.get().getDefiningOp<shard::ShardOp>();
        if (shard && shard.getAnnotateForUsers())
          continue;
        b.setInsertionPoint(op);
        auto annotation = shard::ShardOp::create(
            b, op->getLoc(), operand.get(), getReplicated(), true);
        operand.set(annotation.getResult());
        changed = true;
      }
      if (changed)
        ++numReplicated;
    }
  }

  /// What shard-partition asserts on instead of diagnosing: an unknown grid,
  /// a grid without static positive sizes, a split axis beyond the grid or
  /// repeated, a split of a dimension the tensor does not have or that its
  /// chips do not divide.
  bool verifyPlacements(func::FuncOp func, SymbolTableCollection &symbols) {
    bool ok = true;
    func.walk([&](shard::ShardOp op) {
      shard::Sharding sharding(op.getSharding());
      if (!sharding.getGridAttr())
        return;
      shard::GridOp grid =
          shard::getGridOrNull(op, sharding.getGridAttr(), symbols);
      if (!grid) {
        op.emitOpError() << "is placed on an unknown grid "
                         << sharding.getGridAttr();
        ok = false;
        return;
      }
      ArrayRef<int64_t> shape = grid.getShape();
      for (int64_t size : shape)
        if (ShapedType::isDynamic(size) || size <= 0 || size > nova::binary::kMaxChips) {
          op.emitOpError() << "is placed on grid @" << grid.getSymName()
                           << " whose axes must be static sizes in [1, "
                           << nova::binary::kMaxChips << "]";
          ok = false;
          return;
        }
      auto type = dyn_cast<RankedTensorType>(op.getSrc().getType());
      if (!type)
        return;
      llvm::SmallDenseSet<int16_t> used;
      for (auto [dim, axes] : llvm::enumerate(sharding.getSplitAxes())) {
        if (axes.empty())
          continue;
        if (int64_t(dim) >= type.getRank()) {
          op.emitOpError() << "splits dimension " << dim << " of a rank-"
                           << type.getRank() << " tensor";
          ok = false;
          return;
        }
        int64_t chips = 1;
        for (int16_t axis : axes.asArrayRef()) {
          if (axis < 0 || axis >= grid.getRank() || !used.insert(axis).second) {
            op.emitOpError() << "splits over grid axis " << axis
                             << ", which is not an unused axis of the "
                             << grid.getRank() << "-D grid @"
                             << grid.getSymName();
            ok = false;
            return;
          }
          chips *= shape[axis]; // each factor <= kMaxChips, at most a few axes
        }
        int64_t size = type.getDimSize(dim);
        if (!ShapedType::isDynamic(size) && size % chips != 0) {
          op.emitOpError() << "splits dimension " << dim << " of size " << size
                           << " over " << chips
                           << " chips, which do not divide it";
          ok = false;
          return;
        }
      }
    });
    return ok;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Nothing to partition without annotations.
    bool annotated = false;
    func.walk([&](shard::ShardOp) { annotated = true; });
    if (!annotated)
      return;
    SymbolTableCollection symbols;
    if (!verifyPlacements(func, symbols))
      return signalPassFailure();
    bool failed = false;
    replicateUnannotated(func, symbols);
    for (Operation &op : func.getBody().getOps()) {
      if (isa<shard::ShardOp, shard::ShardingOp>(op) ||
          op.hasTrait<OpTrait::IsTerminator>() || op.hasTrait<OpTrait::ConstantLike>())
        continue;
      for (OpOperand &operand : op.getOpOperands()) {
        if (!isShardable(operand.get().getType()))
          continue;
        auto shard = operand.get().getDefiningOp<shard::ShardOp>();
        if (!shard || !shard.getAnnotateForUsers()) {
          op.emitOpError() << "operand #" << operand.getOperandNumber()
                           << " has no sharding after sharding propagation: the "
                              "placements around it conflict (e.g. a replicated "
                              "input whose result is placed split); place the "
                              "inputs and outputs consistently";
          failed = true;
          break;
        }
      }
      for (OpResult result : op.getResults()) {
        if (!isShardable(result.getType()))
          continue;
        auto shard = result.hasOneUse()
                         ? dyn_cast<shard::ShardOp>(*result.getUsers().begin())
                         : shard::ShardOp();
        if (!shard || shard.getAnnotateForUsers()) {
          op.emitOpError() << "result #" << result.getResultNumber()
                           << " has no sharding after sharding propagation: the "
                              "placements around it conflict; place the inputs "
                              "and outputs consistently";
          failed = true;
          break;
        }
      }
    }
    if (failed)
      signalPassFailure();
  }
};
} // namespace
