//===- RollLayers.cpp - one loop over identical layers ----------*- C++ -*-===//
//
// A model of L identical layers reaches linalg as L straight-line copies of
// one layer. This pass finds the longest run of consecutive isomorphic
// regions of a function body (same ops, attributes and types; operands that
// differ between regions only as per-layer function arguments or as the
// value carried from one region to the next) and rolls it into one scf.for
// over layers. The per-layer arguments are read from a stacked argument
// appended to the function, whose `nova.stack_of` attribute asks
// nova-plan-memory to lay the original arguments out contiguously inside it.
//
//===----------------------------------------------------------------------===//
#include "nova/Input/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "nova-roll-layers"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAROLLLAYERS
#include "nova/Input/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;

namespace {

/// The module an op ran in: its first `module:<path>` name location (the
/// frontend's, from torch.export's nn_module_stack), or "".
StringRef moduleOf(Location loc) {
  StringRef module;
  loc->walk([&](Location inner) {
    if (auto name = dyn_cast<NameLoc>(inner))
      if (name.getName().getValue().starts_with("module:")) {
        module = name.getName().getValue().drop_front(7);
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return module;
}

/// `a` and `b`'s longest common prefix of whole dotted components.
StringRef commonModulePrefix(StringRef a, StringRef b) {
  size_t end = 0;
  for (size_t i = 0; i <= a.size() && i <= b.size(); ++i) {
    bool boundaryA = i == a.size() || a[i] == '.';
    bool boundaryB = i == b.size() || b[i] == '.';
    if (boundaryA && boundaryB)
      end = i;
    if (i == a.size() || i == b.size() || a[i] != b[i])
      break;
  }
  return a.take_front(end);
}

/// The module path of each layer of a rolled run (`blocks.0`, `blocks.1`,
/// ...): every region's ops ran in modules under its own prefix, the same
/// modules below it as region 0's. Empty when the regions do not follow
/// modules that way (e.g. a region that straddles two blocks).
SmallVector<std::string> layerModules(ArrayRef<Operation *> ops, unsigned start,
                                      unsigned period, unsigned count) {
  SmallVector<StringRef> prefixes;
  for (unsigned k = 0; k < count; ++k) {
    std::optional<StringRef> prefix;
    for (unsigned j = 0; j < period; ++j) {
      StringRef m = moduleOf(ops[start + k * period + j]->getLoc());
      if (!m.empty())
        prefix = prefix ? commonModulePrefix(*prefix, m) : m;
    }
    if (!prefix || prefix->empty() || llvm::is_contained(prefixes, *prefix))
      return {};
    prefixes.push_back(*prefix);
  }
  for (unsigned k = 1; k < count; ++k)
    for (unsigned j = 0; j < period; ++j) {
      StringRef first = moduleOf(ops[start + j]->getLoc());
      StringRef other = moduleOf(ops[start + k * period + j]->getLoc());
      if (first.empty() != other.empty() ||
          first.drop_front(prefixes[0].size()) != other.drop_front(prefixes[k].size()))
        return {};
    }
  SmallVector<std::string> result;
  for (StringRef p : prefixes)
    result.push_back(p.str());
  return result;
}

/// Whether argument `arg` carries an attribute other than its `nova.name` (which a
/// stack replaces by one name for all its members; other attributes must stay).
bool hasAttrsBesidesName(func::FuncOp fn, BlockArgument arg) {
  DictionaryAttr attrs = fn.getArgAttrDict(arg.getArgNumber());
  if (!attrs)
    return false;
  return llvm::any_of(attrs, [](NamedAttribute a) {
    return a.getName() != nova::NovaDialect::NameAttrHelper::getNameStr();
  });
}

/// One name for a stack of per-layer arguments: their names' common prefix and
/// suffix around a `*` (`h.0.attn.weight` ... `h.11.attn.weight` give
/// `h.*.attn.weight`, the form parallel plans use), or none when a member is unnamed.
std::optional<std::string> stackName(func::FuncOp fn, ArrayRef<BlockArgument> members) {
  SmallVector<StringRef> names;
  for (BlockArgument a : members) {
    auto name = fn.getArgAttrOfType<StringAttr>(a.getArgNumber(),
                                                nova::NovaDialect::NameAttrHelper::getNameStr());
    if (!name)
      return std::nullopt;
    names.push_back(name.getValue());
  }
  size_t prefix = names.front().size(), suffix = names.front().size();
  for (StringRef n : ArrayRef(names).drop_front()) {
    StringRef first = names.front();
    size_t p = 0;
    while (p < std::min(prefix, n.size()) && first[p] == n[p])
      ++p;
    prefix = p;
    size_t q = 0;
    while (q < std::min(suffix, n.size()) && first[first.size() - 1 - q] == n[n.size() - 1 - q])
      ++q;
    suffix = q;
  }
  StringRef first = names.front();
  if (prefix + suffix >= first.size())
    return first.str();
  // Whole path components only: `h.1.w` and `h.11.w` share `h.1`, not a component.
  size_t dot = first.take_front(prefix).rfind('.');
  prefix = dot == StringRef::npos ? 0 : dot + 1;
  size_t back = first.take_back(suffix).find('.');
  suffix = back == StringRef::npos ? 0 : suffix - back;
  return (first.take_front(prefix) + "*" + first.take_back(suffix)).str();
}

/// The side-effect-free ops that depend on no function argument (constants,
/// empty tensors, zero fills, a causal mask), in order. CSE shares them
/// between layers, which leaves them inside the first layer only; the
/// search sees them at the top of the body, where `hoist` moves them when a
/// run is rolled.
SmallVector<Operation *> argumentFreeOps(Block &body) {
  DenseSet<Operation *> free;
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator()) {
    if (!isMemoryEffectFree(&op))
      continue;
    auto definedFree = [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && free.contains(def);
    };
    if (!llvm::all_of(op.getOperands(), definedFree))
      continue;
    bool capturesOther = false;
    visitUsedValuesDefinedAbove(op.getRegions(), [&](OpOperand *use) {
      capturesOther |= !definedFree(use->get());
    });
    if (capturesOther)
      continue;
    free.insert(&op);
    ops.push_back(&op);
  }
  return ops;
}

void hoist(Block &body, ArrayRef<Operation *> ops) {
  Operation *after = nullptr;
  for (Operation *op : ops) {
    if (after)
      op->moveAfter(after);
    else
      op->moveBefore(&body, body.begin());
    after = op;
  }
}

/// How an operand of a region's op is found in every region.
struct OperandClass {
  enum Kind { Internal, Invariant, Carried, Stacked } kind = Invariant;
  unsigned index = 0; // carried slot or stack
};

/// A result carried from region k to region k + 1 (and out of the last).
struct CarriedSlot {
  unsigned pos, result;
  Value init;
};

/// A run of `count` regions of `period` ops from `start`, checked.
struct Plan {
  unsigned start = 0, period = 0, count = 0;
  SmallVector<SmallVector<OperandClass>> operands; // [pos][operand]
  SmallVector<CarriedSlot> carried;
  SmallVector<SmallVector<BlockArgument>> stacks; // [stack][layer]
};

/// Whether `v` is a fresh destination made outside `loop`: a tensor.empty,
/// or a linalg.fill of one (a zero accumulator).
bool isOutsideDestination(Value v, Operation *loop) {
  Operation *def = v.getDefiningOp();
  if (!def || loop->isAncestor(def))
    return false;
  if (isa<tensor::EmptyOp>(def))
    return true;
  auto fill = dyn_cast<linalg::FillOp>(def);
  return fill && fill.hasPureTensorSemantics() &&
         fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

/// Gives the ops of a loop over layers their destinations inside the loop:
/// an empty tensor or zero fill shared with ops outside (CSE shares them
/// between layers) is made again in the body, so that each iteration
/// writes buffers of its own instead of copying the shared one; and each
/// carried value is written over the one it replaces (the layer's output
/// into its input's buffer) when its producer only writes its destination,
/// so that bufferization yields the loop-carried buffer in place.
void giveLayerLoopDestinations(scf::ForOp loop) {
  Block *body = loop.getBody();
  OpBuilder b = OpBuilder::atBlockBegin(body);
  IRMapping cloned;
  loop.getBody()->walk([&](DestinationStyleOpInterface op) {
    for (OpOperand &init : op.getDpsInitsMutable()) {
      Value v = init.get();
      if (!isOutsideDestination(v, loop))
        continue;
      if (Value copy = cloned.lookupOrNull(v)) {
        init.set(copy);
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (auto fill = dyn_cast<linalg::FillOp>(def)) {
        Value empty = fill.getOutputs()[0];
        if (!cloned.contains(empty))
          b.clone(*empty.getDefiningOp(), cloned);
      }
      b.clone(*def, cloned);
      init.set(cloned.lookup(v));
    }
  });

  auto yield = cast<scf::YieldOp>(body->getTerminator());
  for (auto [iterArg, yielded] :
       llvm::zip(loop.getRegionIterArgs(), yield.getOperands())) {
    // Through the reshapes between the producer and the yield.
    SmallVector<Operation *> reshapes;
    Value v = yielded;
    while (Operation *def = v.getDefiningOp()) {
      if (!body->findAncestorOpInBlock(*def) ||
          !isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
        break;
      reshapes.push_back(def);
      v = def->getOperand(0);
    }
    auto producer = v.getDefiningOp<linalg::LinalgOp>();
    if (!producer || producer->getBlock() != body ||
        !producer.hasPureTensorSemantics())
      continue;
    OpOperand *init = producer.getDpsInitOperand(cast<OpResult>(v).getResultNumber());
    if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
        producer.payloadUsesValueFromOperand(init))
      continue;
    OpBuilder at(producer);
    Value dest = iterArg;
    for (Operation *reshape : reshapes) {
      if (auto expand = dyn_cast<tensor::ExpandShapeOp>(reshape))
        dest = tensor::CollapseShapeOp::create(at, reshape->getLoc(),
                                               expand.getSrcType(), dest,
                                               expand.getReassociationIndices());
      else {
        auto collapse = cast<tensor::CollapseShapeOp>(reshape);
        dest = tensor::ExpandShapeOp::create(at, reshape->getLoc(),
                                             collapse.getSrcType(), dest,
                                             collapse.getReassociationIndices());
      }
    }
    if (dest.getType() != init->get().getType())
      continue;
    init->set(dest);
  }
}

struct RollLayersPass
    : public nova::impl::NovaRollLayersBase<RollLayersPass> {
  using Base::Base;

  void runOnOperation() override;

private:
  std::optional<Plan> check(func::FuncOp fn, ArrayRef<Operation *> ops,
                            const DenseMap<Operation *, unsigned> &position,
                            unsigned start, unsigned period, unsigned count);
  void roll(func::FuncOp fn, ArrayRef<Operation *> ops, const Plan &plan);
};

/// Whether `fn` is a program this pass may change.
bool rollable(func::FuncOp fn) {
  if (fn.isExternal())
    return false;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    if (fn.getArgAttr(i, nova::NovaDialect::AliasingOutputAttrHelper::getNameStr()))
      return false; // a training step's donated state
  WalkResult walk = fn.walk([](Operation *op) {
    StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
    if (ns == "shard" || ns == "nova")
      return WalkResult::interrupt(); // partitioned or collective programs
    return WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

std::optional<Plan>
RollLayersPass::check(func::FuncOp fn, ArrayRef<Operation *> ops,
                      const DenseMap<Operation *, unsigned> &position,
                      unsigned start, unsigned period, unsigned count) {
  Plan plan;
  plan.start = start;
  plan.period = period;
  plan.count = count;
  unsigned end = start + period * count;
  // (region, position) of a top-level op of the run, if it is in the run.
  auto where = [&](Operation *op) -> std::optional<std::pair<unsigned, unsigned>> {
    if (!op)
      return std::nullopt;
    auto it = position.find(op);
    if (it == position.end() || it->second < start || it->second >= end)
      return std::nullopt;
    return std::make_pair((it->second - start) / period,
                          (it->second - start) % period);
  };
  auto resultNumber = [](Value v) {
    return cast<OpResult>(v).getResultNumber();
  };
  // Arguments already stacked (by an earlier run) or stacks themselves.
  DenseMap<BlockArgument, std::pair<unsigned, unsigned>> stackOf;
  for (BlockArgument arg : fn.getArguments())
    if (fn.getArgAttr(arg.getArgNumber(), nova::NovaDialect::StackOfAttrHelper::getNameStr()))
      stackOf[arg] = {~0u, 0};
  for (BlockArgument arg : fn.getArguments())
    if (auto members = fn.getArgAttrOfType<DenseI64ArrayAttr>(arg.getArgNumber(),
        nova::NovaDialect::StackOfAttrHelper::getNameStr()))
      for (int64_t m : members.asArrayRef())
        if (m >= 0 && m < fn.getNumArguments())
          stackOf[fn.getArgument(m)] = {~0u, 0};

  plan.operands.resize(period);
  for (unsigned j = 0; j < period; ++j) {
    Operation *first = ops[start + j];
    if (first->getNumSuccessors() != 0 || first->hasTrait<OpTrait::IsTerminator>())
      return std::nullopt;
    for (unsigned k = 1; k < count; ++k) {
      Operation *other = ops[start + k * period + j];
      if (other->getNumOperands() != first->getNumOperands())
        return std::nullopt;
      DenseSet<std::pair<Value, Value>> top;
      for (auto [a, b] : llvm::zip(first->getOperands(), other->getOperands()))
        top.insert({a, b});
      // Values of nested regions (block arguments, results) are matched as
      // the comparison walks them; values from outside must be the same.
      DenseMap<Value, Value> nested;
      auto same = [&](Value a, Value b) {
        return success(a == b || top.contains({a, b}) ||
                       nested.lookup(a) == b);
      };
      auto mark = [&](Value a, Value b) { nested[a] = b; };
      if (!OperationEquivalence::isEquivalentTo(
              first, other, same, mark, OperationEquivalence::IgnoreLocations))
        return std::nullopt;
    }
    for (unsigned i = 0, e = first->getNumOperands(); i < e; ++i) {
      SmallVector<Value> vs;
      for (unsigned k = 0; k < count; ++k)
        vs.push_back(ops[start + k * period + j]->getOperand(i));
      OperandClass cls;
      auto d0 = where(vs[0].getDefiningOp());
      if (d0) {
        // Defined in region 0: the same op's result in every region.
        if (d0->first != 0)
          return std::nullopt;
        for (unsigned k = 1; k < count; ++k) {
          auto dk = where(vs[k].getDefiningOp());
          if (!dk || dk->first != k || dk->second != d0->second ||
              resultNumber(vs[k]) != resultNumber(vs[0]))
            return std::nullopt;
        }
        cls.kind = OperandClass::Internal;
        plan.operands[j].push_back(cls);
        continue;
      }
      auto d1 = where(vs[1].getDefiningOp());
      if (d1) {
        // Carried: region k reads region k - 1's result.
        if (d1->first != 0)
          return std::nullopt;
        unsigned result = resultNumber(vs[1]);
        for (unsigned k = 2; k < count; ++k) {
          auto dk = where(vs[k].getDefiningOp());
          if (!dk || dk->first != k - 1 || dk->second != d1->second ||
              resultNumber(vs[k]) != result)
            return std::nullopt;
        }
        if (vs[0].getType() != vs[1].getType())
          return std::nullopt;
        auto slot = llvm::find_if(plan.carried, [&](const CarriedSlot &s) {
          return s.pos == d1->second && s.result == result;
        });
        if (slot == plan.carried.end()) {
          plan.carried.push_back({d1->second, result, vs[0]});
          slot = std::prev(plan.carried.end());
        } else if (slot->init != vs[0]) {
          return std::nullopt;
        }
        cls.kind = OperandClass::Carried;
        cls.index = slot - plan.carried.begin();
        plan.operands[j].push_back(cls);
        continue;
      }
      for (unsigned k = 1; k < count; ++k)
        if (where(vs[k].getDefiningOp()))
          return std::nullopt;
      if (llvm::all_equal(vs)) {
        cls.kind = OperandClass::Invariant;
        plan.operands[j].push_back(cls);
        continue;
      }
      // A per-layer argument: distinct arguments of one static tensor type.
      SmallVector<BlockArgument> args;
      for (Value v : vs) {
        auto arg = dyn_cast<BlockArgument>(v);
        if (!arg || arg.getOwner() != &fn.getBody().front() ||
            arg.getType() != vs[0].getType())
          return std::nullopt;
        args.push_back(arg);
      }
      auto type = dyn_cast<RankedTensorType>(vs[0].getType());
      if (!type || type.getRank() == 0 || !type.hasStaticShape())
        return std::nullopt;
      auto stack = llvm::find(plan.stacks, args);
      if (stack == plan.stacks.end()) {
        for (auto [k, arg] : llvm::enumerate(args)) {
          if (stackOf.contains(arg) || hasAttrsBesidesName(fn, arg))
            return std::nullopt; // in another stack, or an attribute to keep
          stackOf[arg] = {unsigned(plan.stacks.size()), unsigned(k)};
        }
        plan.stacks.push_back(args);
        stack = std::prev(plan.stacks.end());
      }
      cls.kind = OperandClass::Stacked;
      cls.index = stack - plan.stacks.begin();
      plan.operands[j].push_back(cls);
    }
  }

  // Results leave a region only to the next one, at a carried slot, or out
  // of the last region; a nested op of region k + 1 never reads one.
  auto isCarried = [&](unsigned pos, unsigned result) {
    return llvm::any_of(plan.carried, [&](const CarriedSlot &s) {
      return s.pos == pos && s.result == result;
    });
  };
  Block &body = fn.getBody().front();
  for (unsigned k = 0; k < count; ++k)
    for (unsigned j = 0; j < period; ++j)
      for (OpResult r : ops[start + k * period + j]->getResults())
        for (OpOperand &use : r.getUses()) {
          Operation *owner = body.findAncestorOpInBlock(*use.getOwner());
          auto at = where(owner);
          if (at && at->first == k)
            continue;
          if (at && at->first == k + 1 && owner == use.getOwner() &&
              isCarried(j, r.getResultNumber()))
            continue;
          if (!at && k + 1 == count && isCarried(j, r.getResultNumber()))
            continue;
          return std::nullopt;
        }
  return plan;
}

void RollLayersPass::roll(func::FuncOp fn, ArrayRef<Operation *> ops,
                          const Plan &plan) {
  MLIRContext *ctx = fn.getContext();
  Operation *first = ops[plan.start];
  Location loc = first->getLoc();

  // One stacked argument per per-layer argument tuple.
  SmallVector<BlockArgument> stackArgs;
  for (ArrayRef<BlockArgument> members : plan.stacks) {
    auto type = cast<RankedTensorType>(members.front().getType());
    SmallVector<int64_t> shape{int64_t(plan.count)};
    llvm::append_range(shape, type.getShape());
    auto stacked = RankedTensorType::get(shape, type.getElementType());
    SmallVector<int64_t> positions;
    for (BlockArgument a : members)
      positions.push_back(a.getArgNumber());
    SmallVector<NamedAttribute> attrs{
        NamedAttribute(StringAttr::get(ctx, nova::NovaDialect::StackOfAttrHelper::getNameStr()),
                       DenseI64ArrayAttr::get(ctx, positions))};
    if (std::optional<std::string> name = stackName(fn, members))
      attrs.emplace_back(StringAttr::get(ctx, nova::NovaDialect::NameAttrHelper::getNameStr()),
                         StringAttr::get(ctx, *name));
    unsigned index = fn.getNumArguments();
    if (failed(fn.insertArgument(index, stacked, DictionaryAttr::get(ctx, attrs),
                                 members.front().getLoc())))
      llvm_unreachable("appending an argument cannot fail");
    stackArgs.push_back(fn.getArgument(index));
    ++numStacks;
  }

  OpBuilder b(first);
  Value lb = arith::ConstantIndexOp::create(b, loc, 0);
  Value ub = arith::ConstantIndexOp::create(b, loc, plan.count);
  Value step = arith::ConstantIndexOp::create(b, loc, 1);
  SmallVector<Value> inits;
  for (const CarriedSlot &slot : plan.carried)
    inits.push_back(slot.init);

  auto loop = scf::ForOp::create(
      b, loc, lb, ub, step, inits,
      [&](OpBuilder &nb, Location l, Value layer, ValueRange carried) {
        // The layer's slot of every stack, as the member's type.
        SmallVector<Value> weights;
        for (BlockArgument stack : stackArgs) {
          auto stacked = cast<RankedTensorType>(stack.getType());
          int64_t rank = stacked.getRank();
          SmallVector<OpFoldResult> offsets(rank, nb.getIndexAttr(0));
          offsets[0] = layer;
          SmallVector<OpFoldResult> sizes{nb.getIndexAttr(1)};
          for (int64_t d : stacked.getShape().drop_front())
            sizes.push_back(nb.getIndexAttr(d));
          SmallVector<OpFoldResult> strides(rank, nb.getIndexAttr(1));
          SmallVector<int64_t> sliceShape(stacked.getShape());
          sliceShape[0] = 1;
          auto sliceType =
              RankedTensorType::get(sliceShape, stacked.getElementType());
          Value slice = tensor::ExtractSliceOp::create(
              nb, l, sliceType, stack, offsets, sizes, strides);
          SmallVector<ReassociationIndices> groups{{0, 1}};
          for (int64_t d = 2; d < rank; ++d)
            groups.push_back({d});
          auto memberType = RankedTensorType::get(
              stacked.getShape().drop_front(), stacked.getElementType());
          weights.push_back(tensor::CollapseShapeOp::create(
              nb, l, memberType, slice, groups));
        }
        IRMapping map;
        for (unsigned j = 0; j < plan.period; ++j) {
          Operation *op = ops[plan.start + j];
          Operation *clone = nb.clone(*op, map);
          for (auto [i, cls] : llvm::enumerate(plan.operands[j])) {
            if (cls.kind == OperandClass::Carried)
              clone->setOperand(i, carried[cls.index]);
            else if (cls.kind == OperandClass::Stacked)
              clone->setOperand(i, weights[cls.index]);
          }
        }
        SmallVector<Value> yielded;
        for (const CarriedSlot &slot : plan.carried)
          yielded.push_back(
              map.lookup(ops[plan.start + slot.pos]->getResult(slot.result)));
        scf::YieldOp::create(nb, l, yielded);
      });
  loop->setAttr(nova::NovaDialect::LayersAttrHelper::getNameStr(), UnitAttr::get(ctx));
  // The loop's location names each iteration's module (`layers:blocks.0,
  // blocks.1`): nova-translate writes it into the DEBUG entry of the ISA
  // loop, so that the profile charges each iteration to its own layer.
  SmallVector<std::string> modules =
      layerModules(ops, plan.start, plan.period, plan.count);
  if (!modules.empty())
    loop->setLoc(NameLoc::get(StringAttr::get(ctx, "layers:" + llvm::join(modules, ",")), loc));

  // The last region's carried results are the loop's.
  unsigned last = plan.start + (plan.count - 1) * plan.period;
  unsigned end = plan.start + plan.count * plan.period;
  DenseSet<Operation *> run(ops.begin() + plan.start, ops.begin() + end);
  Block &body = fn.getBody().front();
  for (auto [c, slot] : llvm::enumerate(plan.carried))
    ops[last + slot.pos]->getResult(slot.result).replaceUsesWithIf(
        loop.getResult(c), [&](OpOperand &use) {
          return !run.contains(body.findAncestorOpInBlock(*use.getOwner()));
        });
  for (unsigned i = end; i > plan.start; --i)
    ops[i - 1]->erase();
  giveLayerLoopDestinations(loop);
  ++numLoops;
  numLayers += plan.count;
}

void RollLayersPass::runOnOperation() {
  func::FuncOp fn = getOperation();
  if (!rollable(fn) || minLayers < 2 || !fn.getBody().hasOneBlock())
    return;
  Block &body = fn.getBody().front();
  // Loops made by an earlier run: normalization may have changed their
  // destinations since.
  for (auto loop : body.getOps<scf::ForOp>())
    if (loop->hasAttr(nova::NovaDialect::LayersAttrHelper::getNameStr()))
      giveLayerLoopDestinations(loop);
  while (true) {
    // The body as the search sees it: argument-free ops first.
    SmallVector<Operation *> ops = argumentFreeOps(body);
    unsigned numFree = ops.size();
    DenseSet<Operation *> free(ops.begin(), ops.end());
    for (Operation &op : body.without_terminator())
      if (!free.contains(&op))
        ops.push_back(&op);
    DenseMap<Operation *, unsigned> position;
    for (auto [i, op] : llvm::enumerate(ops))
      position[op] = i;
    unsigned n = ops.size();
    SmallVector<llvm::hash_code> keys;
    SmallVector<unsigned> linalgBefore{0}; // prefix counts of linalg ops
    for (Operation *op : ops) {
      keys.push_back(OperationEquivalence::computeHash(
          op, OperationEquivalence::ignoreHashValue,
          OperationEquivalence::ignoreHashValue,
          OperationEquivalence::IgnoreLocations));
      linalgBefore.push_back(linalgBefore.back() + isa<linalg::LinalgOp>(op));
    }

    // Maximal periodic windows: for each period p, runs of i with
    // key[i] == key[i + p]; a run [a, b) makes [a, b + p) p-periodic.
    struct Window {
      unsigned start, period, length;
    };
    SmallVector<Window> windows;
    for (unsigned p = 1; 2 * p <= n; ++p) {
      unsigned i = 0;
      while (i + p < n) {
        if (keys[i] != keys[i + p]) {
          ++i;
          continue;
        }
        unsigned a = i;
        while (i + p < n && keys[i] == keys[i + p])
          ++i;
        unsigned length = i - a + p;
        if (length / p >= unsigned(minLayers))
          windows.push_back({a, p, length});
      }
    }
    // Most ops saved first.
    llvm::stable_sort(windows, [](const Window &x, const Window &y) {
      return (x.length / x.period - 1) * x.period >
             (y.length / y.period - 1) * y.period;
    });

    LLVM_DEBUG(llvm::dbgs() << n << " ops, " << windows.size() << " windows\n");
    std::optional<Plan> best;
    unsigned bestSaved = 0;
    // Checks stop early on most windows; the budget bounds the rest.
    int64_t budget = 4096;
    for (const Window &w : windows) {
      unsigned p = w.period;
      if ((w.length / p - 1) * p <= bestSaved)
        break; // no later window can beat the best plan found
      // Every phase of the period, then fewer regions (the first or the last
      // ones may differ in their data flow), most regions first.
      for (unsigned count = w.length / p; count >= unsigned(minLayers); --count) {
        if ((count - 1) * p <= bestSaved)
          break;
        for (unsigned start = w.start; start + count * p <= w.start + w.length;
             ++start) {
          if (int64_t(linalgBefore[start + p] - linalgBefore[start]) < minOps)
            continue;
          if (--budget < 0)
            break;
          if (std::optional<Plan> plan = check(fn, ops, position, start, p, count)) {
            best = std::move(plan);
            bestSaved = (count - 1) * p;
            break;
          }
        }
        if (best && bestSaved == (count - 1) * p)
          break;
      }
    }
    if (!best)
      return;
    LLVM_DEBUG(llvm::dbgs() << "rolling " << best->count << " regions of "
                            << best->period << " ops from op " << best->start
                            << "\n");
    hoist(body, ArrayRef(ops).take_front(numFree));
    roll(fn, ops, *best);
  }
}

} // namespace
