//===- AttentionBackwardToNova.cpp - flash attention backward ----*- C++ -*-===//
//
// nova.attention_backward on buffers becomes, for every batch b (a loop):
//
//   query[b] (scaled once), keys[b], value[b] and grad_out[b] loaded into
//   SRAM in the inputs' type; delta = rowsum(grad_out * out) (f32) and lse
//   as columns [T, 1];
//   for every key block j (Bc keys) and every query block i that sees it
//   (all of them, or i >= j when causal), in straight-line code:
//     S = Q_i K_j^T and dP = dO_i V_j^T into accumulator slots, issued
//     kAhead pairs ahead of their vector work (the matrix unit computes the
//     next scores while the vector unit works on these); in bf16, -lse and
//     -delta are extra columns of Q and dO against columns of ones in K and
//     V, so these matmuls subtract them;
//     on the vector unit: P = exp(S - lse_i) (the diagonal block first adds
//     a -1e38 bias above the diagonal), dS = P (dP - delta_i), both rounded
//     to bf16 when the inputs are bf16; with dropout (V scaled by
//     keep_scale once), dV reads the dropped P (a select) and dS takes
//     dP - delta_i where kept and -delta_i where dropped (one select);
//     dK_j^T += Q_i^T dS, dV_j^T += dO_i^T P and dQ_i^T += K_j^T dS^T:
//     full-width matmuls (dS or P stationary, the D rows of the other
//     operand streaming) accumulating in the accumulator, where dQ^T of the
//     whole batch stays until its last key block;
//   dK_j and dV_j (dQ, times scale: K is not scaled) transposed out and
//   written kWriteDelay pairs after key block j's (the batch's) last
//   matmuls.
//
// The batches of one loop iteration form one stream of pairs: the next
// batch's loads are emitted after this batch's first pairs, its row terms
// one vector instruction per pair, and its first scores among this batch's
// last pairs, so the matrix unit does not drain between batches.
//
// Matrix-unit order. A matmul that waits on a semaphore loads its stationary
// operand from the moment the instruction is ready (docs/isa.md 2.3), and
// the simulator takes that moment from the semaphore's latest signal: a
// vector instruction signalling the matrix unit just before a waiting matmul
// reaches the queue costs that matmul up to W + F cycles (the load and the
// previous matmul's drain) even when the signal it consumes is older. So each pair's
// gradients wait once: dK^T first, on dS (the vector unit's last result for
// the pair, which orders P too), then dV^T and dQ^T without waiting; with dV^T
// first, dK^T waited on the multiply that had just signalled, 286 cycles a
// pair. Likewise transposes that wait for matmuls are queued on the in-order
// vector unit only where it reaches them after those matmuls.
//
// The score matrix and the probabilities never reach HBM; each operand is
// read once and each gradient written once.
//
//===----------------------------------------------------------------------===//
#include "nova/Dialect/Nova/IR/NovaAttentionTrainOps.h"
#include "nova/Utils/Divisors.h"
#include "Patterns.h"
#include "Staging.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <deque>
#include <functional>

using namespace mlir;
using namespace mlir::nova;

namespace {

/// One (key block, query block) pair of a batch.
struct Pair {
  int64_t j, i;
  bool firstOfKey, lastOfKey, diagonal;
};

/// A pair of batch `u` (of a loop iteration's batches) in the iteration's
/// stream of pairs.
struct Item {
  int64_t u;
  Pair pr;
  bool firstOfBatch, lastOfBatch;
  /// The key block's accumulator set of dK^T and dV^T.
  int64_t keySet;
};

class BackwardEmitter {
public:
  /// Accumulator slots for the scores and dP: pair n's go to slot n % kSlots,
  /// issued kAhead pairs before its vector work.
  static constexpr int64_t kSlots = 4;
  static constexpr int64_t kAhead = 3;
  /// Pairs between a key block's (a batch's) last gradient matmuls and the
  /// vector unit's transposes of dK^T and dV^T (of dQ^T): the vector unit
  /// runs about kAhead pairs ahead of the gradient matmuls, so a transpose
  /// queued sooner would wait there for the matmuls and hold up the softmax
  /// work behind it in the in-order vector queue.
  static constexpr int64_t kWriteDelay = 5;
  /// Pairs between the next batch's loads and its first row-term
  /// instruction (the loads land meanwhile); one row-term instruction per
  /// pair after that.
  static constexpr int64_t kChoreDelay = 3;
  /// Pairs of straight-line code per loop iteration, at most (whole batches).
  static constexpr int64_t kPairsPerIteration = 1024;

  BackwardEmitter(PatternRewriter &b, Location loc, AttentionBackwardOp op,
                  int64_t block, int64_t matrixRows)
      : b(b), loc(loc), op(op), f32(b.getF32Type()),
        element(cast<MemRefType>(op.getQuery().getType()).getElementType()) {
    ArrayRef<int64_t> q = shape(op.getQuery());
    batch = q[0];
    tq = q[1];
    d = q[2];
    tk = shape(op.getKeys())[1];
    dv = shape(op.getValue())[2];
    br = largestDivisorAtMost(tq, block);
    bc = op.getCausal() ? br : largestDivisorAtMost(tk, block);
    // The row terms ride on the score matmuls when the matrix unit has rows
    // to spare: S - lse = [Q, -lse] [K, 1]^T and dP - delta = [dO, -delta]
    // [V, 1]^T, so the vector unit does neither subtraction. In bf16 each
    // term is two columns (its bf16 rounding and the remainder): one would
    // shift exp's argument by up to 2^-9 of lse.
    // Only bf16 takes them: in f32 the matrix unit is the busier engine.
    // With dropout the dP column gives keep-independent dP - delta, and a
    // dropped entry's term is -delta alone (vectorWork's select).
    int64_t columns = 2;
    if (!element.isF32() && d + columns <= matrixRows && dv + columns <= matrixRows)
      extra = columns;
    if (std::optional<APFloat> s = op.getKeepScale())
      keepScale = s->convertToDouble();
    hasKeep = bool(op.getKeep());
  }

  /// Bytes the kernel keeps in SRAM and in the accumulator with `sets`
  /// sets of per-batch buffers and `keys` sets of key-block gradients.
  int64_t sramBytes(int64_t sets = 1, int64_t keys = 2) const {
    int64_t e = element.isF32() ? 4 : 2;
    int64_t operands = e * (tq * d + tk * d + tk * dv + tq * dv + 2 * (tq + tk) * extra);
    // out and grad_out as f32 (and their staging), lse, delta, dQ twice.
    int64_t rows = 4 * (3 * tq * dv + 2 * tq + 2 * tq * d + (hasKeep && extra ? tq : 0));
    int64_t tiles = kSlots * (4 + 2 * e) * br * bc + 4 * br * bc +
                    4 * keys * bc * (d + dv);
    // Dropout: per slot the keep mask and the dropped P.
    if (hasKeep)
      tiles += kSlots * (1 + 4 + e) * br * bc;
    return sets * (operands + rows) + tiles;
  }
  int64_t accBytes(int64_t sets = 1, int64_t keys = 2) const {
    return 4 * (sets * d * tq + keys * bc * (d + dv) + kSlots * 2 * br * bc);
  }

  void emit() {
    if (op.getKeep()) {
      zero = alloc({1, 1});
      fill(0.0, zero);
    }
    if (op.getCausal()) {
      // bias[r, c] = -1e38 where key c is after query r: exp gives 0 there.
      Value rows = alloc({br, bc}), cols = alloc({br, bc});
      IotaOp::create(b, loc, rows, 0);
      IotaOp::create(b, loc, cols, 1);
      bias = alloc({br, bc});
      ew(ElementwiseKind::CmpGt, {cols, rows}, bias);
      ew(ElementwiseKind::Mul, {bias}, bias, -1e38);
    }
    allocate();
    // Several batches per loop iteration (each iteration boundary
    // synchronises the engines: the matrix unit drains and restarts),
    // alternating between the buffer sets, as one stream of pairs: the next
    // batch's loads and row terms are emitted among this batch's first pairs
    // and its first scores among this batch's last ones.
    int64_t perIteration = std::max<int64_t>(
        2, kPairsPerIteration / (int64_t)pairs().size());
    int64_t unroll = largestDivisorAtMost(batch, perIteration);
    forLoop(batch / unroll, [&](Value it) {
      Value first = arith::MulIOp::create(b, loc, it, index(unroll));
      SmallVector<Value> batches = {first};
      for (int64_t u = 1; u < unroll; ++u)
        batches.push_back(arith::AddIOp::create(b, loc, first, index(u)));
      iteration(batches);
    });
  }

  /// Two sets of per-batch buffers and four of key-block gradients when
  /// they fit (half of SRAM, the accumulator), else fewer.
  int64_t sets = 1, keySets = 2;
  void chooseSets(int64_t sramBudget, int64_t accBudget) {
    for (auto [s, k] : {std::pair<int64_t, int64_t>{2, 4}, {2, 2}, {1, 4}, {1, 2}})
      if (sramBytes(s, k) <= sramBudget && accBytes(s, k) <= accBudget) {
        sets = s;
        keySets = k;
        return;
      }
  }

private:
  static ArrayRef<int64_t> shape(Value v) {
    return cast<MemRefType>(v.getType()).getShape();
  }
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  void forLoop(int64_t n, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, index(0), index(n), index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }
  Value alloc(ArrayRef<int64_t> shape, MemorySpace space = MemorySpace::SRAM,
              Type type = {}) {
    return staging::allocTile(b, loc, shape, type ? type : f32, space);
  }
  void fill(double value, Value out) {
    FillOp::create(b, loc, b.getF64FloatAttr(value), out);
  }
  void ew(ElementwiseKind kind, ValueRange inputs, Value out,
          std::optional<double> scalar = std::nullopt) {
    ElementwiseOp::create(b, loc, kind, inputs, out,
                          scalar ? b.getF64FloatAttr(*scalar) : Attribute());
  }
  Value view(Value buffer, ArrayRef<OpFoldResult> offsets,
             ArrayRef<int64_t> sizes) {
    SmallVector<OpFoldResult> s, one;
    for (int64_t n : sizes) {
      s.push_back(attr(n));
      one.push_back(attr(1));
    }
    return memref::SubViewOp::create(b, loc, buffer, offsets, s, one);
  }
  Value transposed(Value tile) {
    AffineMap swap =
        AffineMap::getPermutationMap(ArrayRef<unsigned>{1, 0}, b.getContext());
    return memref::TransposeOp::create(b, loc, tile, AffineMapAttr::get(swap));
  }
  /// `tile` [1, R, C] as an [R, C] view.
  Value flat(Value tile) {
    ArrayRef<int64_t> s = shape(tile);
    return staging::reshapeTile(b, loc, tile, {s[1], s[2]});
  }

  /// Columns [c0, c0 + n) of an on-chip [1, R, C] tile.
  Value columns(Value tile3, int64_t c0, int64_t n) {
    return view(tile3, {attr(0), attr(0), attr(c0)}, {1, shape(tile3)[1], n});
  }

  /// The buffers of one batch (`sets` of them), allocated once and reused
  /// by every batch.
  struct BatchBuffers {
    Value q3, k3, v3, do3, do32, o32, lseRow, lse, delta, dqt, dqScaled, dq3;
    /// Dropout with the row terms on the matrix unit: -delta (f32), a
    /// dropped entry's dP - delta.
    Value negDelta;
  };

  void allocate() {
    for (int64_t set = 0; set < sets; ++set)
      perBatch[set] = allocateBatchBuffers();
    allocateShared();
  }

  BatchBuffers allocateBatchBuffers() {
    BatchBuffers buf;
    buf.q3 = alloc({1, tq, d + extra}, MemorySpace::SRAM, element);
    buf.k3 = alloc({1, tk, d + extra}, MemorySpace::SRAM, element);
    buf.v3 = alloc({1, tk, dv + extra}, MemorySpace::SRAM, element);
    buf.do3 = alloc({1, tq, dv + extra}, MemorySpace::SRAM, element);
    // grad_out in the inputs' type is read where it lies (float types mix);
    // an f32 one is loaded in f32 and narrowed into do3.
    bool gradIn = cast<MemRefType>(op.getGradOut().getType()).getElementType() == element;
    buf.do32 = gradIn ? columns(buf.do3, 0, dv) : alloc({1, tq, dv});
    if (extra) {
      // The keys' and values' columns of ones, once: loads write the others.
      fill(1.0, columns(buf.k3, d, extra));
      fill(1.0, columns(buf.v3, dv, extra));
    }
    buf.o32 = alloc({1, tq, dv});
    buf.lseRow = alloc({1, tq});
    buf.lse = alloc({tq, 1});
    buf.delta = alloc({tq, 1});
    if (hasKeep && extra)
      buf.negDelta = alloc({tq, 1});
    buf.dqt = alloc({d, tq}, MemorySpace::ACC);
    buf.dqScaled = alloc({d, tq});
    buf.dq3 = alloc({1, tq, d});
    return buf;
  }

  /// The buffers every batch shares.
  void allocateShared() {
    if (extra && !element.isF32()) {
      negated = alloc({tq, 1});
    }
    bool narrow = !element.isF32();
    for (int64_t s = 0; s < kSlots; ++s) {
      scores[s] = alloc({br, bc}, MemorySpace::ACC);
      dp[s] = alloc({br, bc}, MemorySpace::ACC);
      p[s] = alloc({br, bc});
      ds[s] = alloc({br, bc});
      // With dropout dV reads the dropped P: no narrow copy of P.
      pIn[s] = narrow && !op.getKeep() ? alloc({br, bc}, MemorySpace::SRAM, element) : p[s];
      dsIn[s] = narrow ? alloc({br, bc}, MemorySpace::SRAM, element) : ds[s];
      if (op.getKeep()) {
        keep3[s] = alloc({1, br, bc}, MemorySpace::SRAM, b.getI1Type());
        keep[s] = staging::reshapeTile(b, loc, keep3[s], {br, bc});
        // The select writes the inputs' type itself (float types mix).
        pDropIn[s] = alloc({br, bc}, MemorySpace::SRAM, element);
      }
    }
    for (int64_t s = 0; s < keySets; ++s) {
      dkt.push_back(alloc({d, bc}, MemorySpace::ACC));
      dvt.push_back(alloc({dv, bc}, MemorySpace::ACC));
      dkOut.push_back(alloc({1, bc, d}));
      dvOut.push_back(alloc({1, bc, dv}));
    }
  }

  /// Vector-unit work queued for later emission.
  using Chore = std::function<void()>;

  /// Batch `bi` of HBM `operand` [B, R, C] into SRAM `tile` [1, R, C] of
  /// type `type`, through a staging copy (appended to `chores`) when the
  /// types differ.
  void load(Value operand, Value bi, Value tile, SmallVectorImpl<Chore> &chores) {
    ArrayRef<int64_t> s = shape(operand);
    if (shape(tile)[2] != s[2])
      tile = columns(tile, 0, s[2]);
    Value hbm = view(operand, {bi, attr(0), attr(0)}, {1, s[1], s[2]});
    Type from = cast<MemRefType>(operand.getType()).getElementType();
    if (from == cast<MemRefType>(tile.getType()).getElementType()) {
      staging::copy(b, loc, hbm, tile);
      return;
    }
    Value staged = alloc({1, s[1], s[2]}, MemorySpace::SRAM, from);
    staging::copy(b, loc, hbm, staged);
    chores.push_back([=, this] { ew(ElementwiseKind::Copy, {staged}, tile); });
  }
  void store(Value tile, Value operand, Value bi, OpFoldResult row0) {
    ArrayRef<int64_t> s = shape(tile);
    staging::copy(b, loc, tile, view(operand, {bi, row0, attr(0)}, {1, s[1], s[2]}));
  }

  /// The pairs of a batch, key-block major.
  SmallVector<Pair> pairs() {
    SmallVector<Pair> all;
    int64_t nq = tq / br, nk = tk / bc;
    for (int64_t j = 0; j < nk; ++j) {
      int64_t first = op.getCausal() ? j : 0;
      for (int64_t i = first; i < nq; ++i)
        all.push_back({j, i, i == first, i + 1 == nq, op.getCausal() && i == j});
    }
    return all;
  }

  /// -term into columns [col, col + extra) of the [R, C] tile: the term
  /// itself in f32; in bf16, its rounding and the remainder (-term minus
  /// the rounding, written as bf16 by the subtraction: float types mix).
  /// `scratch` (f32, the term's shape) keeps -term when given (else a
  /// shared buffer).
  void writeNegated(Value term, Value tile, int64_t col,
                    SmallVectorImpl<Chore> &chores, Value scratch = {}) {
    int64_t rows = shape(term)[0];
    Value first = view(tile, {attr(0), attr(col)}, {rows, 1});
    if (element.isF32()) {
      chores.push_back([=, this] { ew(ElementwiseKind::Mul, {term}, first, -1.0); });
      return;
    }
    Value second = view(tile, {attr(0), attr(col + 1)}, {rows, 1});
    Value neg = scratch ? scratch : negated;
    chores.push_back([=, this] {
      ew(ElementwiseKind::Mul, {term}, neg, -1.0);
      ew(ElementwiseKind::Copy, {neg}, first);
    });
    chores.push_back([=, this] { ew(ElementwiseKind::Sub, {neg, first}, second); });
  }

  /// Batch `bi`'s loads into `set` (emitted now) and its row terms (the
  /// vector work on them, appended to `chores` in order).
  void prologue(Value bi, int64_t set, SmallVectorImpl<Chore> &chores) {
    const BatchBuffers &buf = perBatch[set];
    load(op.getQuery(), bi, buf.q3, chores);
    double scale = op.getScale().convertToDouble();
    if (scale != 1.0) {
      Value qd = columns(buf.q3, 0, d);
      chores.push_back([=, this] { ew(ElementwiseKind::Mul, {qd}, qd, scale); });
    }
    load(op.getKeys(), bi, buf.k3, chores);
    load(op.getValue(), bi, buf.v3, chores);
    // Dropout: dP = keep * keepScale * dO V^T, the factor in V once.
    if (op.getKeep() && keepScale != 1.0) {
      Value vd = columns(buf.v3, 0, dv);
      double k = keepScale;
      chores.push_back([=, this] { ew(ElementwiseKind::Mul, {vd}, vd, k); });
    }
    // grad_out once from HBM (narrowed on chip when it is f32 and the
    // inputs are not).
    if (cast<MemRefType>(op.getGradOut().getType()).getElementType() == element) {
      load(op.getGradOut(), bi, buf.do3, chores);
    } else {
      load(op.getGradOut(), bi, buf.do32, chores);
      Value narrow = columns(buf.do3, 0, dv);
      chores.push_back([=, this] { ew(ElementwiseKind::Copy, {buf.do32}, narrow); });
    }
    load(op.getOut(), bi, buf.o32, chores);
    staging::copy(b, loc, view(op.getLse(), {bi, attr(0)}, {1, tq}), buf.lseRow);
    // delta = rowsum(dO * O): the softmax backward's per-row term.
    chores.push_back([=, this] {
      ew(ElementwiseKind::Mul, {buf.do32, buf.o32}, buf.o32);
    });
    chores.push_back([=, this] {
      ReduceOp::create(b, loc, ReductionKind::Sum, flat(buf.o32), buf.delta, 1);
    });
    chores.push_back([=, this] {
      TransposeOp::create(b, loc, buf.lseRow, buf.lse, ArrayRef<int64_t>{1, 0});
    });
    if (extra) {
      writeNegated(buf.lse, flat(buf.q3), d, chores);
      writeNegated(buf.delta, flat(buf.do3), dv, chores, buf.negDelta);
    }
  }

  /// One loop iteration: the batches `batches` (the u-th in set u % sets)
  /// as one stream of pairs. Pair n's S and dP are issued kAhead pairs
  /// before its vector work (across batches when the next batch's buffers
  /// are loaded by then: two sets); the next batch's loads follow this
  /// batch's first kAhead pairs and its row terms come one instruction per
  /// pair; dK, dV and dQ are transposed out kWriteDelay pairs after their
  /// last matmuls, or sooner when their accumulator is needed again.
  void iteration(ArrayRef<Value> batches) {
    int64_t unroll = batches.size();
    iterationBatches.assign(batches.begin(), batches.end());
    SmallVector<Pair> batchPairs = pairs();
    int64_t perBatch = batchPairs.size(), keyBlocks = tk / bc;
    SmallVector<Item> all;
    for (int64_t u = 0; u < unroll; ++u)
      for (auto [n, pr] : llvm::enumerate(batchPairs))
        all.push_back({u, pr, n == 0, n + 1 == batchPairs.size(),
                       (u * keyBlocks + pr.j) % keySets});
    int64_t total = all.size();

    // Row-term chores of the batches whose loads are emitted, in order.
    std::deque<std::pair<int64_t, Chore>> chores;
    int64_t choresFrom = 0; // the pair from which chores are paced
    SmallVector<bool> loaded(unroll, false);
    auto startBatch = [&](int64_t u, int64_t n) {
      SmallVector<Chore> work;
      prologue(batches[u], u % sets, work);
      for (Chore &c : work)
        chores.push_back({u, std::move(c)});
      loaded[u] = true;
      choresFrom = n + kChoreDelay;
    };
    auto choresOf = [&](int64_t u) {
      while (!chores.empty() && chores.front().first <= u) {
        chores.front().second();
        chores.pop_front();
      }
    };

    // Transposes out of the accumulator, due after pair `due`.
    struct Pending {
      int64_t due, u, j, keySet;
      bool dq;
    };
    SmallVector<Pending> pending;
    auto emitPending = [&](const Pending &w) {
      if (w.dq)
        writeQueries(w.u % sets, batches[w.u]);
      else
        writeKeyBlock(w.keySet, w.j, batches[w.u]);
    };
    auto flushIf = [&](function_ref<bool(const Pending &)> pred) {
      SmallVector<Pending> keep;
      for (const Pending &w : pending) {
        if (pred(w))
          emitPending(w);
        else
          keep.push_back(w);
      }
      pending = std::move(keep);
    };

    int64_t issued = 0;
    auto issueScores = [&](int64_t upTo) {
      while (issued < total && issued <= upTo && loaded[all[issued].u]) {
        choresOf(all[issued].u);
        matrixScores(all[issued], issued % kSlots);
        ++issued;
      }
    };

    startBatch(0, 0);
    for (int64_t n = 0; n < total; ++n) {
      const Item &it = all[n];
      if (!loaded[it.u]) {
        // One set: this batch's loads overwrite the previous one's buffers.
        flushIf([](const Pending &) { return true; });
        startBatch(it.u, n);
      }
      issueScores(n + kAhead);
      vectorWork(it, n % kSlots);
      if (sets == 2 && it.u + 1 < unroll && !loaded[it.u + 1] &&
          (n - perBatch * it.u == kAhead || it.lastOfBatch))
        startBatch(it.u + 1, n);
      if (n >= choresFrom && !chores.empty()) {
        chores.front().second();
        chores.pop_front();
      }
      flushIf([&](const Pending &w) { return w.due <= n; });
      // The gradients' accumulators are free again.
      if (it.pr.firstOfKey)
        flushIf([&](const Pending &w) { return !w.dq && w.keySet == it.keySet; });
      if (it.firstOfBatch)
        flushIf([&](const Pending &w) { return w.dq && w.u % sets == it.u % sets; });
      gradients(it, n % kSlots);
      if (it.pr.lastOfKey)
        pending.push_back({n + kWriteDelay, it.u, it.pr.j, it.keySet, false});
      if (it.lastOfBatch)
        pending.push_back({n + kWriteDelay, it.u, 0, 0, true});
    }
    choresOf(unroll);
    flushIf([](const Pending &) { return true; });
  }

  /// Block rows of an on-chip [R, C] operand, its first `n` columns.
  Value rowsOf(Value tile, int64_t row0, int64_t rows, int64_t n) {
    return view(tile, {attr(row0), attr(0)}, {rows, n});
  }
  const BatchBuffers &of(const Item &it) { return perBatch[it.u % sets]; }
  Value queryRows(const Item &it, int64_t plus = 0) {
    return rowsOf(flat(of(it).q3), it.pr.i * br, br, d + plus);
  }
  Value gradRows(const Item &it, int64_t plus = 0) {
    return rowsOf(flat(of(it).do3), it.pr.i * br, br, dv + plus);
  }
  Value keyRows(const Item &it, int64_t plus = 0) {
    return rowsOf(flat(of(it).k3), it.pr.j * bc, bc, d + plus);
  }
  Value valueRows(const Item &it, int64_t plus = 0) {
    return rowsOf(flat(of(it).v3), it.pr.j * bc, bc, dv + plus);
  }

  /// S = Q_i K_j^T and dP = dO_i V_j^T (minus lse and delta, with the
  /// augmented columns).
  void matrixScores(const Item &it, int64_t slot) {
    if (op.getKeep()) {
      // The pair's keep mask, loaded kAhead pairs before its vector work.
      Value hbm = view(op.getKeep(),
                       {iterationBatches[it.u], attr(it.pr.i * br), attr(it.pr.j * bc)},
                       {1, br, bc});
      staging::copy(b, loc, hbm, keep3[slot]);
    }
    MatmulOp::create(b, loc, queryRows(it, extra), transposed(keyRows(it, extra)),
                     scores[slot], /*accumulate=*/false);
    MatmulOp::create(b, loc, gradRows(it, extra), transposed(valueRows(it, extra)),
                     dp[slot], /*accumulate=*/false);
  }

  /// P = exp(S - lse_i), dS = P (dP - delta_i).
  void vectorWork(const Item &it, int64_t slot) {
    const Pair &pr = it.pr;
    Value s = scores[slot];
    if (pr.diagonal) {
      ew(ElementwiseKind::Add, {s, bias}, p[slot]);
      s = p[slot];
    }
    if (extra) {
      // S and dP came with lse and delta subtracted.
      ew(ElementwiseKind::Exp, {s}, p[slot]);
      if (op.getKeep()) {
        // dV reads the dropped P; dS = P (keep dP - delta): dP - delta
        // where kept (V carries the scale), -delta where dropped.
        dropP(slot);
        Value negDelta = view(of(it).negDelta, {attr(pr.i * br), attr(0)}, {br, 1});
        ew(ElementwiseKind::Select, {keep[slot], dp[slot], negDelta}, ds[slot]);
        ew(ElementwiseKind::Mul, {ds[slot], p[slot]}, dsIn[slot]);
      } else {
        if (pIn[slot] != p[slot])
          ew(ElementwiseKind::Copy, {p[slot]}, pIn[slot]);
        ew(ElementwiseKind::Mul, {dp[slot], p[slot]}, dsIn[slot]);
      }
      return;
    }
    ew(ElementwiseKind::Sub, {s, view(of(it).lse, {attr(pr.i * br), attr(0)}, {br, 1})},
       p[slot]);
    ew(ElementwiseKind::Exp, {p[slot]}, p[slot]);
    // With dropout dV reads the dropped P only: no undropped copy.
    if (pIn[slot] != p[slot] && !op.getKeep())
      ew(ElementwiseKind::Copy, {p[slot]}, pIn[slot]);
    Value dpKept = dp[slot];
    if (op.getKeep()) {
      // dV reads the dropped P; dS = P (keep dP - delta) (V carries the scale).
      dropP(slot);
      ew(ElementwiseKind::Select, {keep[slot], dp[slot], zero}, ds[slot]);
      dpKept = ds[slot];
    }
    ew(ElementwiseKind::Sub,
       {dpKept, view(of(it).delta, {attr(pr.i * br), attr(0)}, {br, 1})}, ds[slot]);
    ew(ElementwiseKind::Mul, {ds[slot], p[slot]}, dsIn[slot]);
  }

  /// The dropped P (keep ? P : 0) in the inputs' type, what dV reads.
  void dropP(int64_t slot) {
    ew(ElementwiseKind::Select, {keep[slot], p[slot], zero}, pDropIn[slot]);
  }

  /// dV_j^T += dO_i^T P, dK_j^T += Q_i^T dS, dQ_i^T += K_j^T dS^T.
  void gradients(const Item &it, int64_t slot) {
    const Pair &pr = it.pr;
    MatmulOp::create(b, loc, transposed(queryRows(it)), dsIn[slot], dkt[it.keySet],
                     /*accumulate=*/!pr.firstOfKey);
    MatmulOp::create(b, loc, transposed(gradRows(it)),
                     op.getKeep() ? pDropIn[slot] : pIn[slot], dvt[it.keySet],
                     /*accumulate=*/!pr.firstOfKey);
    // Key block 0 is the first that every query block sees.
    MatmulOp::create(b, loc, transposed(keyRows(it)), transposed(dsIn[slot]),
                     view(of(it).dqt, {attr(0), attr(pr.i * br)}, {d, br}),
                     /*accumulate=*/pr.j != 0);
  }

  /// dK_j and dV_j from their transposes in the accumulator to HBM.
  void writeKeyBlock(int64_t set, int64_t j, Value bi) {
    TransposeOp::create(b, loc, dkt[set], flat(dkOut[set]), ArrayRef<int64_t>{1, 0});
    store(dkOut[set], op.getGradKeys(), bi, attr(j * bc));
    // Dropout: dV = keepScale dO^T (P keep).
    if (op.getKeep() && keepScale != 1.0)
      ew(ElementwiseKind::Mul, {dvt[set]}, dvt[set], keepScale);
    TransposeOp::create(b, loc, dvt[set], flat(dvOut[set]), ArrayRef<int64_t>{1, 0});
    store(dvOut[set], op.getGradValue(), bi, attr(j * bc));
  }

  /// dQ = scale * dS K (the queries' scale is not in K) to HBM.
  void writeQueries(int64_t set, Value bi) {
    const BatchBuffers &buf = perBatch[set];
    ew(ElementwiseKind::Mul, {buf.dqt}, buf.dqScaled, op.getScale().convertToDouble());
    TransposeOp::create(b, loc, buf.dqScaled, flat(buf.dq3), ArrayRef<int64_t>{1, 0});
    store(buf.dq3, op.getGradQuery(), bi, attr(0));
  }

  PatternRewriter &b;
  Location loc;
  AttentionBackwardOp op;
  Type f32, element;
  int64_t batch, tq, d, tk, dv, br, bc;
  Value bias;
  BatchBuffers perBatch[2];
  Value scores[kSlots], dp[kSlots], p[kSlots], ds[kSlots], pIn[kSlots],
      dsIn[kSlots];
  SmallVector<Value> dkt, dvt, dkOut, dvOut;
  /// Augmented columns per operand (0: the row terms on the vector unit).
  int64_t extra = 0;
  /// bf16: -term in f32 and its bf16 rounding widened back.
  Value negated;
  /// Dropout: per slot the pair's keep mask ([1, Br, Bc] and [Br, Bc]) and
  /// the dropped P (f32, and in the inputs' type); select's zero; the
  /// factor of a kept probability; the batches of the current iteration.
  Value keep3[kSlots], keep[kSlots], pDropIn[kSlots];
  Value zero;
  double keepScale = 1.0;
  bool hasKeep = false;
  SmallVector<Value> iterationBatches;
};

struct AttentionBackwardToNova : public OpRewritePattern<AttentionBackwardOp> {
  AttentionBackwardToNova(MLIRContext *ctx, TargetAttr target)
      : OpRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(AttentionBackwardOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumResults() != 0)
      return rewriter.notifyMatchFailure(op, "still on tensors");
    int64_t rows = target.getMatrixRows();
    int64_t d = cast<MemRefType>(op.getQuery().getType()).getShape()[2];
    int64_t dv = cast<MemRefType>(op.getValue().getType()).getShape()[2];
    if (d > rows || dv > rows)
      return op.emitOpError() << "head dimensions " << d << " and " << dv
                              << " must not exceed the matrix unit's " << rows
                              << " rows";
    int64_t block = std::min(rows, (int64_t)target.getMatrixCols());
    rewriter.setInsertionPoint(op);
    BackwardEmitter emitter(rewriter, op.getLoc(), op, block, rows);
    emitter.chooseSets(target.getSramBytes() / 2, target.getAccBytes());
    if (emitter.sramBytes() > target.getSramBytes() / 2 ||
        emitter.accBytes() > target.getAccBytes())
      return op.emitOpError()
             << "one batch needs " << emitter.sramBytes() << " bytes of SRAM and "
             << emitter.accBytes() << " of the accumulator; the target has "
             << target.getSramBytes() / 2 << " and " << target.getAccBytes();
    emitter.emit();
    rewriter.eraseOp(op);
    return success();
  }

  TargetAttr target;
};
} // namespace

void mlir::nova::lowering::populateAttentionBackwardToNovaPatterns(
    RewritePatternSet &patterns, TargetAttr target) {
  patterns.add<AttentionBackwardToNova>(patterns.getContext(), target);
}
