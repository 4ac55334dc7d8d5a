//===- BucketAllReduces.cpp - all-reduce gradients in buckets ---*- C++ -*-===//
//
// Consecutive, independent all-reduces of one kind are merged into buckets
// (flatten, concatenate, one all-reduce, slice back), issued as soon as a
// bucket is full or one of its results is needed; casts of the results
// (autocast's) are first moved down to their first user, so they do not
// count as a need.
//
//===----------------------------------------------------------------------===//
#include "nova/Partition/Passes.h"
#include "nova/Utils/TensorBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVABUCKETALLREDUCES
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// Which all-reduces may share a bucket: same grid, axes, reduction, type.
bool sameKind(shard::AllReduceOp a, shard::AllReduceOp b) {
  auto ta = cast<RankedTensorType>(a.getInput().getType());
  auto tb = cast<RankedTensorType>(b.getInput().getType());
  return a.getGridAttr() == b.getGridAttr() &&
         a.getGridAxesAttr() == b.getGridAxesAttr() &&
         a.getReduction() == b.getReduction() &&
         ta.getElementType() == tb.getElementType();
}

struct BucketAllReducesPass
    : public nova::impl::NovaBucketAllReducesBase<BucketAllReducesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (bucketBytes <= 0)
      return;
    for (Block &block : getOperation().getBody()) {
      sinkCasts(block);
      bucketBlock(block);
    }
  }

  /// A unary elementwise linalg.generic on tensors (a cast: autocast rounds
  /// an f32-accumulated weight gradient to bf16 and extends it back to f32).
  static bool isUnaryElementwise(Operation *op) {
    auto generic = dyn_cast<linalg::GenericOp>(op);
    return generic && generic.hasPureTensorSemantics() && generic.getNumDpsInputs() == 1 &&
           generic.getNumDpsInits() == 1 &&
           generic.getNumLoops() == generic.getNumParallelLoops() &&
           isMemoryEffectFree(generic.getOperation());
  }

  /// Casts of all-reduced values (and casts of those) moved down to just
  /// before their first user: under autocast each weight gradient's
  /// all-reduce is followed at once by its rounding to bf16 and extension
  /// back to f32, which would otherwise issue every bucket with a single
  /// member. Moving a pure op later within its block changes no value.
  void sinkCasts(Block &block) {
    DenseSet<Value> reduced;
    SmallVector<Operation *> casts;
    for (Operation &op : block) {
      if (auto reduce = dyn_cast<shard::AllReduceOp>(&op)) {
        if (candidate(reduce))
          reduced.insert(reduce.getResult());
      } else if (isUnaryElementwise(&op) &&
                 reduced.contains(cast<linalg::GenericOp>(op).getDpsInputs()[0])) {
        casts.push_back(&op);
        reduced.insert(op.getResult(0));
      }
    }
    // Last first, so that a chain of casts moves down together.
    for (Operation *op : llvm::reverse(casts)) {
      Operation *first = nullptr;
      bool inBlock = true;
      for (Operation *user : op->getUsers()) {
        Operation *ancestor = block.findAncestorOpInBlock(*user);
        inBlock &= ancestor != nullptr;
        if (ancestor && (!first || ancestor->isBeforeInBlock(first)))
          first = ancestor;
      }
      if (inBlock && first && first != op->getNextNode())
        op->moveBefore(first);
    }
  }

  /// A candidate: a statically shaped, ranked, non-scalar all-reduce.
  static bool candidate(shard::AllReduceOp op) {
    auto type = dyn_cast<RankedTensorType>(op.getInput().getType());
    return type && type.hasStaticShape() && type.getRank() > 0 &&
           type == op.getResult().getType();
  }

  /// An open bucket: all-reduces of one kind waiting to be issued together.
  struct Bucket {
    SmallVector<shard::AllReduceOp> members;
    DenseSet<Value> pending; // their results
    int64_t bytes = 0;
  };

  void bucketBlock(Block &block) {
    SmallVector<Bucket> open; // one per kind (grid, axes, reduction, type)
    auto flush = [&](unsigned i, Operation *before) {
      if (open[i].members.size() > 1)
        emit(open[i].members, before);
      open.erase(open.begin() + i);
    };
    for (Operation &op : llvm::make_early_inc_range(block)) {
      // A member's result is needed here: its bucket goes first.
      for (unsigned i = open.size(); i-- > 0;) {
        bool needed = false;
        op.walk([&](Operation *nested) {
          for (Value v : nested->getOperands())
            needed |= open[i].pending.contains(v);
        });
        if (needed)
          flush(i, &op);
      }
      auto reduce = dyn_cast<shard::AllReduceOp>(&op);
      if (!reduce || !candidate(reduce))
        continue;
      int64_t size = nova::tensorBytes(cast<RankedTensorType>(reduce.getInput().getType()));
      auto it = llvm::find_if(open, [&](Bucket &bucket) {
        return sameKind(bucket.members.front(), reduce);
      });
      if (it != open.end() && it->bytes + size > bucketBytes) {
        flush(it - open.begin(), &op);
        it = open.end();
      }
      if (it == open.end()) {
        open.emplace_back();
        it = std::prev(open.end());
      }
      it->members.push_back(reduce);
      it->pending.insert(reduce.getResult());
      it->bytes += size;
      if (it->bytes >= bucketBytes)
        flush(it - open.begin(), op.getNextNode()); // full: issued right away
    }
  }

  /// Replaces `members` by one all-reduce of their concatenation, placed
  /// before `before`.
  void emit(SmallVector<shard::AllReduceOp> members, Operation *before) {
    IRRewriter b(before->getContext());
    b.setInsertionPoint(before);
    Location loc = members.back().getLoc();
    SmallVector<Value> flat;
    SmallVector<int64_t> sizes;
    for (shard::AllReduceOp member : members) {
      auto type = cast<RankedTensorType>(member.getInput().getType());
      Value value = member.getInput();
      if (type.getRank() != 1) {
        SmallVector<ReassociationIndices> all(1);
        for (int64_t d = 0; d < type.getRank(); ++d)
          all[0].push_back(d);
        value = tensor::CollapseShapeOp::create(b, loc, value, all);
      }
      flat.push_back(value);
      sizes.push_back(type.getNumElements());
    }
    Value concat = tensor::ConcatOp::create(b, loc, /*dim=*/0, flat);
    shard::AllReduceOp first = members.front();
    auto reduced = shard::AllReduceOp::create(
        b, loc, concat.getType(), first.getGridAttr(), first.getGridAxesAttr(),
        concat, first.getReductionAttr());
    int64_t offset = 0;
    for (auto [member, size] : llvm::zip_equal(members, sizes)) {
      auto type = cast<RankedTensorType>(member.getResult().getType());
      Value piece = tensor::ExtractSliceOp::create(
          b, loc, reduced.getResult(), ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(size)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      if (type.getRank() != 1) {
        SmallVector<ReassociationIndices> all(1);
        for (int64_t d = 0; d < type.getRank(); ++d)
          all[0].push_back(d);
        piece = tensor::ExpandShapeOp::create(b, loc, type, piece, all);
      }
      b.replaceOp(member, piece);
      offset += size;
    }
    ++numBuckets;
    numBucketed += members.size();
  }
};

} // namespace
