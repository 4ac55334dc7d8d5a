//===- VerifySharding.cpp - the nova-verify-sharding pass -------*- C++ -*-===//
#include "nova/Transforms/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAVERIFYSHARDING
#include "nova/Transforms/Passes.h.inc"
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

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Nothing to partition without annotations.
    bool annotated = false;
    func.walk([&](shard::ShardOp) { annotated = true; });
    if (!annotated)
      return;
    bool failed = false;
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
