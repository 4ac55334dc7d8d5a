//===- MaterializeReshards.cpp - the nova-materialize-reshards pass -*- C++ -*-===//
//
// Every change of sharding on a grid of rank > 1 goes through a nova.reshard
// (partitioned by Nova, one grid axis at a time), so that MLIR 22's
// shard-partition, which reshards only on 1-D grids, never has to.
//
//===----------------------------------------------------------------------===//
#include "nova/Dialect/Nova/IR/NovaDialect.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAMATERIALIZERESHARDS
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

struct MaterializeReshardsPass
    : public nova::impl::NovaMaterializeReshardsBase<MaterializeReshardsPass> {
  using Base::Base;

  void runOnOperation() override {
    SymbolTableCollection symbols;
    // A shard op fed by another of a different sharding: upstream reshards
    // every such chain (a user annotation after a result annotation, and a
    // result annotation after a user one, as around a returned argument).
    SmallVector<shard::ShardOp> changes;
    getOperation().walk([&](shard::ShardOp users) {
      auto def = users.getSrc().getDefiningOp<shard::ShardOp>();
      if (!def)
        return;
      shard::Sharding from(def.getSharding()), to(users.getSharding());
      if (from == to || (shard::isFullReplication(from) && shard::isFullReplication(to)))
        return;
      shard::GridOp grid = shard::getGridOrNull(users, to.getGridAttr(), symbols);
      if (grid && grid.getRank() > 1 && from.getGridAttr() == to.getGridAttr())
        changes.push_back(users);
    });
    for (shard::ShardOp users : changes) {
      auto def = users.getSrc().getDefiningOp<shard::ShardOp>();
      OpBuilder b(users);
      Location loc = users.getLoc();
      Value read = def.getResult();
      if (!def.getAnnotateForUsers())
        read = shard::ShardOp::create(b, loc, def.getResult(), def.getSharding(),
                                      /*annotate_for_users=*/true);
      auto reshard = nova::ReshardOp::create(b, loc, read.getType(), read);
      auto made = shard::ShardOp::create(b, loc, reshard.getResult(), users.getSharding(),
                                         /*annotate_for_users=*/false);
      users.getSrcMutable().assign(made.getResult());
      ++numReshards;
    }
  }
};

} // namespace
