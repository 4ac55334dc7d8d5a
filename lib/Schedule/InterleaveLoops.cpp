//===- InterleaveLoops.cpp - run independent ops' loops together -*- C++ -*-===//
//
// The sequencer dispatches in program order into queues of a few dozen
// slots, so an op's loop nest dispatches the next op's first instruction
// only once all but its last few instructions are in flight: two ops bound
// on different engines run one after the other even when they are
// independent. Fusing their outer loops (one iteration of the shorter loop
// next to a proportional chunk of the longer one) makes the dispatch order
// alternate between them, and each engine's queue holds work of both.
//
// Works on buffers (after bufferization, before plan-memory) with the
// buffer-level dependence analysis of nova-overlap-collectives: a loop
// only fuses with a later one when neither writes a buffer the other reads
// or writes, and the later loop conflicts with nothing it jumps over.
//
//===----------------------------------------------------------------------===//
#include "Accesses.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"
#include "nova/Schedule/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "nova-interleave-loops"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVAINTERLEAVELOOPS
#include "nova/Schedule/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

enum class Engine { Matrix, Vector, Dma };


/// Rough engine cycles of a loop nest (static trip counts multiplied in):
/// enough to tell which engine bounds it, not a cost model.
struct Work {
  double matrix = 0, vector = 0, dma = 0;
  int64_t sram = 0, acc = 0; // On-chip bytes allocated inside the nest.

  /// Cycles on the engine that bounds the nest.
  double time() const { return std::max({matrix, vector, dma}); }

  Engine bound() const {
    if (matrix >= vector && matrix >= dma)
      return Engine::Matrix;
    return vector >= dma ? Engine::Vector : Engine::Dma;
  }

  /// Matrix and vector work within 10% of each other (a matmul with an
  /// epilogue of about its length, as the GELU backward's): the two units
  /// take turns within an iteration, and a loop bound on either fills the
  /// other's gaps.
  bool balanced() const {
    return matrix > 0 && vector > 0 && std::min(matrix, vector) >=
                                           kBalanced * std::max(matrix, vector);
  }
  static constexpr double kBalanced = 0.9;
};

int64_t elements(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !memref.hasStaticShape())
    return 0;
  return memref.getNumElements();
}

int64_t bytesOf(MemRefType type) {
  if (!type.hasStaticShape() || type.getElementTypeBitWidth() == 0)
    return 0;
  int64_t bytes = type.getNumElements() *
                  llvm::divideCeil(type.getElementTypeBitWidth(), 8);
  return llvm::alignTo(bytes, 64);
}

/// The trip count of a loop with constant bounds and a positive step.
std::optional<int64_t> tripsOf(scf::ForOp loop) {
  std::optional<int64_t> lb = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lb || !ub || !step || *step <= 0)
    return std::nullopt;
  return *ub > *lb ? llvm::divideCeil(*ub - *lb, *step) : 0;
}

/// Iterations of every loop from `op`'s parent up to (not including) `top`.
double multiplicity(Operation *op, Operation *top) {
  double n = 1;
  for (Operation *p = op->getParentOp(); p && p != top; p = p->getParentOp())
    if (auto loop = dyn_cast<scf::ForOp>(p))
      if (std::optional<int64_t> trips = tripsOf(loop))
        n *= double(*trips);
  return n;
}

/// Whether `v` is computed from `iv` (through the ops that define it).
bool dependsOn(Value v, Value iv, unsigned depth = 0) {
  if (v == iv)
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || depth > 16)
    return false;
  return llvm::any_of(def->getOperands(),
                      [&](Value operand) { return dependsOn(operand, iv, depth + 1); });
}

/// Iterations of the loops around a DMA up to `top` whose induction variable
/// its operands depend on.
double dmaMultiplicity(Operation *dma, Operation *top) {
  double n = 1;
  for (Operation *p = dma->getParentOp(); p && p != top; p = p->getParentOp())
    if (auto loop = dyn_cast<scf::ForOp>(p))
      if (std::optional<int64_t> trips = tripsOf(loop))
        if (llvm::any_of(dma->getOperands(), [&](Value v) {
              return dependsOn(v, loop.getInductionVar());
            }))
          n *= double(*trips);
  return n;
}

Work workOf(scf::ForOp loop, TargetAttr target) {
  Work w;
  double rows = target ? target.getMatrixRows() : 128;
  double cols = target ? target.getMatrixCols() : 128;
  double lanes = target ? target.getVectorLanes() : 128;
  // HBM bytes per cycle; a fixed setup per DMA (docs/isa.md 2.2).
  double bytesPerCycle =
      target ? double(target.getHbmGbps()) * 1e3 / double(target.getClockMhz())
             : 64;
  constexpr double kDmaSetup = 64;
  loop->walk([&](Operation *op) {
    double n = multiplicity(op, loop->getParentOp());
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      std::optional<MemorySpace> space = getMemorySpace(alloc.getType());
      if (space == MemorySpace::SRAM)
        w.sram += bytesOf(alloc.getType());
      else if (space == MemorySpace::ACC)
        w.acc += bytesOf(alloc.getType());
      return;
    }
    if (auto matmul = dyn_cast<MatmulOp>(op)) {
      auto lhs = dyn_cast<MemRefType>(op->getOperand(0).getType());
      int64_t k = lhs && lhs.getRank() > 0 ? lhs.getShape().back() : 1;
      w.matrix += n * double(elements(op->getOperands().back().getType())) *
                  double(k) / (rows * cols);
      return;
    }
    if (auto dma = dyn_cast<DmaStartOp>(op)) {
      // A load of a tile that does not change in a loop is hoisted out of
      // it (nova-hoist-invariant-loads, later): counted once for that loop.
      auto src = dyn_cast<MemRefType>(op->getOperand(0).getType());
      w.dma += dmaMultiplicity(op, loop->getParentOp()) *
               (kDmaSetup + (src ? double(bytesOf(src)) : 0) / bytesPerCycle);
      return;
    }
    if (op->getDialect() && isa<NovaDialect>(op->getDialect()) &&
        !isa<WaitOp>(op)) {
      int64_t most = 0;
      for (Value v : op->getOperands())
        most = std::max(most, elements(v.getType()));
      w.vector += n * double(most) / lanes;
    }
  });
  return w;
}

/// A loop this pass may fuse: static bounds, at least one iteration, no
/// values carried or returned, not a loop over layers, no collective.
std::optional<int64_t> fusableTrips(scf::ForOp loop) {
  if (loop.getNumResults() != 0 || !loop.getInitArgs().empty() ||
      loop->hasAttr(NovaDialect::LayersAttrHelper::getNameStr()))
    return std::nullopt;
  std::optional<int64_t> trips = tripsOf(loop);
  if (!trips || *trips < 1)
    return std::nullopt;
  // Collectives keep their order on every chip (a send moved above a recv
  // of another loop can deadlock two chips): loops with one stay whole.
  WalkResult collective = loop->walk([](Operation *op) {
    return isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, SendOp,
               RecvOp, BarrierOp>(op)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (collective.wasInterrupted())
    return std::nullopt;
  return trips;
}

/// Which iterations of two loops one fused loop runs: [0, firstCount) of
/// the first and [0, secondCount) of the second, over `outer` iterations
/// taking one of the part with fewer and `chunk` of the other.
struct Plan {
  int64_t firstCount, secondCount, outer, chunk;
};

/// All of the shorter op (by engine time) and as many of the longer op's
/// first iterations as take about as long on their engine.
Plan planFusion(scf::ForOp first, scf::ForOp second, const Work &firstWork,
                const Work &secondWork) {
  bool firstLonger = firstWork.time() >= secondWork.time();
  const Work &longWork = firstLonger ? firstWork : secondWork;
  const Work &shortWork = firstLonger ? secondWork : firstWork;
  int64_t longTrips = *fusableTrips(firstLonger ? first : second);
  int64_t shortTrips = *fusableTrips(firstLonger ? second : first);
  int64_t used = longTrips;
  if (longWork.time() > 0)
    used = std::clamp<int64_t>(
        std::llround(double(longTrips) * shortWork.time() / longWork.time()),
        1, longTrips);
  Plan plan;
  plan.firstCount = firstLonger ? used : shortTrips;
  plan.secondCount = firstLonger ? shortTrips : used;
  plan.outer = std::min(plan.firstCount, plan.secondCount);
  plan.chunk = std::max(plan.firstCount, plan.secondCount) / plan.outer;
  return plan;
}

struct InterleaveLoopsPass
    : public nova::impl::NovaInterleaveLoopsBase<InterleaveLoopsPass> {
  using Base::Base;

  /// The loops this pass made by fusing two: not fused again.
  DenseSet<Operation *> fusedLoops;

  void runOnOperation() override {
    fusedLoops.clear();
    TargetAttr target = lookupTarget(getOperation());
    SmallVector<Block *> blocks{&getOperation().getBody().front()};
    getOperation().walk([&](scf::ForOp loop) {
      if (loop->hasAttr(NovaDialect::LayersAttrHelper::getNameStr()))
        blocks.push_back(loop.getBody());
    });
    for (Block *block : blocks)
      interleaveIn(*block, target);
  }

  void interleaveIn(Block &block, TargetAttr target) {
    for (Operation *op = &block.front(); op; op = op->getNextNode()) {
      auto first = dyn_cast<scf::ForOp>(op);
      if (!first || !fusableTrips(first) || fusedLoops.contains(first))
        continue;
      // Carry on with what is left of the longer loop (it may fuse with a
      // later op), or after the fused loop.
      while (scf::ForOp next = tryFuse(first, target)) {
        op = next;
        first = next;
        if (fusedLoops.contains(next) || !fusableTrips(next))
          break;
      }
    }
  }

  /// Fuses `first` with the first later loop of the block, within a window,
  /// that is bound on another engine and independent of it and of
  /// everything in between; returns the op to continue after, or null.
  scf::ForOp tryFuse(scf::ForOp first, TargetAttr target) {
    Work firstWork = workOf(first, target);
    Accesses between = accessesOf(first);
    if (between.unknown)
      return nullptr;
    DenseSet<Operation *> none;
    // `first` and the ops scanned after it: what a later op uses from the
    // block and is not before `first` (operands come before their user).
    DenseSet<Operation *> span{first};
    auto inSpan = [&](Operation *op) { return span.contains(op); };
    unsigned scanned = 0;
    for (Operation *op = first->getNextNode(); op && scanned < window;
         span.insert(op), op = op->getNextNode()) {
      if (op->hasTrait<OpTrait::IsTerminator>())
        return nullptr;
      if (isLazy(op))
        continue;
      ++scanned;
      Accesses acc = accessesOf(op);
      auto second = dyn_cast<scf::ForOp>(op);
      if (second && fusableTrips(second) && !fusedLoops.contains(second) &&
          !acc.conflictsWith(between) &&
          operandsAvailableBefore(second, first, none, inSpan)) {
        Work secondWork = workOf(second, target);
        // Once, not twice: nova-double-buffer gives the fused body second
        // slots only while they fit, and a fused loop that overlaps the
        // matrix and vector units gains more than a prefetch (the GELU
        // backward's epilogue beside the next weight gradient's matmul).
        bool fits =
            !target ||
            ((firstWork.sram + secondWork.sram) <= target.getSramBytes() &&
             (firstWork.acc + secondWork.acc) <= target.getAccBytes());
        // A DMA-bound op fuses too: beside a compute-bound loop its loads
        // share queue 0 with few others, and its loop (a bias gradient's
        // load and sum) would otherwise run alone. A fused loop of few
        // iterations dispatches each op's part whole, as before.
        bool engines = firstWork.bound() != secondWork.bound() ||
                       firstWork.balanced() || secondWork.balanced();
        if (engines && fits &&
            planFusion(first, second, firstWork, secondWork).outer >=
                int64_t(minTrips))
          return fuse(first, second, firstWork, secondWork);
      }
      if (acc.unknown)
        return nullptr; // Nothing moves across what the analysis cannot see.
      between.add(acc);
    }
    return nullptr;
  }

  /// Fuses all of the shorter op (by engine time) with as many of the
  /// longer op's first iterations as take about as long on their engine;
  /// the rest of the longer op stays a loop of its own, after the fused one,
  /// that may fuse with a later op in turn. Returns that loop, or the fused
  /// one.
  scf::ForOp fuse(scf::ForOp first, scf::ForOp second, const Work &firstWork,
                  const Work &secondWork) {
    // The later loop's lazy operands (allocs, views, constants defined
    // between the two) move in front of the first loop. Only the ops from
    // `first` to `second` need a position: the others are before `first`
    // (position 0, like `first`) or after the operands' user `second`.
    DenseMap<Operation *, unsigned> position;
    for (Operation *op = first; op != second; op = op->getNextNode())
      position[op] = position.size();
    DenseSet<Operation *> placed;
    SmallVector<Operation *> lazy;
    collectLazyOperands(second, first, position, placed, lazy);
    for (Operation *op : lazy)
      op->moveBefore(first);

    Plan plan = planFusion(first, second, firstWork, secondWork);
    int64_t firstCount = plan.firstCount, secondCount = plan.secondCount;
    int64_t outer = plan.outer, chunk = plan.chunk;
    bool firstMany = firstCount > secondCount;
    LLVM_DEBUG(llvm::dbgs() << "fusing " << firstCount << " of "
                            << *fusableTrips(first) << " x " << secondCount
                            << " of " << *fusableTrips(second)
                            << " iterations at " << first.getLoc() << "\n");

    OpBuilder b(first);
    Location loc = first.getLoc();
    auto cst = [&](int64_t v) -> Value {
      return b.create<arith::ConstantIndexOp>(loc, v);
    };
    // The body of `loop` for its iteration `index`, at `b`'s insertion point.
    auto cloneIteration = [&](scf::ForOp loop, Value index) {
      Value scaled = b.create<arith::MulIOp>(loc, index, loop.getStep());
      Value iv = b.create<arith::AddIOp>(loc, loop.getLowerBound(), scaled);
      IRMapping map;
      map.map(loop.getInductionVar(), iv);
      for (Operation &op : loop.getBody()->without_terminator())
        b.clone(op, map);
    };

    auto fused = b.create<scf::ForOp>(loc, cst(0), cst(outer), cst(1));
    fusedLoops.insert(fused);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(fused.getBody()->getTerminator());
      Value j = fused.getInductionVar();
      auto emit = [&](scf::ForOp loop, bool many) {
        if (!many || chunk == 1) {
          cloneIteration(loop, many ? b.create<arith::MulIOp>(loc, j, cst(chunk))
                                    : j);
          return;
        }
        Value base = b.create<arith::MulIOp>(loc, j, cst(chunk));
        auto inner = b.create<scf::ForOp>(loc, cst(0), cst(chunk), cst(1));
        OpBuilder::InsertionGuard innerGuard(b);
        b.setInsertionPoint(inner.getBody()->getTerminator());
        cloneIteration(loop, b.create<arith::AddIOp>(loc, base,
                                                     inner.getInductionVar()));
      };
      emit(first, firstMany);
      emit(second, !firstMany && firstCount != secondCount);
    }
    // What is left of each loop runs after the fused one, to its end.
    scf::ForOp last = fused;
    auto tail = [&](scf::ForOp loop, int64_t done) {
      if (done >= *fusableTrips(loop))
        return;
      int64_t lb = *getConstantIntValue(loop.getLowerBound());
      int64_t step = *getConstantIntValue(loop.getStep());
      Value start = cst(lb + done * step);
      auto rest = cast<scf::ForOp>(b.clone(*loop));
      rest.getLowerBoundMutable().assign(start);
      last = rest;
    };
    int64_t manyDone = outer * chunk;
    tail(first, firstMany ? manyDone : outer);
    tail(second, firstMany ? outer : (firstCount != secondCount ? manyDone : outer));
    first.erase();
    second.erase();
    ++numFused;
    return last;
  }
};
} // namespace
