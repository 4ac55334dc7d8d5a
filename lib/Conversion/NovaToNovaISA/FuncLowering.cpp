//===- FuncLowering.cpp - driver of the nova -> nova_isa lowering ---------===//
#include "nova/Dialect/Nova/IR/ElementTypes.h"
#include "FuncLowering.h"
#include "EnginePlacement.h"
#include "Synchronization.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::isa_lowering;
using nova_isa::Engine;
using nova_isa::SaluKind;

/// A register is reused for the same computation only within this many
/// emitted instructions, which bounds its live range for the encoder's
/// register allocation (256 registers).
static constexpr int64_t kReuseWindow = 48;

int64_t mlir::nova::isa_lowering::elementBytes(Type type) {
  if (type.isIntOrFloat())
    return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
  return 0;
}

FuncLowering::FuncLowering(func::FuncOp func,
                           const NovaToNovaISAPatterns &patterns,
                           const NovaToNovaISAOptions &options)
    : func(func), patterns(patterns), options(options),
      target(lookupTarget(func)), b(func.getContext()) {}

std::optional<int64_t> FuncLowering::getConstant(Value v) const {
  auto it = constants.find(v);
  if (it != constants.end())
    return it->second;
  return std::nullopt;
}

const BufferRef *FuncLowering::lookupBuffer(Value memref) const {
  auto it = buffers.find(memref);
  return it == buffers.end() ? nullptr : &it->second;
}

Value FuncLowering::cached(const CacheKey &key) {
  for (auto &scope : llvm::reverse(scopes)) {
    auto it = scope.find(key);
    if (it == scope.end())
      continue;
    if (emitted - it->second.index <= kReuseWindow)
      return it->second.reg;
    return Value();
  }
  return Value();
}

void FuncLowering::cache(const CacheKey &key, Value reg) {
  scopes.back()[key] = CacheEntry{reg, emitted};
}

Value FuncLowering::li(Location loc, int64_t value) {
  CacheKey key{-1, nullptr, nullptr, value};
  if (Value reg = cached(key))
    return reg;
  Value reg = nova_isa::LiOp::create(b, loc, b.getIndexType(),
                                     b.getI64IntegerAttr(value),
                                     nova_isa::EngineAttr::get(b.getContext(),
                                                               Engine::Scalar));
  ++emitted;
  registerConstants[reg] = value;
  cache(key, reg);
  return reg;
}

static std::optional<int64_t> fold(SaluKind kind, int64_t a, int64_t bv) {
  switch (kind) {
  case SaluKind::Add: return (int64_t)((uint64_t)a + (uint64_t)bv);
  case SaluKind::Sub: return (int64_t)((uint64_t)a - (uint64_t)bv);
  case SaluKind::Mul: return (int64_t)((uint64_t)a * (uint64_t)bv);
  case SaluKind::Div: return bv == 0 ? std::nullopt : std::optional(a / bv);
  case SaluKind::Rem: return bv == 0 ? std::nullopt : std::optional(a % bv);
  case SaluKind::Min: return std::min(a, bv);
  case SaluKind::Max: return std::max(a, bv);
  case SaluKind::Eq: return a == bv;
  case SaluKind::Ne: return a != bv;
  case SaluKind::Lt: return a < bv;
  case SaluKind::Le: return a <= bv;
  }
  return std::nullopt;
}

Value FuncLowering::salu(Location loc, SaluKind kind, Value lhs, Value rhs) {
  auto lc = registerConstants.find(lhs), rc = registerConstants.find(rhs);
  if (lc != registerConstants.end() && rc != registerConstants.end())
    if (std::optional<int64_t> v = fold(kind, lc->second, rc->second))
      return li(loc, *v);
  // x + 0, x * 1.
  if (rc != registerConstants.end() &&
      ((rc->second == 0 && (kind == SaluKind::Add || kind == SaluKind::Sub)) ||
       (rc->second == 1 && (kind == SaluKind::Mul || kind == SaluKind::Div))))
    return lhs;
  bool commutative = kind == SaluKind::Add || kind == SaluKind::Mul ||
                     kind == SaluKind::Min || kind == SaluKind::Max ||
                     kind == SaluKind::Eq || kind == SaluKind::Ne;
  void *a = lhs.getAsOpaquePointer(), *bp = rhs.getAsOpaquePointer();
  if (commutative && bp < a)
    std::swap(a, bp);
  CacheKey key{static_cast<int64_t>(kind), a, bp, 0};
  if (Value reg = cached(key))
    return reg;
  Value reg = nova_isa::SaluOp::create(
      b, loc, b.getIndexType(),
      nova_isa::SaluKindAttr::get(b.getContext(), kind), lhs, rhs,
      nova_isa::EngineAttr::get(b.getContext(), Engine::Scalar));
  ++emitted;
  cache(key, reg);
  return reg;
}

FailureOr<Value> FuncLowering::scalar(Location loc, Value v, Operation *user) {
  if (std::optional<int64_t> c = getConstant(v))
    return li(loc, *c);
  auto it = registers.find(v);
  if (it != registers.end())
    return it->second;
  return user->emitOpError()
         << "uses an index value that has no nova_isa lowering (only "
            "constants, loop induction variables and arith integer ops are "
            "supported)";
}

std::optional<std::pair<int64_t, int64_t>> FuncLowering::boundsOf(Value v) {
  auto it = valueBounds.find(v);
  if (it != valueBounds.end())
    return it->second;
  std::optional<std::pair<int64_t, int64_t>> bounds;
  FailureOr<int64_t> min = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::LB, v);
  FailureOr<int64_t> max = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, v, /*stopCondition=*/nullptr,
      /*closedUB=*/true);
  if (succeeded(min) && succeeded(max))
    bounds = std::make_pair(*min, *max);
  valueBounds[v] = bounds;
  return bounds;
}

std::optional<std::pair<int64_t, int64_t>>
FuncLowering::offsetSpan(ArrayRef<std::pair<Value, int64_t>> terms) {
  int64_t lo = 0, hi = 0;
  for (auto [value, coef] : terms) {
    std::optional<std::pair<int64_t, int64_t>> bounds = boundsOf(value);
    if (!bounds)
      return std::nullopt;
    auto [min, max] = *bounds;
    lo += coef * (coef >= 0 ? min : max);
    hi += coef * (coef >= 0 ? max : min);
  }
  return std::make_pair(lo, hi);
}

FailureOr<SmallVector<int64_t>> FuncLowering::stridesOf(MemRefType type) {
  auto it = strideCache.find(type);
  if (it == strideCache.end()) {
    SmallVector<int64_t> strides;
    int64_t offset;
    std::optional<SmallVector<int64_t>> entry;
    if (succeeded(type.getStridesAndOffset(strides, offset)))
      entry = std::move(strides);
    it = strideCache.try_emplace(type, std::move(entry)).first;
  }
  if (!it->second)
    return failure();
  return *it->second;
}

FailureOr<TileOperand> FuncLowering::tile(Value memref, Operation *user,
                                          ArrayRef<Value> collapseWith) {
  auto type = dyn_cast<MemRefType>(memref.getType());
  const BufferRef *ref = lookupBuffer(memref);
  if (!type || !ref)
    return user->emitOpError()
           << "operand has no address: its root buffer needs a `nova.address` "
              "(run nova-plan-memory first) and every view of it must be a "
              "memref.subview, expand_shape, collapse_shape, view, cast or "
              "reinterpret_cast";
  if (!type.hasStaticShape())
    return user->emitOpError() << "operand has a dynamic shape " << type;
  Type elt = type.getElementType();
  if (!isTileElementType(elt))
    return user->emitOpError() << "operand element type must be f32, bf16, "
                                  "f16, i64, i32, i8 or i1, got "
                               << elt;
  FailureOr<SmallVector<int64_t>> typeStrides = stridesOf(type);
  if (failed(typeStrides) || llvm::any_of(*typeStrides, [](int64_t s) {
        return ShapedType::isDynamic(s) || s < 0;
      }))
    return user->emitOpError()
           << "operand must have static non-negative strides, got " << type;
  SmallVector<int64_t> strides = std::move(*typeStrides);
  SmallVector<int64_t> shape(type.getShape());
  if (shape.empty()) {
    shape.push_back(1);
    strides.push_back(1);
  }
  Location loc = user->getLoc();
  int64_t eb = elementBytes(elt);
  // Address: root + dynamic terms + constant.
  Value addr;
  for (auto [value, coef] : ref->terms) {
    FailureOr<Value> reg = scalar(loc, value, user);
    if (failed(reg))
      return failure();
    Value term = coef == 1 ? *reg : salu(loc, SaluKind::Mul, *reg, li(loc, coef));
    addr = addr ? salu(loc, SaluKind::Add, addr, term) : term;
  }
  int64_t constAddr = ref->rootAddr + ref->constBytes;
  addr = addr ? salu(loc, SaluKind::Add, addr, li(loc, constAddr))
              : li(loc, constAddr);
  int64_t extent = 1;
  for (auto [size, stride] : llvm::zip(shape, strides))
    extent += (size - 1) * stride;
  ByteRange range{ref->space, ref->rootAddr, ref->rootAddr + ref->rootBytes};
  if (std::optional<std::pair<int64_t, int64_t>> span =
          offsetSpan(ref->terms)) {
    // The dynamic terms are bounded (loop induction variables and what is
    // computed from them): the tile touches only [lo, hi + extent) of its
    // root, over every value they take. A K-loop's weight views then do not
    // conflict with the prefetch into a double buffer's other slot.
    int64_t lo = constAddr + span->first;
    int64_t hi = constAddr + span->second + extent * eb;
    range = ByteRange{ref->space, std::max(lo, ref->rootAddr),
                      std::min(hi, ref->rootAddr + ref->rootBytes)};
    if (range.lo >= range.hi)
      range = ByteRange{ref->space, ref->rootAddr,
                        ref->rootAddr + ref->rootBytes};
  }
  if (shape.size() > 4 && !collapseWith.empty()) {
    SmallVector<SmallVector<int64_t>> all;
    for (Value v : collapseWith) {
      auto t = cast<MemRefType>(v.getType());
      FailureOr<SmallVector<int64_t>> st = stridesOf(t);
      if (t.getShape() != type.getShape() || failed(st))
        break;
      all.push_back(std::move(*st));
    }
    if (all.size() == collapseWith.size()) {
      // Drop unit dimensions, then merge a dimension into the one before it
      // where every operand is contiguous across them (row-major order of
      // the elements is kept, so the operands still pair up).
      SmallVector<int64_t> s2, t2;
      SmallVector<int64_t> lastKept; // per operand, stride of the last kept dim
      int64_t prev = -1;
      for (int64_t d = 0, e = shape.size(); d < e; ++d) {
        if (shape[d] == 1)
          continue;
        bool merge = prev >= 0 && strides[prev] == strides[d] * shape[d];
        for (auto &st : all)
          merge = merge && st[prev] == st[d] * shape[d];
        if (merge) {
          s2.back() *= shape[d];
          t2.back() = strides[d];
          for (auto &st : all)
            st[prev] = st[d];
          strides[prev] = strides[d];
          continue;
        }
        s2.push_back(shape[d]);
        t2.push_back(strides[d]);
        prev = d;
      }
      if (s2.empty()) {
        s2.push_back(1);
        t2.push_back(1);
      }
      shape = s2;
      strides = t2;
    }
  }
  if (shape.size() > 4)
    return user->emitOpError()
           << "operand has rank " << shape.size()
           << ", a tile descriptor holds at most 4 dimensions";
  auto emitErr = [&] { return user->emitOpError(); };
  auto tileAttr = nova_isa::TileAttr::getChecked(
      function_ref<InFlightDiagnostic()>(emitErr), b.getContext(), ref->space,
      elt, ArrayRef<int64_t>(shape), ArrayRef<int64_t>(strides));
  if (!tileAttr)
    return failure();
  return TileOperand{addr, tileAttr, range};
}

void FuncLowering::instruction(Operation *instr, ArrayRef<Access> acc) {
  ++emitted;
  accesses[instr] = SmallVector<Access>(acc);
}

int64_t FuncLowering::nextDmaQueue(bool toHbm) {
  if (loopDmaCounters.empty()) {
    int64_t queues = std::max<int64_t>(1, options.dmaQueues);
    return dmaCounter++ % queues;
  }
  // Each body counts from 0, so a loop's queues do not depend on the code
  // before it and the same body always gets the same assignment.
  int64_t queues = std::clamp<int64_t>(options.loopDmaQueues, 1,
                                       std::max<int64_t>(1, options.dmaQueues));
  auto &[loads, stores] = loopDmaCounters.back();
  if (queues == 1)
    return 0;
  if (options.loopDmaPolicy == LoopDmaPolicy::RoundRobin)
    return (loads++ + stores) % queues;
  // Split: a store waiting for compute never holds up the next tile's loads.
  int64_t loadQueues = (queues + 1) / 2;
  if (toHbm)
    return loadQueues + stores++ % (queues - loadQueues);
  return loads++ % loadQueues;
}

void FuncLowering::setToken(Value token, Operation *instr, bool strict) {
  tokens[token] = TokenInfo{instr, strict};
}

LogicalResult FuncLowering::waitToken(Value token, Operation *waitOp) {
  if (localTokens.contains(token))
    return success();
  auto it = tokens.find(token);
  if (it == tokens.end())
    return waitOp->emitOpError() << "waits for a token whose producer is not "
                                    "a lowered nova op";
  if (!it->second.strict)
    return success();
  Operation *instr = it->second.instr;
  Operation *placeholder = nova_isa::NopOp::create(
      b, waitOp->getLoc(),
      nova_isa::EngineAttr::get(b.getContext(), Engine::Scalar), nullptr,
      nullptr);
  if (placeholder->getBlock() != instr->getBlock()) {
    placeholder->erase();
    return waitOp->emitOpError()
           << "waits for a peer DMA or barrier started in another loop "
              "level; it must be waited in the same block";
  }
  strictWaits[placeholder] = instr;
  return success();
}

LogicalResult FuncLowering::lowerFor(Operation *op) {
  auto forOp = cast<scf::ForOp>(op);
  for (Value init : forOp.getInitArgs())
    if (!isa<nova::TokenType>(init.getType()))
      return op->emitOpError() << "loop-carried values other than "
                                  "!nova.token are not supported";
  for (Value v : forOp.getRegionIterArgs())
    setLocalToken(v);
  for (Value v : forOp.getResults())
    setLocalToken(v);
  // Tokens carried through the loop must be local ones (ordered by hazards).
  for (Value init : forOp.getInitArgs()) {
    auto it = tokens.find(init);
    if (it != tokens.end() && it->second.strict)
      return op->emitOpError() << "a peer DMA or barrier token cannot be "
                                  "carried through a loop";
  }
  if (loopDepth >= nova_isa::LoopOp::kMaxDepth)
    return op->emitOpError() << "nests deeper than the "
                             << nova_isa::LoopOp::kMaxDepth
                             << " loops of the hardware loop stack";
  Location loc = op->getLoc();
  Value bounds[3];
  IntegerAttr imms[3];
  Value src[3] = {forOp.getLowerBound(), forOp.getUpperBound(),
                  forOp.getStep()};
  for (int i = 0; i < 3; ++i) {
    if (std::optional<int64_t> c = getConstant(src[i])) {
      if (i == 2 && *c <= 0)
        return op->emitOpError() << "step must be positive, got " << *c;
      imms[i] = b.getI64IntegerAttr(*c);
      continue;
    }
    FailureOr<Value> reg = scalar(loc, src[i], op);
    if (failed(reg))
      return failure();
    bounds[i] = *reg;
  }
  auto loop = nova_isa::LoopOp::create(
      b, loc, bounds[0], bounds[1], bounds[2], imms[0], imms[1], imms[2],
      nova_isa::EngineAttr::get(b.getContext(), Engine::Scalar));
  ++emitted;
  Block *body = new Block();
  loop.getBody().push_back(body);
  setRegister(forOp.getInductionVar(),
              body->addArgument(b.getIndexType(), loc));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);
  nova_isa::EndOp::create(b, loc);
  b.setInsertionPoint(body->getTerminator());
  pushScope();
  ++loopDepth;
  loopDmaCounters.push_back({0, 0});
  LogicalResult result = lowerBlock(*forOp.getBody());
  loopDmaCounters.pop_back();
  --loopDepth;
  popScope();
  return result;
}

LogicalResult FuncLowering::lowerBlock(Block &block) {
  for (Operation &op : block) {
    if (isa<scf::ForOp>(op)) {
      if (failed(lowerFor(&op)))
        return failure();
      continue;
    }
    if (isa<scf::YieldOp>(op))
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      if (ret.getNumOperands() != 0)
        return ret.emitOpError()
               << "returns values; results must be out-params (run "
                  "nova-plan-memory first)";
      continue;
    }
    if (const IsaOpLowering *lowering = patterns.lookup(&op)) {
      if (failed((*lowering)(&op, *this)))
        return failure();
      continue;
    }
    if (isPure(&op) && op.use_empty())
      continue;
    return op.emitOpError() << "has no nova_isa lowering";
  }
  return success();
}

LogicalResult FuncLowering::bindArguments() {
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type)
      return func.emitOpError()
             << "argument " << arg.getArgNumber()
             << " must be a memref in hbm, got " << arg.getType();
    auto addr = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                   NovaDialect::AddressAttrHelper::getNameStr());
    if (!addr)
      return func.emitOpError()
             << "argument " << arg.getArgNumber()
             << " has no `nova.address` (run nova-plan-memory first)";
    std::optional<MemorySpace> space = getMemorySpace(type);
    if (!type.hasStaticShape() || !space)
      return func.emitOpError() << "argument " << arg.getArgNumber()
                                << " must have a static shape and a nova "
                                   "memory space, got "
                                << type;
    BufferRef ref;
    ref.space = *space;
    ref.rootAddr = addr.getInt();
    ref.rootBytes = type.getNumElements() * elementBytes(type.getElementType());
    setBuffer(arg, ref);
  }
  return success();
}

LogicalResult FuncLowering::run(NovaToNovaISAStats &stats,
                                bool *outOfSemaphores) {
  if (!func.getBody().hasOneBlock())
    return func.emitOpError() << "must have a single-block body";
  if (failed(bindArguments()))
    return failure();
  auto body = std::make_unique<Block>();
  newBody = body.get();
  b.setInsertionPointToEnd(newBody);
  pushScope();
  if (failed(lowerBlock(func.getBody().front())))
    return failure();
  popScope();
  // Engine placement, before the engines are ordered (EnginePlacement.h).
  if (TargetAttr target = lookupTarget(func); target && options.activationEngine)
    if (std::optional<ActivationEngine> activation = getActivationEngine(target))
      stats.activation += placeOnActivationEngine(
          *newBody, vectorCostsOf(target), *activation);
  if (failed(synchronize(*newBody, func.getLoc(), options.dmaQueues,
                         options.semaphores, accesses, strictWaits, stats,
                         outOfSemaphores)))
    return failure();
  // Replace the body; the arguments (and their attributes) stay.
  Block &entry = func.getBody().front();
  for (Operation &op : llvm::reverse(entry))
    op.dropAllUses();
  while (!entry.empty())
    entry.back().erase();
  entry.getOperations().splice(entry.end(), newBody->getOperations());
  OpBuilder eb = OpBuilder::atBlockEnd(&entry);
  func::ReturnOp::create(eb, func.getLoc());
  func.walk([&](Operation *op) {
    if (isa<nova_isa::InstructionOpInterface>(op) && !isa<nova_isa::EndOp>(op))
      ++stats.instructions;
  });
  return success();
}

LogicalResult mlir::nova::convertFuncToNovaISA(
    func::FuncOp func, const NovaToNovaISAPatterns &patterns,
    const NovaToNovaISAOptions &options, NovaToNovaISAStats &stats) {
  // More queues in loops need more semaphores; when they run out, lower the
  // function again with fewer (queue 0 alone needs no more than before).
  NovaToNovaISAOptions attempt = options;
  while (true) {
    bool outOfSemaphores = false;
    bool last = attempt.loopDmaQueues <= 1;
    NovaToNovaISAStats local;
    FuncLowering lowering(func, patterns, attempt);
    if (succeeded(lowering.run(local, last ? nullptr : &outOfSemaphores))) {
      stats.instructions += local.instructions;
      stats.activation += local.activation;
      stats.semaphores += local.semaphores;
      stats.waits += local.waits;
      stats.loopQueueFallbacks += local.loopQueueFallbacks;
      return success();
    }
    if (!outOfSemaphores)
      return failure();
    --attempt.loopDmaQueues;
    ++stats.loopQueueFallbacks;
  }
}

void mlir::nova::populateNovaToNovaISAPatterns(
    NovaToNovaISAPatterns &patterns) {
  populateAddressingPatterns(patterns);
  populateComputePatterns(patterns);
  populateDataMovementPatterns(patterns);
}
