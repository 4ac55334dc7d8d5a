//===- PlanMemory.cpp - static addresses for every buffer -------*- C++ -*-===//
//
// Turns memref results into out-params, then gives every function argument,
// HBM global and alloc a byte address in its memory space (`nova.address`),
// packing SRAM, ACC and HBM intermediates by liveness. The nova -> nova_isa
// lowering reads these attributes to turn memrefs into address registers.
//
//===----------------------------------------------------------------------===//
#include "nova/Schedule/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Debug.h"

#include <deque>
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "nova-plan-memory"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAPLANMEMORY
#include "nova/Schedule/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;


/// Bytes spanned by a static memref (its extent under its layout).
static std::optional<int64_t> bufferBytes(MemRefType type) {
  if (!type.hasStaticShape())
    return std::nullopt;
  unsigned bits = type.getElementTypeBitWidth();
  if (bits == 0)
    return std::nullopt;
  int64_t eltBytes = llvm::divideCeil(bits, 8);
  if (type.getNumElements() == 0)
    return 0;
  if (type.getLayout().isIdentity())
    return type.getNumElements() * eltBytes;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  int64_t last = offset;
  for (auto [size, stride] : llvm::zip(type.getShape(), strides))
    last += (size - 1) * stride;
  return (last + 1) * eltBytes;
}

static StringRef spaceName(MemorySpace space) {
  return stringifyMemorySpace(space);
}

//===----------------------------------------------------------------------===//
// Out-params
//===----------------------------------------------------------------------===//

/// A result that is a chain of expand/collapse_shape views of a static alloc
/// of the function body is rewritten so that it is an alloc of the result
/// type and the old alloc becomes the inverse view of it. Upstream
/// `hoist-static-allocs` then replaces that alloc by the out-param with no
/// copy.
static void exposeReshapedResultAllocs(func::FuncOp func) {
  func.walk([&](func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands()) {
      auto resultType = dyn_cast<MemRefType>(operand.get().getType());
      if (!resultType || !resultType.hasStaticShape() ||
          !resultType.getLayout().isIdentity())
        continue;
      SmallVector<Operation *> chain;
      Value v = operand.get();
      while (Operation *def = v.getDefiningOp()) {
        if (auto expand = dyn_cast<memref::ExpandShapeOp>(def)) {
          chain.push_back(def);
          v = expand.getSrc();
        } else if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def)) {
          chain.push_back(def);
          v = collapse.getSrc();
        } else {
          break;
        }
      }
      auto alloc = v.getDefiningOp<memref::AllocOp>();
      if (chain.empty() || !alloc || !alloc.getType().getLayout().isIdentity())
        continue;

      OpBuilder b(alloc);
      auto newAlloc = memref::AllocOp::create(b, alloc.getLoc(), resultType,
                                              ValueRange{},
                                              alloc.getAlignmentAttr());
      Value cur = newAlloc;
      SmallVector<Operation *> created{newAlloc};
      bool ok = true;
      // chain[0] produces the result; walk back to the alloc.
      for (Operation *op : chain) {
        if (auto expand = dyn_cast<memref::ExpandShapeOp>(op)) {
          auto srcType = expand.getSrcType();
          if (!srcType.getLayout().isIdentity()) {
            ok = false;
            break;
          }
          auto inv = memref::CollapseShapeOp::create(
              b, op->getLoc(), srcType, cur, expand.getReassociationIndices());
          created.push_back(inv);
          cur = inv;
        } else {
          auto collapse = cast<memref::CollapseShapeOp>(op);
          auto srcType = collapse.getSrcType();
          if (!srcType.getLayout().isIdentity()) {
            ok = false;
            break;
          }
          auto inv = memref::ExpandShapeOp::create(
              b, op->getLoc(), srcType, cur,
              collapse.getReassociationIndices(),
              getAsIndexOpFoldResult(b.getContext(), srcType.getShape()));
          created.push_back(inv);
          cur = inv;
        }
      }
      if (!ok || cur.getType() != alloc.getType()) {
        for (Operation *op : llvm::reverse(created))
          op->erase();
        continue;
      }
      alloc.getResult().replaceAllUsesWith(cur);
      alloc->erase();
      operand.set(newAlloc);
      for (Operation *op : chain)
        if (op->use_empty())
          op->erase();
    }
  });
}

//===----------------------------------------------------------------------===//
// Liveness
//===----------------------------------------------------------------------===//

namespace {
/// Program points of one function: every op gets its pre-order number and
/// the largest number nested in it.
struct ProgramOrder {
  DenseMap<Operation *, int64_t> first, last;
  int64_t end = 0;

  explicit ProgramOrder(func::FuncOp func) {
    int64_t n = 0;
    std::function<void(Operation *)> number = [&](Operation *op) {
      first[op] = n++;
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (Operation &nested : block)
            number(&nested);
      last[op] = n - 1;
    };
    number(func);
    end = n - 1;
  }
};

struct Buffer {
  Operation *op;
  MemorySpace space;
  int64_t size;
  int64_t align;
  int64_t start = 0, end = 0;
  int64_t offset = 0;
};

/// Live range of one alloc: from the alloc to the last use of it or of a view
/// of it, in program order, where a use in a loop that does not contain the
/// alloc lasts until the end of that loop and a use that returns a token lasts
/// until the wait for that token.
class LiveRange {
public:
  LiveRange(const ProgramOrder &order, Operation *alloc)
      : order(order), alloc(alloc) {}

  FailureOr<std::pair<int64_t, int64_t>> compute() {
    int64_t end = order.first.lookup(alloc);
    SmallVector<Value> worklist(alloc->getResults());
    DenseSet<Value> seen(worklist.begin(), worklist.end());
    auto push = [&](Value v) {
      if (isa<MemRefType>(v.getType()) && seen.insert(v).second)
        worklist.push_back(v);
    };
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        end = std::max(end, usePoint(user));
        // Another chip writes it at a time this chip's program order does
        // not show: the buffer is never shared.
        if (auto dma = dyn_cast<DmaStartOp>(user);
            dma && dma.getPeer() && dma.getTarget() == v)
          return std::make_pair(int64_t{0}, order.end);
        if (auto view = dyn_cast<ViewLikeOpInterface>(user);
            view && view.getViewSource() == v) {
          for (Value r : user->getResults())
            push(r);
          continue;
        }
        // A transposed view (a matmul's weight rows read as W^T) is a view
        // too, without ViewLikeOpInterface.
        if (isa<arith::SelectOp, memref::TransposeOp>(user)) {
          push(user->getResult(0));
          continue;
        }
        if (user->hasTrait<OpTrait::IsTerminator>() ||
            isa<RegionBranchOpInterface, CallOpInterface>(user)) {
          // The buffer flows somewhere we do not follow: keep it to the end.
          if (Operation *loop = enclosingLoop(alloc))
            return loop->emitError()
                   << "a buffer allocated in this loop escapes its iteration "
                      "through '"
                   << user->getName() << "'; it cannot have a static address";
          end = order.end;
          continue;
        }
        for (Value r : user->getResults())
          if (isa<TokenType>(r.getType())) {
            FailureOr<int64_t> wait = tokenEnd(r);
            if (failed(wait))
              return failure();
            end = std::max(end, *wait);
          }
      }
    }
    return std::make_pair(order.first.lookup(alloc), end);
  }

private:
  static bool isLoop(Operation *op) { return isa<LoopLikeOpInterface>(op); }

  Operation *enclosingLoop(Operation *op) const {
    for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
      if (isLoop(p))
        return p;
    return nullptr;
  }

  /// Last program point at which `user` may touch the buffer.
  int64_t usePoint(Operation *user) const {
    int64_t p = order.last.lookup(user);
    for (Operation *a = user->getParentOp(); a; a = a->getParentOp())
      if (isLoop(a) && !a->isAncestor(alloc))
        p = std::max(p, order.last.lookup(a));
    return p;
  }

  /// Last program point of a wait on `token` (or on a value it flows into).
  FailureOr<int64_t> tokenEnd(Value token) {
    int64_t end = -1;
    SmallVector<Value> worklist{token};
    DenseSet<Value> seen{token};
    auto push = [&](Value v) {
      if (seen.insert(v).second)
        worklist.push_back(v);
    };
    while (!worklist.empty()) {
      Value t = worklist.pop_back_val();
      for (OpOperand &use : t.getUses()) {
        Operation *user = use.getOwner();
        if (isa<WaitOp>(user)) {
          end = std::max(end, usePoint(user));
          continue;
        }
        if (auto yield = dyn_cast<scf::YieldOp>(user)) {
          auto loop = dyn_cast<scf::ForOp>(yield->getParentOp());
          if (!loop) {
            end = order.end;
            continue;
          }
          if (loop->isProperAncestor(alloc))
            return loop->emitError()
                   << "a buffer allocated in this loop is still being "
                      "transferred in the next iteration; allocate it "
                      "outside the loop";
          unsigned i = use.getOperandNumber();
          push(loop.getResult(i));
          push(loop.getRegionIterArg(i));
          continue;
        }
        if (auto loop = dyn_cast<scf::ForOp>(user)) {
          if (OpResult r = loop.getTiedLoopResult(&use)) {
            push(r);
            push(loop.getTiedLoopRegionIterArg(&use));
            continue;
          }
        }
        // Unknown consumer of the token: keep the buffer to the end.
        end = order.end;
      }
    }
    // A token nobody waits for: the transfer may run to the end.
    return end < 0 ? order.end : end;
  }

  const ProgramOrder &order;
  Operation *alloc;
};

/// Notes, on an overflowing space, the largest buffers live together at the
/// point where the most bytes are live (which op to blame, with its source
/// location), so that a user sees what to shrink.
void noteLargestLive(InFlightDiagnostic &error, const std::deque<Buffer> &buffers,
                     MemorySpace space) {
  int64_t best = -1, bestBytes = 0;
  for (const Buffer &at : buffers) {
    if (at.space != space)
      continue;
    int64_t bytes = 0;
    for (const Buffer &buf : buffers)
      if (buf.space == space && buf.start <= at.start && at.start <= buf.end)
        bytes += buf.size;
    if (bytes > bestBytes) {
      bestBytes = bytes;
      best = at.start;
    }
  }
  if (best < 0)
    return;
  SmallVector<const Buffer *> live;
  for (const Buffer &buf : buffers)
    if (buf.space == space && buf.start <= best && best <= buf.end)
      live.push_back(&buf);
  llvm::sort(live, [](const Buffer *a, const Buffer *b) { return a->size > b->size; });
  error.attachNote() << bestBytes << " bytes of " << spaceName(space) << " live together in "
                     << live.size() << " buffers at the peak; the largest follow";
  for (const Buffer *buf : ArrayRef(live).take_front(3))
    error.attachNote(buf->op->getLoc()) << buf->size << " bytes: " << buf->op->getName();
}

/// First-fit packing, largest buffers first: each buffer gets the lowest
/// aligned offset that does not overlap a placed buffer live at the same
/// time. Returns the highest end address.
int64_t pack(MutableArrayRef<Buffer *> buffers) {
  llvm::stable_sort(buffers, [](Buffer *a, Buffer *b) {
    if (a->size != b->size)
      return a->size > b->size;
    return a->start < b->start;
  });
  int64_t peak = 0;
  SmallVector<Buffer *> placed;
  for (Buffer *b : buffers) {
    SmallVector<std::pair<int64_t, int64_t>> busy;
    for (Buffer *p : placed)
      if (p->start <= b->end && b->start <= p->end)
        busy.push_back({p->offset, p->offset + p->size});
    llvm::sort(busy);
    int64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (offset + b->size <= lo)
        break;
      offset = std::max(offset, static_cast<int64_t>(llvm::alignTo(hi, b->align)));
    }
    b->offset = offset;
    peak = std::max(peak, offset + b->size);
    placed.push_back(b);
  }
  return peak;
}
} // namespace

//===----------------------------------------------------------------------===//
// Pass
//===----------------------------------------------------------------------===//

namespace {
struct PlanMemoryPass : public nova::impl::NovaPlanMemoryBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      module.emitError() << "alignment must be a power of two, got "
                         << alignment;
      return signalPassFailure();
    }
    if (failed(makeOutParams(module)) || failed(plan(module)))
      return signalPassFailure();
  }

  LogicalResult makeOutParams(ModuleOp module) {
    DenseMap<func::FuncOp, unsigned> numInputs;
    for (auto func : module.getOps<func::FuncOp>()) {
      numInputs[func] = func.getNumArguments();
      if (func.isExternal())
        continue;
      exposeReshapedResultAllocs(func);
      // Upstream hoisting erases a returned alloc once per result: a buffer
      // returned twice (`return %a, %a` after CSE) is returned once and
      // copied by DMA into a buffer of its own for each repeat.
      func.walk([&](func::ReturnOp ret) {
        DenseSet<Value> returned;
        OpBuilder b(ret);
        for (OpOperand &operand : ret->getOpOperands()) {
          Value v = operand.get();
          auto type = dyn_cast<MemRefType>(v.getType());
          if (!type || !v.getDefiningOp() || returned.insert(v).second)
            continue;
          auto own = MemRefType::get(type.getShape(), type.getElementType(),
                                     MemRefLayoutAttrInterface(),
                                     type.getMemorySpace());
          Value copy = memref::AllocOp::create(b, ret.getLoc(), own);
          Value token =
              DmaStartOp::create(b, ret.getLoc(), TokenType::get(b.getContext()),
                                 v, copy, /*peer=*/IntegerAttr());
          WaitOp::create(b, ret.getLoc(), ValueRange{token});
          operand.set(copy);
          ++numRepeatedResults;
        }
      });
    }

    // A donated input's buffer holds its result at the end of the run: the
    // result is returned as the input itself (copied in when bufferization
    // could not write it in place), and its out-param gets no copy and no
    // space of its own.
    DenseSet<std::pair<Value, unsigned>> donatedOut; // (input, out-param #)
    for (auto func : module.getOps<func::FuncOp>()) {
      // No results left: out-params were made by an earlier run.
      if (func.isExternal() || func.getNumResults() == 0)
        continue;
      SmallVector<func::ReturnOp> returns(func.getOps<func::ReturnOp>());
      for (BlockArgument arg : func.getArguments()) {
        auto k = func.getArgAttrOfType<IntegerAttr>(
            arg.getArgNumber(), NovaDialect::AliasingOutputAttrHelper::getNameStr());
        if (!k)
          continue;
        if (k.getInt() < 0 || k.getInt() >= func.getNumResults() ||
            func.getResultTypes()[k.getInt()] != arg.getType())
          return func.emitError()
                 << "argument " << arg.getArgNumber() << ": '"
                 << NovaDialect::AliasingOutputAttrHelper::getNameStr() << "' = " << k.getInt()
                 << " names no result of its type " << arg.getType();
        unsigned result = k.getInt();
        for (func::ReturnOp ret : returns) {
          Value value = ret.getOperand(result);
          if (value == arg)
            continue;
          OpBuilder b(ret);
          Value token =
              DmaStartOp::create(b, ret.getLoc(), TokenType::get(b.getContext()),
                                 value, arg, /*peer=*/IntegerAttr());
          WaitOp::create(b, ret.getLoc(), ValueRange{token});
          ret.setOperand(result, arg);
          ++numAliasCopies;
        }
        unsigned outParam = func.getNumArguments();
        for (Type type : func.getResultTypes().take_front(result))
          outParam += isa<MemRefType>(type);
        donatedOut.insert({arg, outParam});
      }
    }

    bufferization::BufferResultsToOutParamsOpts options;
    options.hoistStaticAllocs = true;
    options.modifyPublicFunctions = true;
    // A result that is not an alloc of the function (an argument, a global)
    // is copied into the out-param by DMA, which the ISA lowering handles.
    DenseMap<Value, BlockArgument> aliasOf; // out-param -> donated input
    options.memCpyFn = [&](OpBuilder &b, Location loc, Value from, Value to) {
      auto out = dyn_cast<BlockArgument>(to);
      if (out && donatedOut.contains({from, out.getArgNumber()})) {
        aliasOf[out] = cast<BlockArgument>(from);
        return success();
      }
      Value token = DmaStartOp::create(b, loc, TokenType::get(b.getContext()),
                                       from, to, /*peer=*/IntegerAttr());
      WaitOp::create(b, loc, ValueRange{token});
      return success();
    };
    if (failed(bufferization::promoteBufferResultsToOutParams(module, options)))
      return failure();

    MLIRContext *ctx = module.getContext();
    for (auto func : module.getOps<func::FuncOp>()) {
      unsigned inputs = numInputs.lookup(func);
      // A role set by an earlier run (or by hand) stays.
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
        if (isa<MemRefType>(func.getArgumentTypes()[i]) &&
            !func.getArgAttr(i, NovaDialect::RoleAttrHelper::getNameStr()))
          func.setArgAttr(i, NovaDialect::RoleAttrHelper::getNameStr(),
                          StringAttr::get(ctx, i < inputs ? "input" : "output"));
      numOutParams += func.getNumArguments() - inputs;
    }
    for (auto [out, input] : aliasOf) {
      auto func = cast<func::FuncOp>(input.getOwner()->getParentOp());
      func.setArgAttr(cast<BlockArgument>(out).getArgNumber(),
          NovaDialect::AliasesAttrHelper::getNameStr(),
                      Builder(ctx).getI64IntegerAttr(input.getArgNumber()));
    }
    return success();
  }

  LogicalResult plan(ModuleOp module) {
    TargetAttr target = lookupTarget(module);
    Builder b(module.getContext());
    auto alignUp = [&](int64_t v) -> int64_t {
      return llvm::alignTo(v, alignment);
    };

    // Arguments of each function from 0, in order.
    int64_t argsEnd = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      // Stacked arguments: each member lies at its slot of its stack.
      DenseMap<unsigned, std::pair<unsigned, int64_t>> stackSlot;
      for (unsigned s = 0, e = func.getNumArguments(); s < e; ++s) {
        auto members = func.getArgAttrOfType<DenseI64ArrayAttr>(s,
            NovaDialect::StackOfAttrHelper::getNameStr());
        if (!members)
          continue;
        auto stack = dyn_cast<MemRefType>(func.getArgumentTypes()[s]);
        if (!stack || !stack.getLayout().isIdentity() || stack.getRank() < 1 ||
            stack.getDimSize(0) != int64_t(members.size()))
          return func.emitError()
                 << "argument " << s << ": '" << NovaDialect::StackOfAttrHelper::getNameStr()
                 << "' needs a memref with an identity layout whose first "
                    "dimension counts its members, got "
                 << func.getArgumentTypes()[s];
        for (auto [k, m] : llvm::enumerate(members.asArrayRef())) {
          auto member = m >= 0 && m < e ? dyn_cast<MemRefType>(
                                              func.getArgumentTypes()[m])
                                        : MemRefType();
          if (!member || !member.getLayout().isIdentity() ||
              member.getShape() != stack.getShape().drop_front() ||
              member.getElementType() != stack.getElementType() ||
              func.getArgAttr(m, NovaDialect::StackOfAttrHelper::getNameStr()) ||
              !stackSlot.insert({unsigned(m), {s, int64_t(k)}}).second)
            return func.emitError()
                   << "argument " << s << ": '" <<
                       NovaDialect::StackOfAttrHelper::getNameStr() << "' member " << m
                   << " is not one slot of the stack (an argument of type "
                   << stack.getShape().drop_front() << " in no other stack)";
        }
      }
      int64_t cursor = 0;
      for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
        auto memref = dyn_cast<MemRefType>(type);
        if (!memref || stackSlot.contains(i))
          continue;
        std::optional<MemorySpace> space = getMemorySpace(memref);
        if (space != MemorySpace::HBM)
          return func.emitError()
                 << "argument " << i << " of function '" << func.getSymName()
                 << "' must live in hbm, got " << memref;
        std::optional<int64_t> bytes = bufferBytes(memref);
        if (!bytes)
          return func.emitError() << "argument " << i << " of function '"
                                  << func.getSymName()
                                  << "' needs a static size, got " << memref;
        if (auto input = func.getArgAttrOfType<IntegerAttr>(i,
            NovaDialect::AliasesAttrHelper::getNameStr())) {
          // Shares the donated input's buffer (placed before it: inputs
          // come first).
          func.setArgAttr(i, NovaDialect::AddressAttrHelper::getNameStr(),
                          func.getArgAttrOfType<IntegerAttr>(
                              input.getInt(), NovaDialect::AddressAttrHelper::getNameStr()));
          continue;
        }
        func.setArgAttr(i,
            NovaDialect::AddressAttrHelper::getNameStr(), b.getI64IntegerAttr(cursor));
        cursor = alignUp(cursor + *bytes);
      }
      for (auto [member, slot] : stackSlot) {
        auto type = cast<MemRefType>(func.getArgumentTypes()[member]);
        int64_t base = func.getArgAttrOfType<IntegerAttr>(slot.first,
            NovaDialect::AddressAttrHelper::getNameStr())
                           .getInt();
        func.setArgAttr(member, NovaDialect::AddressAttrHelper::getNameStr(),
                        b.getI64IntegerAttr(base + slot.second *
                                                       *bufferBytes(type)));
      }
      argsEnd = std::max(argsEnd, cursor);
    }

    // Globals after the largest argument block.
    int64_t globalsEnd = argsEnd;
    for (auto global : module.getOps<memref::GlobalOp>()) {
      MemRefType type = global.getType();
      if (getMemorySpace(type) != MemorySpace::HBM)
        return global.emitError()
               << "global must live in hbm to get an address, got " << type;
      std::optional<int64_t> bytes = bufferBytes(type);
      if (!bytes)
        return global.emitError() << "global needs a static size";
      int64_t align = alignment;
      if (std::optional<uint64_t> a = global.getAlignment())
        align = std::max<int64_t>(align, *a);
      int64_t addr = llvm::alignTo(globalsEnd, align);
      global->setAttr(NovaDialect::AddressAttrHelper::getNameStr(), b.getI64IntegerAttr(addr));
      globalsEnd = alignUp(addr + *bytes);
      ++numBuffers;
    }

    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(planFunction(func, target, globalsEnd)))
        return failure();
    return success();
  }

  /// The end of the first loop nest of the function body that starts after
  /// program point `end` (or `end` if there is none). A buffer kept live
  /// until then shares no address with the buffers of the next op's loop
  /// nest, which can then start (load its first tiles, write its
  /// accumulators) while this op's tail still runs, instead of waiting for
  /// it through a reused address.
  /// `nests` holds the (first, last) program points of the function body's
  /// loop nests in order (one scan of the body for all buffers: a scan per
  /// buffer was most of the pass's time on a training step).
  static int64_t
  separatedEnd(ArrayRef<std::pair<int64_t, int64_t>> nests, int64_t end) {
    const auto *next = llvm::upper_bound(
        nests, end, [](int64_t v, const std::pair<int64_t, int64_t> &nest) {
          return v < nest.first;
        });
    return next == nests.end() ? end : std::max(end, next->second);
  }

  LogicalResult planFunction(func::FuncOp func, TargetAttr target,
                             int64_t hbmBase) {
    ProgramOrder order(func);
    std::deque<Buffer> buffers;
    WalkResult walk = func.walk([&](Operation *op) {
      if (!isa<memref::AllocOp, memref::AllocaOp>(op))
        return WalkResult::advance();
      auto type = cast<MemRefType>(op->getResult(0).getType());
      std::optional<MemorySpace> space = getMemorySpace(type);
      if (!space)
        return op->emitError() << "buffer has no nova memory space: " << type,
               WalkResult::interrupt();
      std::optional<int64_t> bytes = bufferBytes(type);
      if (!bytes)
        return op->emitError() << "buffer needs a static size, got " << type,
               WalkResult::interrupt();
      int64_t align = alignment;
      if (auto a = op->getAttrOfType<IntegerAttr>("alignment"))
        align = std::max<int64_t>(align, a.getInt());
      FailureOr<std::pair<int64_t, int64_t>> range =
          LiveRange(order, op).compute();
      if (failed(range))
        return WalkResult::interrupt();
      Buffer &buf = buffers.emplace_back();
      buf.op = op;
      buf.space = *space;
      buf.size = std::max<int64_t>(llvm::alignTo(*bytes, align), align);
      buf.align = align;
      buf.start = range->first;
      buf.end = range->second;
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();

    Builder b(func.getContext());
    int64_t peaks[3] = {0, 0, 0};
    for (MemorySpace space :
         {MemorySpace::HBM, MemorySpace::SRAM, MemorySpace::ACC}) {
      SmallVector<Buffer *> inSpace;
      for (Buffer &buf : buffers)
        if (buf.space == space)
          inSpace.push_back(&buf);
      int64_t base = space == MemorySpace::HBM ? hbmBase : 0;
      int64_t peak = -1;
      if (separateOps && target) {
        // First try with every buffer kept out of the next loop nest's way
        // (see separatedEnd); if that does not fit, pack by liveness alone.
        int64_t capacity = space == MemorySpace::SRAM ? target.getSramBytes()
                           : space == MemorySpace::ACC ? target.getAccBytes()
                                                       : target.getHbmBytes();
        SmallVector<std::pair<int64_t, int64_t>> nests;
        for (Operation &op : func.getBody().front())
          if (isa<LoopLikeOpInterface>(op))
            nests.push_back({order.first.lookup(&op), order.last.lookup(&op)});
        DenseMap<Buffer *, int64_t> ends; // pack() reorders inSpace
        for (Buffer *buf : inSpace) {
          ends[buf] = buf->end;
          buf->end = separatedEnd(nests, buf->end);
        }
        peak = pack(inSpace) + base;
        for (Buffer *buf : inSpace)
          buf->end = ends.lookup(buf);
        if (peak > capacity)
          peak = -1;
        else
          ++numSeparated;
      }
      if (peak < 0)
        peak = pack(inSpace) + base;
      if (space == MemorySpace::HBM)
        peak = std::max(peak, hbmBase);
      for (Buffer *buf : inSpace) {
        buf->op->setAttr(
            NovaDialect::AddressAttrHelper::getNameStr(), b.getI64IntegerAttr(base + buf->offset));
        LLVM_DEBUG(llvm::dbgs() << spaceName(space) << " [" << buf->start
                                << ", " << buf->end << "] " << buf->size
                                << " bytes at " << base + buf->offset << ": "
                                << *buf->op << "\n");
      }
      numBuffers += inSpace.size();
      peaks[static_cast<unsigned>(space)] = peak;
    }

    int64_t hbm = peaks[static_cast<unsigned>(MemorySpace::HBM)];
    int64_t sram = peaks[static_cast<unsigned>(MemorySpace::SRAM)];
    int64_t acc = peaks[static_cast<unsigned>(MemorySpace::ACC)];
    func->setAttr(NovaDialect::SramPeakAttrHelper::getNameStr(), b.getI64IntegerAttr(sram));
    func->setAttr(NovaDialect::AccPeakAttrHelper::getNameStr(), b.getI64IntegerAttr(acc));
    func->setAttr(NovaDialect::HbmPeakAttrHelper::getNameStr(), b.getI64IntegerAttr(hbm));
    sramPeak.updateMax(sram);
    accPeak.updateMax(acc);
    hbmPeak.updateMax(hbm);

    {
      InFlightDiagnostic remark = func.emitRemark();
      remark << "sram peak " << sram << " bytes";
      if (target)
        remark << " of " << target.getSramBytes();
      remark << ", acc peak " << acc << " bytes";
      if (target)
        remark << " of " << target.getAccBytes();
      remark << ", hbm peak " << hbm << " bytes";
      if (target)
        remark << " of " << target.getHbmBytes();
    }

    if (!target)
      return success();
    bool fits = true;
    for (auto [space, peak, capacity] :
         {std::tuple{MemorySpace::SRAM, sram, target.getSramBytes()},
          std::tuple{MemorySpace::ACC, acc, target.getAccBytes()},
          std::tuple{MemorySpace::HBM, hbm, target.getHbmBytes()}}) {
      if (peak <= capacity)
        continue;
      InFlightDiagnostic error =
          func.emitError() << "function '" << func.getSymName() << "' needs "
                           << peak << " bytes of " << spaceName(space)
                           << " but target '" << target.getName() << "' has "
                           << capacity;
      noteLargestLive(error, buffers, space);
      fits = false;
    }
    return success(fits);
  }
};
} // namespace
