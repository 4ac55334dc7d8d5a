//===- BucketAllGathers.cpp - all-gather tensors in buckets -----*- C++ -*-===//
//
// Consecutive, independent all-gathers over one grid and set of grid axes
// (ZeRO's gathers of the updated parameter shards) are merged into buckets:
// each member's local shard flattened and concatenated, one all-gather of
// the concatenation along dim 0, and each member's gathered tensor cut back
// out of it. Chip k's block of the result is [k * S, (k + 1) * S), so member
// i's part of every block, [n, size_i], holds the n chips' shards in group
// order; unflattened to [n, shard shape] and, for a gather along dim a > 0,
// with the chip dimension moved next to dim a, its collapse is exactly what
// the member's own all-gather gives (only copies: bitwise the same values).
// Elementwise users of the gathered values (ZeRO's `decayed - update`) are
// first moved down to their first user, so they do not issue every bucket
// with a single member.
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

#define DEBUG_TYPE "nova-bucket-all-gathers"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVABUCKETALLGATHERS
#include "nova/Partition/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// Which all-gathers may share a bucket: same grid, axes and element type
/// (the gather axis may differ: each member is cut back out on its own).
bool sameKind(shard::AllGatherOp a, shard::AllGatherOp b) {
  auto ta = cast<RankedTensorType>(a.getInput().getType());
  auto tb = cast<RankedTensorType>(b.getInput().getType());
  return a.getGridAttr() == b.getGridAttr() &&
         a.getGridAxesAttr() == b.getGridAxesAttr() &&
         ta.getElementType() == tb.getElementType();
}

/// The number of chips `op` gathers from: its result over its input along
/// the gather axis.
int64_t groupSize(shard::AllGatherOp op) {
  auto in = cast<RankedTensorType>(op.getInput().getType());
  auto out = cast<RankedTensorType>(op.getResult().getType());
  int64_t axis = op.getGatherAxis().getZExtValue();
  return out.getDimSize(axis) / in.getDimSize(axis);
}

/// All dimensions of a rank-`rank` tensor folded into one.
SmallVector<ReassociationIndices> allDims(int64_t rank) {
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < rank; ++d)
    all[0].push_back(d);
  return all;
}

struct BucketAllGathersPass
    : public nova::impl::NovaBucketAllGathersBase<BucketAllGathersPass> {
  using Base::Base;

  void runOnOperation() override {
    if (bucketBytes <= 0)
      return;
    for (Block &block : getOperation().getBody()) {
      sinkUsers(block);
      bucketBlock(block);
    }
  }

  /// A pure elementwise linalg.generic on tensors.
  static bool isElementwise(Operation *op) {
    auto generic = dyn_cast<linalg::GenericOp>(op);
    return generic && generic.hasPureTensorSemantics() && generic.getNumDpsInits() == 1 &&
           generic.getNumLoops() == generic.getNumParallelLoops() && isMemoryEffectFree(op);
  }

  /// Elementwise ops of gathered values (and of those) moved down to just
  /// before their first user: ZeRO gathers each parameter's update and
  /// subtracts it from the decayed parameter right away, which would
  /// otherwise issue every bucket with a single member. Moving a pure op
  /// later within its block changes no value.
  void sinkUsers(Block &block) {
    DenseSet<Value> gathered;
    SmallVector<Operation *> users;
    for (Operation &op : block) {
      if (auto gather = dyn_cast<shard::AllGatherOp>(&op)) {
        if (candidate(gather))
          gathered.insert(gather.getResult());
      } else if (isElementwise(&op) &&
                 llvm::any_of(cast<linalg::GenericOp>(op).getDpsInputs(),
                              [&](Value v) { return gathered.contains(v); })) {
        users.push_back(&op);
        gathered.insert(op.getResult(0));
      }
    }
    // Last first, so that a chain moves down together.
    for (Operation *op : llvm::reverse(users)) {
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

  /// A candidate: statically shaped, ranked, non-scalar, gathering from
  /// more than one chip.
  static bool candidate(shard::AllGatherOp op) {
    auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(op.getResult().getType());
    if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
        in.getRank() == 0 || in.getRank() != out.getRank())
      return false;
    int64_t axis = op.getGatherAxis().getZExtValue();
    return axis < in.getRank() && in.getDimSize(axis) > 0 &&
           out.getDimSize(axis) % in.getDimSize(axis) == 0 && groupSize(op) > 1;
  }

  /// An open bucket: all-gathers of one kind waiting to be issued together.
  struct Bucket {
    SmallVector<shard::AllGatherOp> members;
    DenseSet<Value> pending; // their results
    int64_t bytes = 0;       // of the gathered results
  };

  void bucketBlock(Block &block) {
    SmallVector<Bucket> open; // one per kind (grid, axes, element type)
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
      auto gather = dyn_cast<shard::AllGatherOp>(&op);
      if (!gather || !candidate(gather))
        continue;
      int64_t size = nova::tensorBytes(cast<RankedTensorType>(gather.getResult().getType()));
      auto it = llvm::find_if(open, [&](Bucket &bucket) {
        return sameKind(bucket.members.front(), gather) &&
               groupSize(bucket.members.front()) == groupSize(gather);
      });
      if (it != open.end() && it->bytes + size > bucketBytes) {
        flush(it - open.begin(), &op);
        it = open.end();
      }
      if (it == open.end()) {
        open.emplace_back();
        it = std::prev(open.end());
      }
      it->members.push_back(gather);
      it->pending.insert(gather.getResult());
      it->bytes += size;
      if (it->bytes >= bucketBytes)
        flush(it - open.begin(), op.getNextNode()); // full: issued right away
    }
    // The rest of the open buckets go where their block ends.
    for (unsigned i = open.size(); i-- > 0;)
      flush(i, block.getTerminator());
  }

  /// Replaces `members` by one all-gather of their concatenated shards,
  /// placed before `before`.
  void emit(SmallVector<shard::AllGatherOp> members, Operation *before) {
    IRRewriter b(before->getContext());
    b.setInsertionPoint(before);
    Location loc = members.back().getLoc();
    SmallVector<Value> flat;
    SmallVector<int64_t> sizes;
    int64_t total = 0;
    for (shard::AllGatherOp member : members) {
      auto type = cast<RankedTensorType>(member.getInput().getType());
      Value value = member.getInput();
      if (type.getRank() != 1)
        value = tensor::CollapseShapeOp::create(b, loc, value, allDims(type.getRank()));
      flat.push_back(value);
      sizes.push_back(type.getNumElements());
      total += type.getNumElements();
    }
    shard::AllGatherOp first = members.front();
    Type element = cast<RankedTensorType>(first.getInput().getType()).getElementType();
    int64_t n = groupSize(first);
    Value concat = tensor::ConcatOp::create(b, loc, /*dim=*/0, flat);
    auto gathered = shard::AllGatherOp::create(
        b, loc, RankedTensorType::get({n * total}, element), first.getGridAttr(),
        first.getGridAxesAttr(), concat, b.getIndexAttr(0));
    // [n * S] -> [n, S]: row k is chip k's concatenated shards.
    Value rows = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({n, total}, element), gathered.getResult(),
        SmallVector<ReassociationIndices>{{0, 1}});
    int64_t offset = 0;
    for (auto [member, size] : llvm::zip_equal(members, sizes)) {
      auto shardType = cast<RankedTensorType>(member.getInput().getType());
      auto resultType = cast<RankedTensorType>(member.getResult().getType());
      int64_t rank = shardType.getRank();
      int64_t axis = member.getGatherAxis().getZExtValue();
      Value piece = tensor::ExtractSliceOp::create(
          b, loc, RankedTensorType::get({n, size}, element), rows,
          ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(offset)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(n), b.getIndexAttr(size)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
      // [n, size] -> [n, shard shape].
      SmallVector<int64_t> chipsFirst{n};
      llvm::append_range(chipsFirst, shardType.getShape());
      SmallVector<ReassociationIndices> unflatten{{0}, {}};
      for (int64_t d = 1; d <= rank; ++d)
        unflatten[1].push_back(d);
      piece = tensor::ExpandShapeOp::create(
          b, loc, RankedTensorType::get(chipsFirst, element), piece, unflatten);
      if (axis > 0) {
        // The chip dimension moved to just before the gather axis.
        SmallVector<int64_t> perm, shape;
        for (int64_t d = 1; d <= axis; ++d)
          perm.push_back(d);
        perm.push_back(0);
        for (int64_t d = axis + 1; d <= rank; ++d)
          perm.push_back(d);
        for (int64_t d : perm)
          shape.push_back(chipsFirst[d]);
        Value init = tensor::EmptyOp::create(b, loc, shape, element);
        piece = linalg::TransposeOp::create(b, loc, piece, init, perm)->getResult(0);
      }
      // [..., n, s_axis, ...] -> [..., n * s_axis, ...].
      SmallVector<ReassociationIndices> merge;
      for (int64_t d = 0; d < rank; ++d) {
        if (d < axis)
          merge.push_back({d});
        else if (d == axis)
          merge.push_back({d, d + 1});
        else
          merge.push_back({d + 1});
      }
      piece = tensor::CollapseShapeOp::create(b, loc, resultType, piece, merge);
      b.replaceOp(member, piece);
      offset += size;
    }
    ++numBuckets;
    numBucketed += members.size();
  }
};

} // namespace
