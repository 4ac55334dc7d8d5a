//===- BucketAllReduces.cpp - all-reduce gradients in buckets ---*- C++ -*-===//
//
// Consecutive, independent all-reduces of one kind are merged into buckets
// (flatten, concatenate, one all-reduce, slice back), issued as soon as a
// bucket is full or one of its results is needed; casts of the results
// (autocast's) are first moved down to their first user, so they do not
// count as a need. Reduce-scatters along their leading dimension (ZeRO's
// gradients) are bucketed the same way, chip-major: each chip's chunks of
// the members side by side, so that its chunk of the bucket is its chunks.
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

/// Which collectives may share a bucket: same op, grid, axes, reduction,
/// element type.
bool sameKind(Operation *a, Operation *b) {
  if (a->getName() != b->getName())
    return false;
  auto ta = cast<RankedTensorType>(a->getOperand(0).getType());
  auto tb = cast<RankedTensorType>(b->getOperand(0).getType());
  if (ta.getElementType() != tb.getElementType())
    return false;
  if (auto ra = dyn_cast<shard::AllReduceOp>(a)) {
    auto rb = cast<shard::AllReduceOp>(b);
    return ra.getGridAttr() == rb.getGridAttr() &&
           ra.getGridAxesAttr() == rb.getGridAxesAttr() &&
           ra.getReduction() == rb.getReduction();
  }
  auto sa = cast<shard::ReduceScatterOp>(a), sb = cast<shard::ReduceScatterOp>(b);
  return sa.getGridAttr() == sb.getGridAttr() &&
         sa.getGridAxesAttr() == sb.getGridAxesAttr() &&
         sa.getReduction() == sb.getReduction();
}

/// All of `type`'s dimensions in one group (to collapse to 1-D); none for
/// a 0-d tensor, which reshapes to [1] with an empty reassociation.
SmallVector<ReassociationIndices> wholeGroup(RankedTensorType type) {
  if (type.getRank() == 0)
    return {};
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    all[0].push_back(d);
  return all;
}

/// `value`, of `type`, as a 1-D tensor.
Value flatten(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  if (type.getRank() == 1)
    return value;
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({1}, type.getElementType()), value, wholeGroup(type));
  return tensor::CollapseShapeOp::create(b, loc, value, wholeGroup(type));
}

/// The 1-D `piece` back in `type`'s shape.
Value unflatten(OpBuilder &b, Location loc, Value piece, RankedTensorType type) {
  if (type.getRank() == 1)
    return piece;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, piece, wholeGroup(type));
  return tensor::ExpandShapeOp::create(b, loc, type, piece, wholeGroup(type));
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
      if (candidate(&op)) {
        reduced.insert(op.getResult(0));
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

  /// A candidate: a statically shaped, ranked all-reduce (0-d too: ZeRO's
  /// gradient-norm partial sums, one a gradient), or a reduce-scatter along
  /// its leading dimension.
  static bool candidate(Operation *op) {
    if (!isa<shard::AllReduceOp, shard::ReduceScatterOp>(op))
      return false;
    auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !result || !type.hasStaticShape() || !result.hasStaticShape())
      return false;
    if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op))
      return type.getRank() > 0 && scatter.getScatterAxis().getSExtValue() == 0 &&
             type.getShape().drop_front() == result.getShape().drop_front() &&
             result.getDimSize(0) > 0 && type.getDimSize(0) % result.getDimSize(0) == 0;
    return type == result;
  }

  /// An open bucket: all-reduces of one kind waiting to be issued together.
  struct Bucket {
    SmallVector<Operation *> members;
    DenseSet<Value> pending; // their results
    int64_t bytes = 0;
  };

  void bucketBlock(Block &block) {
    SmallVector<Bucket> open; // one per kind (op, grid, axes, reduction, type)
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
      if (!candidate(&op))
        continue;
      Operation *reduce = &op;
      int64_t size = nova::tensorBytes(cast<RankedTensorType>(reduce->getOperand(0).getType()));
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
      it->pending.insert(reduce->getResult(0));
      it->bytes += size;
      if (it->bytes >= bucketBytes)
        flush(it - open.begin(), op.getNextNode()); // full: issued right away
    }
  }

  /// Replaces `members` by one collective of their concatenation, placed
  /// before `before`.
  void emit(SmallVector<Operation *> members, Operation *before) {
    IRRewriter b(before->getContext());
    b.setInsertionPoint(before);
    Location loc = members.back()->getLoc();
    // Reduce-scatters: each member [N] as [chips, N / chips], side by side.
    auto scatter = dyn_cast<shard::ReduceScatterOp>(members.front());
    int64_t chips = 1;
    if (scatter)
      chips = cast<RankedTensorType>(scatter.getInput().getType()).getDimSize(0) /
              cast<RankedTensorType>(scatter.getResult().getType()).getDimSize(0);
    SmallVector<Value> flat;
    SmallVector<int64_t> sizes; // of each member's result
    for (Operation *member : members) {
      auto type = cast<RankedTensorType>(member->getOperand(0).getType());
      Value value = flatten(b, loc, member->getOperand(0), type);
      int64_t n = type.getNumElements();
      if (scatter)
        value = tensor::ExpandShapeOp::create(
            b, loc, RankedTensorType::get({chips, n / chips}, type.getElementType()), value,
            SmallVector<ReassociationIndices>{{0, 1}});
      flat.push_back(value);
      sizes.push_back(n / chips);
    }
    Value concat = tensor::ConcatOp::create(b, loc, /*dim=*/scatter ? 1 : 0, flat);
    Value reduced;
    if (scatter) {
      auto wide = cast<RankedTensorType>(concat.getType());
      Value rows = tensor::CollapseShapeOp::create(b, loc, concat, wholeGroup(wide));
      reduced = shard::ReduceScatterOp::create(
          b, loc, RankedTensorType::get({wide.getDimSize(1)}, wide.getElementType()),
          scatter.getGridAttr(), scatter.getGridAxesAttr(), rows, scatter.getReductionAttr(),
          scatter.getScatterAxisAttr());
    } else {
      auto first = cast<shard::AllReduceOp>(members.front());
      reduced = shard::AllReduceOp::create(b, loc, concat.getType(), first.getGridAttr(),
                                           first.getGridAxesAttr(), concat,
                                           first.getReductionAttr());
    }
    int64_t offset = 0;
    for (auto [member, size] : llvm::zip_equal(members, sizes)) {
      auto type = cast<RankedTensorType>(member->getResult(0).getType());
      Value piece = tensor::ExtractSliceOp::create(
          b, loc, reduced, ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(size)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      piece = unflatten(b, loc, piece, type);
      b.replaceOp(member, piece);
      offset += size;
    }
    ++numBuckets;
    numBucketed += members.size();
  }
};

} // namespace
