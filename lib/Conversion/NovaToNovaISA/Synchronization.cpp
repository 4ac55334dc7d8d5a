//===- Synchronization.cpp - semaphores between nova_isa engines ----------===//
//
// Hazard tracking over the lowered body, in program (= dispatch) order.
//
// * Engines: matrix, vector, collective, one per DMA queue, the
//   sequencer (only ever a waiter) and the activation engine. Each queue runs in order, so an engine
//   observes everything earlier in its own queue.
// * Every instruction has a sequence number in program order; the state
//   keeps, per range of bytes, the instructions that last wrote / read it,
//   and obs[B][A]: the highest sequence number of engine A whose completion
//   engine B is known to have observed (a vector clock, merged
//   transitively through the observed instruction's own clock).
// * An access of instruction C on engine B that conflicts (RAW, WAR, WAW)
//   with an unobserved record of engine A makes the latest such A
//   instruction signal semaphore s(A->B) and C wait on it.
// * One semaphore per ordered engine pair: its signals happen in A's queue
//   order, its waits in B's queue order, and the j-th wait is released by
//   the j-th signal. Edges are created so that both orders agree: a signal
//   is only attached to an instruction later (in A) than the pair's previous
//   signal; otherwise a `nop on A` just before C signals instead.
// * Loops. Entry: for every engine B used in the body, a `nop on B` before
//   the loop waits for the outer instructions that conflict with anything B
//   does in the body. Loop-carried hazards: the body starts with the whole
//   body's accesses as records of the previous iteration. Each instruction
//   directly in the body owns its own records: a wait at the body's top
//   level on one of them uses a semaphore of the loop's nesting depth,
//   c(A->B, depth), signalled by that instruction itself (once per
//   iteration), so that iteration i+1 waits only for the part of
//   iteration i it conflicts with (a double-buffered tile loop's next
//   matmul no longer waits for the whole epilogue of the tile before). Its
//   waits and signals keep one order per iteration (each edge's signal
//   later in A than the previous edge's). Everything else (accesses inside
//   nested loops, waits that would break that order) is owned by a
//   `nop on A` at the end of the body, signalling s(A->B). A wait on either
//   gets an initial credit (`nop on A signal` before the loop) and a drain
//   (`nop on B wait` after it). Exit: the body's accesses become records of a `nop on A` right
//   after the loop; the clocks are those before the loop (the body may run
//   zero times).
// * DMA queues are engines like the others: `nop queue q on dma` reaches
//   queue q (ISA version 4 for q > 0), so loops may use any queue.
// * End: every engine used signals the sequencer, which waits, then halt.
//   Every semaphore is back at 0 then.
//
//===----------------------------------------------------------------------===//
#include "Synchronization.h"

#include <map>
#include <set>

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::isa_lowering;
using nova_isa::Engine;

namespace {

/// Carried semaphores are only allocated below this fraction of the
/// semaphores (see Synchronizer::carriedSemaphore): 48 of the ISA's 64.
constexpr int64_t kCarriedSemaphoreShare = 4; // 3 of every 4

struct Record {
  ByteRange range;
  bool write;
  int engine;
  uint64_t seq;
  unsigned handle;
};

/// One entry per engine (at most 10: 5 DMA queues); kept inline, as every
/// instruction's handle snapshots one.
using Clock = SmallVector<uint64_t, 10>;

static bool conflicts(const Record &r, ArrayRef<Access> acc) {
  return llvm::any_of(acc, [&](const Access &a) {
    return (a.write || r.write) && a.range.overlaps(r.range);
  });
}

/// The live records, indexed for the two questions synchronisation asks
/// (a body of GPT-2 keeps thousands of them, and scanning them all per
/// instruction dominated the pass):
/// * the latest record of engine A that engine B has not observed and that
///   conflicts with an access: A's records newer than B's clock, newest
///   first. A's records are added in sequence order, so their ids order
///   them too.
/// * the records an access supersedes, which lie inside its range: those
///   starting in it, by (space, start).
/// A loop body runs on its outer state and is undone after
/// (checkpoint/rollback) rather than run on a copy of it.
class RecordSet {
public:
  struct Checkpoint {
    size_t added, killed;
  };

  explicit RecordSet(int numEngines) : byEngine(numEngines) {}

  void add(const Record &r) {
    assert(r.range.lo <= r.range.hi && "inverted byte range");
    uint32_t id = pool.size();
    pool.push_back(r);
    alive.push_back(true);
    byEngine[r.engine].push_back(id);
    byStart.insert(startKey(id));
  }

  /// Drops the records `acc` of `engine` supersedes: everything it covers
  /// if it writes (all of it is ordered before it now), else the reads of
  /// its own engine it covers.
  void supersede(const Access &acc, int engine) {
    const ByteRange &range = acc.range;
    // Ranges are never inverted (lo <= hi), so a covered record starts in
    // [lo, hi]; empty ones may start at hi.
    auto it = byStart.lower_bound({spaceKey(range), range.lo, 0});
    while (it != byStart.end() && std::get<0>(*it) == spaceKey(range) &&
           std::get<1>(*it) <= range.hi) {
      uint32_t id = std::get<2>(*it);
      const Record &r = pool[id];
      if (!range.contains(r.range) ||
          !(acc.write || (!r.write && r.engine == engine))) {
        ++it;
        continue;
      }
      it = byStart.erase(it);
      alive[id] = false;
      killed.push_back(id);
    }
  }

  /// The latest record of another engine than `b` that `b` has not
  /// observed (`seen` is b's clock) and that conflicts with `acc`. Records
  /// with the same sequence number share their engine and handle.
  const Record *latestConflict(int b, const Clock &seen,
                               ArrayRef<Access> acc) const {
    const Record *best = nullptr;
    for (int a = 0, e = byEngine.size(); a < e; ++a) {
      if (a == b)
        continue;
      for (uint32_t id : llvm::reverse(byEngine[a])) {
        const Record &r = pool[id];
        if (r.seq <= seen[a])
          break;
        if (!alive[id] || !conflicts(r, acc))
          continue;
        if (!best || r.seq > best->seq)
          best = &r;
        break;
      }
    }
    return best;
  }

  Checkpoint checkpoint() const { return {pool.size(), killed.size()}; }

  /// Restores the records as they were at `cp`.
  void rollback(Checkpoint cp) {
    for (size_t id = cp.added; id < pool.size(); ++id)
      if (alive[id])
        byStart.erase(startKey(id));
    for (std::vector<uint32_t> &ids : byEngine)
      while (!ids.empty() && ids.back() >= cp.added)
        ids.pop_back();
    for (size_t i = killed.size(); i > cp.killed; --i) {
      uint32_t id = killed[i - 1];
      if (id >= cp.added)
        continue;
      alive[id] = true;
      byStart.insert(startKey(id));
    }
    pool.resize(cp.added);
    alive.resize(cp.added);
    killed.resize(cp.killed);
  }

private:
  using StartKey = std::tuple<unsigned, int64_t, uint32_t>;
  static unsigned spaceKey(const ByteRange &r) {
    return static_cast<unsigned>(r.space);
  }
  StartKey startKey(uint32_t id) const {
    return {spaceKey(pool[id].range), pool[id].range.lo, id};
  }

  std::vector<Record> pool; // by id, in the order added
  std::vector<bool> alive;
  /// Per engine, its records' ids in order (superseded ones too: they are
  /// revived by a rollback; `alive` tells).
  std::vector<std::vector<uint32_t>> byEngine;
  std::set<StartKey> byStart;   // live records by start
  std::vector<uint32_t> killed; // superseded ids, in order
};

struct State {
  RecordSet records;
  std::vector<Clock> obs; // obs[observer][producer]
};

/// An instruction that may signal: a real one, or a nop created on demand
/// before or after `anchor`.
struct Handle {
  Operation *op = nullptr;
  Operation *anchor = nullptr;
  bool before = true;
  int engine;
  uint64_t seq;
  Clock snap;
  SmallVector<int64_t> sems; // semaphores it signals
  /// Set for the records of the previous iteration of `carriedLoop` owned by
  /// the instruction `op` of its body (see Synchronizer::loop).
  Operation *carriedLoop = nullptr;
};

/// A loop-carried edge through a semaphore of the loop's depth.
struct CarriedEdge {
  int producer, consumer;
  int64_t sem;
};

/// Per loop being synchronised: the carried edges so far and, per engine
/// pair, the previous-iteration sequence number of the last edge's signal.
struct LoopCarry {
  Operation *loop;
  int depth;
  SmallVector<CarriedEdge> edges;
  std::map<std::pair<int, int>, uint64_t> lastSeq;
};

class Synchronizer {
public:
  Synchronizer(MLIRContext *ctx, Location loc, int64_t dmaQueues,
               int64_t semaphoreLimit,
               const DenseMap<Operation *, SmallVector<Access>> &accesses,
               const DenseMap<Operation *, Operation *> &strictWaits,
               bool *outOfSemaphores)
      : ctx(ctx), loc(loc), dmaQueues(dmaQueues),
        semaphoreLimit(semaphoreLimit), accesses(accesses),
        strictWaits(strictWaits), outOfSemaphores(outOfSemaphores) {
    numEngines = 5 + dmaQueues;
    seqEngine = 3 + dmaQueues;
    actEngine = 4 + dmaQueues;
  }

  LogicalResult run(Block &body, NovaToNovaISAStats &stats);

private:
  int engineOf(Operation *op) {
    auto instr = cast<nova_isa::InstructionOpInterface>(op);
    switch (instr.getEngine()) {
    case Engine::Matrix: return 0;
    case Engine::Vector: return 1;
    case Engine::Collective: return 2;
    case Engine::Scalar: return seqEngine;
    case Engine::Activation: return actEngine;
    case Engine::DMA:
      if (auto dma = dyn_cast<nova_isa::DmaCopyOp>(op))
        return 3 + dma.getQueue();
      if (auto dma = dyn_cast<nova_isa::DmaGatherOp>(op))
        return 3 + dma.getQueue();
      if (auto dma = dyn_cast<nova_isa::DmaScatterOp>(op))
        return 3 + dma.getQueue();
      if (auto nop = dyn_cast<nova_isa::NopOp>(op))
        return 3 + nop.getQueue().value_or(0);
      return 3;
    }
    return seqEngine;
  }
  Engine engineKind(int e) {
    if (e == 0) return Engine::Matrix;
    if (e == 1) return Engine::Vector;
    if (e == 2) return Engine::Collective;
    if (e == seqEngine) return Engine::Scalar;
    if (e == actEngine) return Engine::Activation;
    return Engine::DMA;
  }

  unsigned newHandle(Operation *op, Operation *anchor, bool before, int engine,
                     uint64_t seq, Clock snap) {
    handles.push_back(Handle{op, anchor, before, engine, seq, std::move(snap), {}});
    return handles.size() - 1;
  }
  Operation *createNop(int engine, Operation *anchor, bool before) {
    OpBuilder b(ctx);
    if (before)
      b.setInsertionPoint(anchor);
    else
      b.setInsertionPointAfter(anchor);
    Operation *nop = createNop(b, anchor->getLoc(), engine);
    synthetic.insert(nop);
    return nop;
  }
  /// A `nop` on engine index `engine` (`queue q on dma` for a queue q > 0,
  /// so that queue-0 programs encode as before).
  Operation *createNop(OpBuilder &b, Location at, int engine) {
    IntegerAttr queue;
    if (engineKind(engine) == Engine::DMA && engine > 3)
      queue = b.getI64IntegerAttr(engine - 3);
    return nova_isa::NopOp::create(
        b, at, queue, nova_isa::EngineAttr::get(ctx, engineKind(engine)),
        nullptr, nullptr);
  }
  LogicalResult materialize(Handle &h) {
    if (!h.op)
      h.op = createNop(h.engine, h.anchor, h.before);
    return success();
  }
  static void addToList(Operation *op, StringRef name, int64_t sem) {
    SmallVector<int64_t> ids;
    if (auto attr = op->getAttrOfType<DenseI64ArrayAttr>(name))
      ids.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    if (llvm::is_contained(ids, sem))
      return;
    ids.push_back(sem);
    llvm::sort(ids);
    op->setAttr(name, DenseI64ArrayAttr::get(op->getContext(), ids));
  }
  /// The semaphore of loop-carried edges from `a` to `b` in loops at nesting
  /// depth `depth`, or nothing if all 64 are taken.
  std::optional<int64_t> carriedSemaphore(int a, int b, int depth) {
    auto key = std::make_tuple(a, b, depth);
    auto it = carriedSems.find(key);
    if (it != carriedSems.end())
      return it->second;
    // Carried edges are an optimisation (a wait on the end-of-body nop is
    // always possible): leave a quarter of the semaphores to the engine
    // pairs, which have no such fallback.
    int64_t id = semPair.size();
    if (id >= semaphoreLimit * (kCarriedSemaphoreShare - 1) /
                  kCarriedSemaphoreShare)
      return std::nullopt;
    carriedSems[key] = id;
    semPair.push_back({a, b});
    return id;
  }
  FailureOr<int64_t> semaphore(int a, int b) {
    auto key = std::make_pair(a, b);
    auto it = sems.find(key);
    if (it != sems.end())
      return it->second;
    int64_t id = semPair.size();
    if (id >= semaphoreLimit) {
      if (outOfSemaphores) {
        *outOfSemaphores = true;
        return failure();
      }
      return emitError(loc) << "needs more than " << semaphoreLimit
                            << " semaphores (lower dma-queues)";
    }
    sems[key] = id;
    semPair.push_back(key);
    return id;
  }
  static void merge(Clock &into, const Clock &from) {
    for (size_t i = 0; i < into.size() && i < from.size(); ++i)
      into[i] = std::max(into[i], from[i]);
  }

  /// Makes engine `b` observe every record conflicting with `acc`; each
  /// semaphore to wait on is passed to `addWait`. `anchor` is where a
  /// re-signalling nop goes (before it).
  LogicalResult sync(State &st, int b, ArrayRef<Access> acc,
                     function_ref<LogicalResult(int64_t)> addWait,
                     Operation *anchor);
  /// True if the wait of engine `b` on the previous-iteration record owned
  /// by handle `h` went through a carried semaphore (false: `h` is no
  /// carried handle or the edge cannot be one; see loop()).
  FailureOr<bool> carriedWait(State &st, int b, unsigned h,
                              function_ref<LogicalResult(int64_t)> addWait,
                              Operation *anchor);
  unsigned endHandleOf(Operation *loop, int engine) {
    return endHandles.lookup(std::make_pair(loop, engine));
  }
  LogicalResult issue(State &st, Operation *op);
  LogicalResult strictWait(State &st, Operation *placeholder, Operation *instr);
  LogicalResult loop(State &st, nova_isa::LoopOp loopOp);
  LogicalResult block(State &st, Block &blk);
  void addRecords(State &st, ArrayRef<Access> acc, int engine, uint64_t seq,
                  unsigned handle);
  void summarize(Block &blk, std::map<int, SmallVector<Access>> &summary);

  MLIRContext *ctx;
  Location loc;
  int64_t dmaQueues;
  /// Semaphores the program may use (the ISA has 64).
  int64_t semaphoreLimit;
  /// Engine indices: matrix 0, vector 1, collective 2, dma queue q 3 + q,
  /// the sequencer, the activation engine (unused without one).
  int numEngines, seqEngine, actEngine;
  const DenseMap<Operation *, SmallVector<Access>> &accesses;
  const DenseMap<Operation *, Operation *> &strictWaits;
  bool *outOfSemaphores;
  std::vector<Handle> handles;
  DenseMap<Operation *, unsigned> handleOf;
  std::map<std::pair<int, int>, int64_t> sems;
  std::map<std::tuple<int, int, int>, int64_t> carriedSems;
  std::vector<std::pair<int, int>> semPair;
  /// The loops being synchronised, outermost first.
  SmallVector<LoopCarry *> carries;
  std::map<std::pair<int, int>, uint64_t> lastSignal;
  DenseSet<Operation *> synthetic;
  /// Per loop and engine, the `nop` at the end of the body that owns the
  /// previous iteration's records no instruction of the body owns.
  DenseMap<std::pair<Operation *, int>, unsigned> endHandles;
  std::map<int, uint64_t> lastSeqOnEngine;
  std::map<int, unsigned> lastHandleOnEngine;
  uint64_t counter = 0;
  int64_t numWaits = 0;
};

} // namespace

FailureOr<bool> Synchronizer::carriedWait(
    State &st, int b, unsigned h, function_ref<LogicalResult(int64_t)> addWait,
    Operation *anchor) {
  Handle &hd = handles[h];
  if (!hd.carriedLoop)
    return false;
  LoopCarry *carry = nullptr;
  for (LoopCarry *c : carries)
    if (c->loop == hd.carriedLoop)
      carry = c;
  // The wait must run once per iteration: at the body's top level.
  if (!carry || anchor->getBlock() != &cast<nova_isa::LoopOp>(carry->loop)
                                           .getBody()
                                           .front())
    return false;
  int a = hd.engine;
  auto pair = std::make_pair(a, b);
  auto last = carry->lastSeq.find(pair);
  if (last != carry->lastSeq.end() && hd.seq <= last->second)
    return false;
  std::optional<int64_t> sem = carriedSemaphore(a, b, carry->depth);
  if (!sem)
    return false;
  addToList(hd.op, "signal", *sem);
  if (failed(addWait(*sem)))
    return failure();
  ++numWaits;
  carry->lastSeq[pair] = hd.seq;
  carry->edges.push_back(CarriedEdge{a, b, *sem});
  st.obs[b][a] = std::max(st.obs[b][a], hd.seq);
  return true;
}

LogicalResult Synchronizer::sync(State &st, int b, ArrayRef<Access> acc,
                                 function_ref<LogicalResult(int64_t)> addWait,
                                 Operation *anchor) {
  while (true) {
    const Record *best = st.records.latestConflict(b, st.obs[b], acc);
    if (!best)
      return success();
    int a = best->engine;
    unsigned h = best->handle;
    auto pair = std::make_pair(a, b);
    FailureOr<bool> carried = carriedWait(st, b, h, addWait, anchor);
    if (failed(carried))
      return failure();
    if (*carried)
      continue;
    if (handles[h].carriedLoop)
      h = endHandleOf(handles[h].carriedLoop, a);
    if (handles[h].seq <= lastSignal[pair])
      h = newHandle(nullptr, anchor, /*before=*/true, a, ++counter, st.obs[a]);
    FailureOr<int64_t> sem = semaphore(a, b);
    if (failed(sem) || failed(materialize(handles[h])))
      return failure();
    addToList(handles[h].op, "signal", *sem);
    handles[h].sems.push_back(*sem);
    if (failed(addWait(*sem)))
      return failure();
    ++numWaits;
    lastSignal[pair] = handles[h].seq;
    merge(st.obs[b], handles[h].snap);
    st.obs[b][a] = std::max(st.obs[b][a], handles[h].seq);
  }
}

void Synchronizer::addRecords(State &st, ArrayRef<Access> acc, int engine,
                              uint64_t seq, unsigned handle) {
  for (const Access &a : acc) {
    st.records.supersede(a, engine);
    st.records.add(Record{a.range, a.write, engine, seq, handle});
  }
}

LogicalResult Synchronizer::issue(State &st, Operation *op) {
  int b = engineOf(op);
  ArrayRef<Access> acc;
  auto it = accesses.find(op);
  if (it != accesses.end())
    acc = it->second;
  if (failed(sync(
          st, b, acc,
          [&](int64_t sem) {
            addToList(op, "wait", sem);
            return success();
          },
          op)))
    return failure();
  uint64_t seq = ++counter;
  unsigned h = newHandle(op, nullptr, true, b, seq, st.obs[b]);
  handleOf[op] = h;
  addRecords(st, acc, b, seq, h);
  lastSeqOnEngine[b] = seq;
  lastHandleOnEngine[b] = h;
  return success();
}

LogicalResult Synchronizer::strictWait(State &st, Operation *placeholder,
                                       Operation *instr) {
  unsigned h = handleOf.lookup(instr);
  int a = handles[h].engine;
  auto pair = std::make_pair(a, seqEngine);
  if (handles[h].seq <= lastSignal[pair])
    h = newHandle(nullptr, placeholder, true, a, ++counter, st.obs[a]);
  FailureOr<int64_t> sem = semaphore(a, seqEngine);
  if (failed(sem) || failed(materialize(handles[h])))
    return failure();
  addToList(handles[h].op, "signal", *sem);
  handles[h].sems.push_back(*sem);
  lastSignal[pair] = handles[h].seq;
  ++numWaits;
  OpBuilder b(placeholder);
  nova_isa::SemWaitOp::create(b, placeholder->getLoc(),
                              b.getDenseI64ArrayAttr({*sem}),
                              nova_isa::EngineAttr::get(ctx, Engine::Scalar));
  placeholder->erase();
  // Everything dispatched from now on observes the waited instruction.
  Clock seen = handles[h].snap;
  seen.resize(numEngines, 0);
  seen[a] = std::max(seen[a], handles[h].seq);
  for (Clock &c : st.obs)
    merge(c, seen);
  return success();
}

void Synchronizer::summarize(Block &blk,
                             std::map<int, SmallVector<Access>> &summary) {
  blk.walk([&](Operation *op) {
    auto it = accesses.find(op);
    if (it == accesses.end())
      return;
    auto &list = summary[engineOf(op)];
    list.append(it->second.begin(), it->second.end());
  });
}

LogicalResult Synchronizer::loop(State &st, nova_isa::LoopOp loopOp) {
  Block &body = loopOp.getBody().front();
  std::map<int, SmallVector<Access>> summary;
  summarize(body, summary);

  // Entry: each engine of the body waits for conflicting outer work.
  for (auto &[b, acc] : summary) {
    Operation *fence = nullptr;
    if (failed(sync(
            st, b, acc,
            [&](int64_t sem) -> LogicalResult {
              if (!fence) {
                Handle tmp{nullptr, loopOp, true, b, 0, {}, {}};
                if (failed(materialize(tmp)))
                  return failure();
                fence = tmp.op;
              }
              addToList(fence, "wait", sem);
              return success();
            },
            loopOp)))
      return failure();
  }

  // The previous iteration's accesses. Instructions directly in the body own
  // theirs (sequence numbers in body order); accesses in nested loops are
  // owned by a nop at the end of the body, which comes after all of them.
  // The body runs on `st` and is undone after it: the exit starts from the
  // state before the loop.
  RecordSet::Checkpoint before = st.records.checkpoint();
  std::vector<Clock> obsBefore = st.obs;
  LoopCarry carry{loopOp, static_cast<int>(carries.size()), {}, {}};
  for (Operation &op : body) {
    if (synthetic.contains(&op) || op.getNumRegions() != 0)
      continue;
    auto it = accesses.find(&op);
    if (it == accesses.end())
      continue;
    int a = engineOf(&op);
    if (a == seqEngine)
      continue;
    uint64_t seq = ++counter;
    unsigned h = newHandle(&op, nullptr, true, a, seq, Clock(numEngines, 0));
    handles[h].carriedLoop = loopOp;
    for (const Access &x : it->second)
      st.records.add(Record{x.range, x.write, a, seq, h});
  }
  std::map<int, unsigned> ends;
  for (auto &[a, acc] : summary) {
    uint64_t seq = ++counter;
    unsigned h = newHandle(nullptr, body.getTerminator(), true, a, seq,
                           Clock(numEngines, 0));
    ends[a] = h;
    endHandles[std::make_pair(loopOp.getOperation(), a)] = h;
  }
  body.walk([&](Operation *op) {
    if (op->getBlock() == &body)
      return;
    auto it = accesses.find(op);
    if (it == accesses.end())
      return;
    int a = engineOf(op);
    unsigned h = ends[a];
    for (const Access &x : it->second)
      st.records.add(Record{x.range, x.write, a, handles[h].seq, h});
  });
  carries.push_back(&carry);
  LogicalResult result = block(st, body);
  carries.pop_back();
  st.records.rollback(before);
  st.obs = std::move(obsBefore);
  if (failed(result))
    return failure();

  // Credits and drains of the loop-carried semaphores.
  auto creditAndDrain = [&](int a, int b, int64_t sem) -> LogicalResult {
    Handle credit{nullptr, loopOp, true, a, 0, {}, {}};
    if (failed(materialize(credit)))
      return failure();
    addToList(credit.op, "signal", sem);
    Handle drain{nullptr, loopOp, false, b, 0, {}, {}};
    if (failed(materialize(drain)))
      return failure();
    addToList(drain.op, "wait", sem);
    return success();
  };
  for (auto &[a, h] : ends)
    for (int64_t sem : handles[h].sems)
      if (failed(creditAndDrain(a, semPair[sem].second, sem)))
        return failure();
  for (const CarriedEdge &e : carry.edges)
    if (failed(creditAndDrain(e.producer, e.consumer, e.sem)))
      return failure();

  // Exit: the body's accesses are owned by a nop right after the loop. They
  // supersede the records from before the loop they cover (the entry fence
  // ordered those first), never each other: the nops after the loop are not
  // ordered among themselves, so one engine's last write in the body does not
  // come after another engine's last read of it (a load's write must not hide
  // the vector read of the same buffer in the last iteration).
  std::vector<Record> exits;
  for (auto &[a, acc] : summary) {
    uint64_t seq = ++counter;
    unsigned h = newHandle(nullptr, loopOp, false, a, seq, st.obs[a]);
    for (const Access &x : acc) {
      st.records.supersede(x, a);
      exits.push_back(Record{x.range, x.write, a, seq, h});
    }
    lastSeqOnEngine[a] = seq;
    lastHandleOnEngine[a] = h;
  }
  for (const Record &r : exits)
    st.records.add(r);
  return success();
}

LogicalResult Synchronizer::block(State &st, Block &blk) {
  for (Operation &op : llvm::make_early_inc_range(blk)) {
    if (synthetic.contains(&op))
      continue;
    if (auto loopOp = dyn_cast<nova_isa::LoopOp>(op)) {
      if (failed(loop(st, loopOp)))
        return failure();
      continue;
    }
    auto wait = strictWaits.find(&op);
    if (wait != strictWaits.end()) {
      if (failed(strictWait(st, &op, wait->second)))
        return failure();
      continue;
    }
    if (engineOf(&op) == seqEngine)
      continue;
    if (failed(issue(st, &op)))
      return failure();
  }
  return success();
}

LogicalResult Synchronizer::run(Block &body, NovaToNovaISAStats &stats) {
  State st{RecordSet(numEngines),
           std::vector<Clock>(numEngines, Clock(numEngines, 0))};
  if (failed(block(st, body)))
    return failure();

  // Drain: every engine that ran something signals the sequencer.
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(&body);
  SmallVector<int64_t> drainSems;
  for (auto &[e, seq] : lastSeqOnEngine) {
    if (st.obs[seqEngine][e] >= seq)
      continue;
    auto pair = std::make_pair(e, seqEngine);
    FailureOr<int64_t> sem = semaphore(e, seqEngine);
    if (failed(sem))
      return failure();
    Operation *signaller = nullptr;
    if (e <= 3 || e == actEngine) {
      signaller = createNop(b, loc, e);
    } else {
      // Other DMA queues: their last instruction signals when it can (no
      // extra nop, so straight-line programs encode as before), else a nop.
      Handle &h = handles[lastHandleOnEngine[e]];
      if (h.seq > lastSignal[pair]) {
        if (failed(materialize(h)))
          return failure();
        signaller = h.op;
      } else {
        signaller = createNop(b, loc, e);
      }
    }
    addToList(signaller, "signal", *sem);
    drainSems.push_back(*sem);
  }
  if (!drainSems.empty()) {
    llvm::sort(drainSems);
    nova_isa::SemWaitOp::create(b, loc, b.getDenseI64ArrayAttr(drainSems),
                                nova_isa::EngineAttr::get(ctx, Engine::Scalar));
    numWaits += drainSems.size();
  }
  nova_isa::HaltOp::create(b, loc,
                           nova_isa::EngineAttr::get(ctx, Engine::Scalar));
  stats.semaphores += semPair.size();
  stats.waits += numWaits;
  return success();
}

LogicalResult mlir::nova::isa_lowering::synchronize(
    Block &body, Location loc, int64_t dmaQueues, int64_t semaphoreLimit,
    const DenseMap<Operation *, SmallVector<Access>> &accesses,
    const DenseMap<Operation *, Operation *> &strictWaits,
    NovaToNovaISAStats &stats, bool *outOfSemaphores) {
  Synchronizer s(loc.getContext(), loc, dmaQueues, semaphoreLimit, accesses,
                 strictWaits, outOfSemaphores);
  return s.run(body, stats);
}
