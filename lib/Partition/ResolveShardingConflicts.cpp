//===- ResolveShardingConflicts.cpp - nova-resolve-sharding-conflicts -----===//
//
// MLIR 22's `sharding-propagation` gives a value no sharding of its own when
// the op computing it has no sharded operand, and lets each user annotate it
// for itself. When two users ask different shardings of such a value, the
// backward traversal asserts in `getSharding(OpResult)` ("only support all
// shard ops have the same grid sharding attr"). This pass finds those values
// by running upstream's forward traversal as a probe, undoes the probe, and
// pins each such value to one sharding (the one that splits it most), so that
// the real propagation run that follows starts from it.
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVARESOLVESHARDINGCONFLICTS
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

#define DEBUG_TYPE "nova-resolve-sharding-conflicts"

using namespace mlir;

namespace {

/// The number of shards `sharding` cuts a tensor into on `grid`.
int64_t shardCount(const shard::Sharding &sharding, shard::GridOp grid) {
  int64_t count = 1;
  for (shard::GridAxesAttr axes : sharding.getSplitAxes())
    for (shard::GridAxis axis : axes.asArrayRef())
      count *= grid.getShape()[axis];
  return count;
}

/// A value the probe left without a sharding of its own, and the sharding it
/// is pinned to.
struct Conflict {
  Value value;
  shard::Sharding sharding;
};

struct ResolveShardingConflictsPass
    : public nova::impl::NovaResolveShardingConflictsBase<
          ResolveShardingConflictsPass> {
  using Base::Base;

  /// The values whose users' annotations (all `annotate_for_users`, none on
  /// the value itself) disagree, each with the sharding that splits it most
  /// (the first such user's on a tie).
  std::vector<Conflict> findConflicts(func::FuncOp func,
                                      SymbolTableCollection &symbols) {
    std::vector<Conflict> conflicts;
    func.walk([&](Operation *op) {
      if (isa<shard::ShardOp, shard::ShardingOp>(op))
        return;
      for (OpResult result : op->getResults()) {
        if (!isa<RankedTensorType>(result.getType()))
          continue;
        SmallVector<shard::ShardOp> forUsers;
        bool ownSharding = false;
        for (Operation *user : result.getUsers()) {
          auto annotation = dyn_cast<shard::ShardOp>(user);
          if (!annotation)
            continue;
          if (!annotation.getAnnotateForUsers())
            ownSharding = true;
          else
            forUsers.push_back(annotation);
        }
        if (ownSharding || forUsers.size() < 2)
          continue;
        shard::Sharding best(forUsers.front().getSharding());
        bool differ = false;
        shard::GridOp grid =
            shard::getGridOrNull(op, best.getGridAttr(), symbols);
        if (!grid)
          continue;
        for (shard::ShardOp annotation : llvm::drop_begin(forUsers)) {
          shard::Sharding asked(annotation.getSharding());
          if (asked == best)
            continue;
          differ = true;
          if (shardCount(asked, grid) > shardCount(best, grid))
            best = asked;
        }
        if (differ)
          conflicts.push_back({result, best});
      }
    });
    return conflicts;
  }

  /// An elementwise generic (all loops parallel, identity maps) whose
  /// annotated inputs ask different shardings (a saved activation whole
  /// along the sequence beside the residual split along it): propagation
  /// finds no sharding for the op. When the most split of them extends the
  /// others (each of their split dimensions split alike in it), the others
  /// are re-annotated to it for this op: partitioning slices them (local).
  void alignElementwiseInputs(func::FuncOp func, SymbolTableCollection &symbols) {
    func.walk([&](linalg::GenericOp op) {
      if (op.getNumLoops() != op.getNumParallelLoops() ||
          !llvm::all_of(op.getIndexingMapsArray(),
                        [](AffineMap map) { return map.isIdentity(); }))
        return;
      SmallVector<std::pair<OpOperand *, shard::Sharding>, 4> asked;
      for (OpOperand *input : op.getDpsInputOperands()) {
        auto annotation = input->get().getDefiningOp<shard::ShardOp>();
        if (annotation && annotation.getAnnotateForUsers())
          asked.push_back({input, shard::Sharding(annotation.getSharding())});
      }
      if (asked.size() < 2)
        return;
      shard::Sharding best = asked.front().second;
      shard::GridOp grid = shard::getGridOrNull(op, best.getGridAttr(), symbols);
      if (!grid)
        return;
      for (auto &[input, sharding] : asked)
        if (shardCount(sharding, grid) > shardCount(best, grid))
          best = sharding;
      if (!best.getStaticHaloSizes().empty() || !best.getStaticShardedDimsOffsets().empty())
        return;
      auto extends = [&](const shard::Sharding &other) {
        if (other.getGridAttr() != best.getGridAttr() ||
            !other.getStaticHaloSizes().empty() ||
            !other.getStaticShardedDimsOffsets().empty())
          return false;
        ArrayRef<shard::GridAxesAttr> mine = best.getSplitAxes();
        for (auto [dim, axes] : llvm::enumerate(other.getSplitAxes()))
          if (!axes.empty() && (dim >= mine.size() || mine[dim] != axes))
            return false;
        return true;
      };
      if (!llvm::all_of(asked, [&](auto &entry) { return extends(entry.second); }))
        return;
      OpBuilder b(op);
      for (auto &[input, sharding] : asked) {
        if (sharding == best)
          continue;
        auto split = shard::ShardingOp::create(b, op.getLoc(), best);
        auto annotation = shard::ShardOp::create(b, op.getLoc(), input->get(), split,
                                                 /*annotate_for_users=*/true);
        input->set(annotation.getResult());
        ++numAligned;
      }
    });
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SymbolTableCollection symbols;
    alignElementwiseInputs(func, symbols);
    for (unsigned round = 0; round < maxRounds; ++round) {
      DenseSet<Operation *> before;
      func.walk([&](Operation *op) {
        if (isa<shard::ShardOp, shard::ShardingOp>(op))
          before.insert(op);
      });
      // The probe: upstream's forward traversal, on the function itself.
      OpPassManager probe(func::FuncOp::getOperationName());
      shard::ShardingPropagationOptions forward;
      forward.traversal = shard::TraversalOrder::Forward;
      probe.addPass(shard::createShardingPropagation(forward));
      if (failed(runPipeline(probe, func)))
        return signalPassFailure();
      std::vector<Conflict> conflicts = findConflicts(func, symbols);
      // Undo the probe: propagation only wraps values in new annotations.
      SmallVector<shard::ShardOp> added;
      SmallVector<shard::ShardingOp> addedShardings;
      func.walk([&](Operation *op) {
        if (before.contains(op))
          return;
        if (auto annotation = dyn_cast<shard::ShardOp>(op))
          added.push_back(annotation);
        else if (auto sharding = dyn_cast<shard::ShardingOp>(op))
          addedShardings.push_back(sharding);
      });
      for (shard::ShardOp annotation : added)
        annotation.getResult().replaceAllUsesWith(annotation.getSrc());
      for (shard::ShardOp annotation : added)
        annotation->erase();
      for (shard::ShardingOp sharding : addedShardings)
        sharding->erase();
      if (conflicts.empty())
        return;
      if (round + 1 == maxRounds) {
        func.emitError("sharding conflicts remain after ")
            << maxRounds.getValue() << " rounds of pinning";
        return signalPassFailure();
      }
      // Pin each value: `shard.shard %v to S`, read by all its users.
      OpBuilder b(func.getContext());
      for (Conflict &conflict : conflicts) {
        Value value = conflict.value;
        b.setInsertionPointAfterValue(value);
        auto sharding =
            shard::ShardingOp::create(b, value.getLoc(), conflict.sharding);
        auto pin = shard::ShardOp::create(b, value.getLoc(), value, sharding,
                                          /*annotate_for_users=*/false);
        value.replaceAllUsesExcept(pin.getResult(), pin);
        ++numPinned;
      }
    }
  }
};

} // namespace
