//===- PrepareSharding.cpp - the nova-prepare-sharding pass -----*- C++ -*-===//
#include "nova/Partition/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAPREPARESHARDING
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// A destination-only producer: `tensor.empty`, or `linalg.fill` of a
/// scalar into one.
bool isInitProducer(Operation *op) {
  if (isa<tensor::EmptyOp>(op))
    return true;
  auto fill = dyn_cast<linalg::FillOp>(op);
  return fill && fill.hasPureTensorSemantics() &&
         fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

/// A generator: a `linalg.generic` that reads no tensor, only its loop
/// indices (torch's `arange`), into destinations that are init producers.
/// Propagation gives it no sharding of its own (it has no sharded operand),
/// so when its users ask for different shardings of it (one `arange` shared
/// by a one-hot over a split vocabulary and one over a whole one), the
/// backward traversal asserts in `getSharding(OpResult)`.
bool isGenerator(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() || generic->getNumResults() != 1)
    return false;
  for (OpOperand *input : generic.getDpsInputOperands())
    if (isa<ShapedType>(input->get().getType()))
      return false;
  for (OpOperand &init : generic.getDpsInitsMutable()) {
    Operation *def = init.get().getDefiningOp();
    if (!def || !isInitProducer(def))
      return false;
  }
  // Nothing in the body but index and scalar arithmetic on values defined
  // inside it or captured scalars (no tensor reads).
  WalkResult walk = generic.getRegion().walk([](Operation *inner) {
    if (inner->getNumRegions() || !isPure(inner))
      return WalkResult::interrupt();
    for (Value operand : inner->getOperands())
      if (isa<ShapedType>(operand.getType()))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

/// A stack written as a join (torch's `stack` after canonicalization,
/// timm's qkv gradients): `expand_shape(concat dim(d) of N tensors of size S
/// along d)` splitting d into [N, S]. The concat joins d, which a
/// data-parallel batch splits, so its model drops that split while the
/// expand's users want S split: propagation asserts in
/// `getSharding(OpResult)`. Stacked along a new unit dimension instead,
/// `concat dim(d) of expand_shape(each -> [1, S])`, the join is over the
/// unit dimension and S keeps its split.
struct ConcatAsStack : OpRewritePattern<tensor::ExpandShapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExpandShapeOp expand,
                                PatternRewriter &rewriter) const override {
    auto concat = expand.getSrc().getDefiningOp<tensor::ConcatOp>();
    RankedTensorType resultType = expand.getResultType();
    if (!concat || !resultType.hasStaticShape())
      return failure();
    int64_t d = concat.getDim();
    SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
    ReassociationIndices group = groups[d];
    int64_t n = concat.getInputs().size();
    if (group.size() != 2 || resultType.getDimSize(group[0]) != n)
      return failure();
    int64_t size = resultType.getDimSize(group[1]);
    for (Value input : concat.getInputs())
      if (cast<RankedTensorType>(input.getType()).getDimSize(d) != size)
        return failure();
    // Each input expands as the join did, with [1, S] in place of [N, S].
    SmallVector<int64_t> shape(resultType.getShape());
    shape[group[0]] = 1;
    auto pieceType = RankedTensorType::get(shape, resultType.getElementType());
    SmallVector<Value> pieces;
    for (Value input : concat.getInputs())
      pieces.push_back(tensor::ExpandShapeOp::create(rewriter, expand.getLoc(), pieceType,
                                                     input, groups));
    rewriter.replaceOpWithNewOp<tensor::ConcatOp>(expand, group[0], pieces);
    return success();
  }
};

struct PrepareShardingPass
    : public nova::impl::NovaPrepareShardingBase<PrepareShardingPass> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Splat tensor constants -> fills.
    SmallVector<arith::ConstantOp> constants;
    getOperation().walk([&](arith::ConstantOp op) { constants.push_back(op); });
    for (arith::ConstantOp op : constants) {
      auto type = dyn_cast<RankedTensorType>(op.getType());
      auto splat = dyn_cast<SplatElementsAttr>(op.getValue());
      if (!type || type.getRank() == 0 || !splat || !type.hasStaticShape())
        continue;
      // Complex splats are arrays, not scalars a fill can take.
      auto element = dyn_cast<TypedAttr>(splat.getSplatValue<Attribute>());
      if (!element)
        continue;
      rewriter.setInsertionPoint(op);
      Value scalar = arith::ConstantOp::create(rewriter, op.getLoc(), element);
      Value empty = tensor::EmptyOp::create(rewriter, op.getLoc(), type.getShape(),
                                            type.getElementType());
      rewriter.replaceOpWithNewOp<linalg::FillOp>(op, scalar, empty);
      ++numFills;
    }

    // A reshape (or slice) of a tensor.empty is a tensor.empty: the reshape
    // of a destination would otherwise need a resharding of no data. A join
    // that a reshape makes a stack becomes a stack (ConcatAsStack).
    RewritePatternSet patterns(&getContext());
    tensor::populateFoldTensorEmptyPatterns(patterns);
    patterns.add<ConcatAsStack>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    // One generator per use (before the destinations: each clone shares the
    // original's destination, which the loop below then clones per use).
    SmallVector<Operation *> generators;
    getOperation().walk([&](Operation *op) {
      if (isGenerator(op))
        generators.push_back(op);
    });
    for (Operation *op : generators) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : op->getResult(0).getUses())
        uses.push_back(&use);
      for (OpOperand *use : llvm::drop_begin(uses)) {
        rewriter.setInsertionPoint(use->getOwner());
        Operation *clone = rewriter.clone(*op);
        rewriter.modifyOpInPlace(use->getOwner(),
                                 [&] { use->set(clone->getResult(0)); });
        ++numGenerators;
      }
    }

    // One destination producer per use (fills first, so that each clone of
    // a fill then gets its own empty).
    SmallVector<Operation *> producers;
    getOperation().walk([&](Operation *op) {
      if (isInitProducer(op))
        producers.push_back(op);
    });
    std::stable_partition(producers.begin(), producers.end(),
                          [](Operation *op) { return isa<linalg::FillOp>(op); });
    for (Operation *op : producers) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : op->getResult(0).getUses())
        uses.push_back(&use);
      for (OpOperand *use : llvm::drop_begin(uses)) {
        rewriter.setInsertionPoint(use->getOwner());
        IRMapping mapping;
        if (auto fill = dyn_cast<linalg::FillOp>(op)) {
          Operation *empty = fill.getOutputs()[0].getDefiningOp();
          mapping.map(empty->getResult(0), rewriter.clone(*empty)->getResult(0));
        }
        Operation *clone = rewriter.clone(*op, mapping);
        rewriter.modifyOpInPlace(use->getOwner(),
                                 [&] { use->set(clone->getResult(0)); });
        ++numCloned;
      }
    }
    // A result annotation (`shard.shard %r to ..` feeding func.return) sits
    // right before the return. When %r has other users (a gradient kept as a
    // result and read by the optimizer), propagation can route them through
    // that annotation, above its definition (an IR that does not verify:
    // "operand does not dominate this use"), or annotate %r a second time
    // (two result annotations, which partitioning cannot read). It moves
    // right after %r's definition and the other users read it: %r is placed
    // as the program returns it, and a user that wants it otherwise reshards.
    func::FuncOp fn = getOperation();
    Operation *ret = fn.getBody().front().getTerminator();
    for (Value v : ret->getOperands()) {
      auto annotation = v.getDefiningOp<shard::ShardOp>();
      if (!annotation || annotation.getAnnotateForUsers())
        continue;
      Operation *def = annotation.getSrc().getDefiningOp();
      if (!def || def->getBlock() != annotation->getBlock())
        continue;
      Operation *sharding = annotation.getSharding().getDefiningOp();
      if (sharding && sharding->getBlock() == def->getBlock() &&
          def->isBeforeInBlock(sharding) && sharding->getNumOperands() == 0)
        sharding->moveAfter(def);
      if (sharding && sharding->getBlock() == def->getBlock() &&
          def->isBeforeInBlock(sharding))
        annotation->moveAfter(sharding);
      else
        annotation->moveAfter(def);
      Block *block = annotation->getBlock();
      annotation.getSrc().replaceUsesWithIf(annotation.getResult(), [&](OpOperand &use) {
        Operation *user = block->findAncestorOpInBlock(*use.getOwner());
        return user && user != annotation.getOperation() &&
               !isa<shard::ShardOp>(use.getOwner()) && annotation->isBeforeInBlock(user);
      });
    }

    // An argument the program never reads (GPT-2's causal-mask buffer) lost
    // its annotation to canonicalization; shard-partition asserts that every
    // argument has one use. Last, since the pattern driver above erases unused
    // annotations: give it a replicated annotation on the grid the
    // others use.
    func::FuncOp func = getOperation();
    shard::ShardingOp someSharding;
    func.walk([&](shard::ShardingOp op) {
      someSharding = op;
      return WalkResult::interrupt();
    });
    if (someSharding) {
      rewriter.setInsertionPointToStart(&func.getBody().front());
      Value replicated;
      for (BlockArgument arg : func.getArguments()) {
        if (!arg.use_empty() || !isa<RankedTensorType>(arg.getType()))
          continue;
        if (!replicated)
          replicated = shard::ShardingOp::create(
              rewriter, func.getLoc(), someSharding.getGridAttr(),
              ArrayRef<shard::GridAxesAttr>{});
        shard::ShardOp::create(rewriter, func.getLoc(), arg, replicated,
                               /*annotate_for_users=*/true);
      }
    }
  }
};
} // namespace
