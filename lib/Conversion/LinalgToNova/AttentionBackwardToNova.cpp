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
//     to bf16 when the inputs are bf16;
//     dV_j^T += dO_i^T P, dK_j^T += Q_i^T dS and dQ_i^T += K_j^T dS^T: full-
//     width matmuls (P or dS stationary, the D rows of the other operand
//     streaming) accumulating in the accumulator, where dQ^T of the whole
//     batch stays until its last key block;
//   dK_j and dV_j written one pair after key block j's last matmuls, dQ
//   (times scale: K is not scaled) when the batch is.
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

using namespace mlir;
using namespace mlir::nova;

namespace {

/// One (key block, query block) pair of a batch.
struct Pair {
  int64_t j, i;
  bool firstOfKey, lastOfKey, diagonal;
};

class BackwardEmitter {
public:
  /// Accumulator slots for the scores and dP: pair n's go to slot n % kSlots,
  /// issued kAhead pairs before its vector work.
  static constexpr int64_t kSlots = 4;
  static constexpr int64_t kAhead = 3;
  static constexpr int64_t kWriteDelay = 1;
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
    int64_t columns = 2;
    if (!element.isF32() && d + columns <= matrixRows && dv + columns <= matrixRows)
      extra = columns;
  }

  /// Bytes the kernel keeps in SRAM and in the accumulator with `sets`
  /// sets of per-batch buffers.
  int64_t sramBytes(int64_t sets = 1) const {
    int64_t e = element.isF32() ? 4 : 2;
    int64_t operands = e * (tq * d + tk * d + tk * dv + tq * dv + 2 * (tq + tk) * extra);
    // out and grad_out as f32 (and their staging), lse, delta, dQ twice.
    int64_t rows = 4 * (3 * tq * dv + 2 * tq + 2 * tq * d);
    int64_t tiles = kSlots * (4 + 2 * e) * br * bc + 4 * br * bc +
                    4 * 2 * bc * (d + dv);
    return sets * (operands + rows) + tiles;
  }
  int64_t accBytes(int64_t sets = 1) const {
    return 4 * (sets * d * tq + 2 * bc * (d + dv) + kSlots * 2 * br * bc);
  }

  void emit() {
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
    // alternating between the buffer sets: the next batch's loads and row
    // terms do not wait for this one's last matmuls.
    int64_t perIteration = std::max<int64_t>(
        2, kPairsPerIteration / (int64_t)pairs().size());
    int64_t unroll = largestDivisorAtMost(batch, perIteration);
    forLoop(batch / unroll, [&](Value it) {
      Value first = arith::MulIOp::create(b, loc, it, index(unroll));
      SmallVector<Value> batches = {first};
      for (int64_t u = 1; u < unroll; ++u)
        batches.push_back(arith::AddIOp::create(b, loc, first, index(u)));
      prologue(batches[0], 0);
      for (int64_t u = 0; u < unroll; ++u) {
        // With one set a batch's loads wait for the previous one's body.
        if (u > 0 && sets == 1)
          prologue(batches[u], 0);
        body(batches[u], u % sets, [&] {
          if (u + 1 < unroll && sets == 2)
            prologue(batches[u + 1], (u + 1) % sets);
        });
      }
    });
  }

  /// Two sets of per-batch buffers when they fit (half of SRAM, the
  /// accumulator).
  int64_t sets = 1;
  void chooseSets(int64_t sramBudget, int64_t accBudget) {
    sets = sramBytes(2) <= sramBudget && accBytes(2) <= accBudget ? 2 : 1;
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

  /// The on-chip buffers, allocated once and reused by every batch.
  /// Columns [c0, c0 + n) of an on-chip [1, R, C] tile.
  Value columns(Value tile3, int64_t c0, int64_t n) {
    return view(tile3, {attr(0), attr(0), attr(c0)}, {1, shape(tile3)[1], n});
  }

  void allocate() {
    for (int64_t set = 0; set < sets; ++set) {
      allocateBatchBuffers();
      perBatch[set] = BatchBuffers{q3, k3, v3, do3, do32, o32, lseRow,
                                   lse, delta, dqt, dqScaled, dq3};
    }
    allocateShared();
  }

  /// The buffers of one batch (`sets` of them).
  void allocateBatchBuffers() {
    q3 = alloc({1, tq, d + extra}, MemorySpace::SRAM, element);
    k3 = alloc({1, tk, d + extra}, MemorySpace::SRAM, element);
    v3 = alloc({1, tk, dv + extra}, MemorySpace::SRAM, element);
    do3 = alloc({1, tq, dv + extra}, MemorySpace::SRAM, element);
    do32 = element.isF32() ? columns(do3, 0, dv) : alloc({1, tq, dv});
    if (extra) {
      // The keys' and values' columns of ones, once: loads write the others.
      fill(1.0, columns(k3, d, extra));
      fill(1.0, columns(v3, dv, extra));
    }
    o32 = alloc({1, tq, dv});
    lseRow = alloc({1, tq});
    lse = alloc({tq, 1});
    delta = alloc({tq, 1});
    dqt = alloc({d, tq}, MemorySpace::ACC);
    dqScaled = alloc({d, tq});
    dq3 = alloc({1, tq, d});
  }

  /// The buffers every batch shares.
  void allocateShared() {
    if (extra && !element.isF32()) {
      negated = alloc({tq, 1});
      rounded = alloc({tq, 1});
    }
    bool narrow = !element.isF32();
    for (int64_t s = 0; s < kSlots; ++s) {
      scores[s] = alloc({br, bc}, MemorySpace::ACC);
      dp[s] = alloc({br, bc}, MemorySpace::ACC);
      p[s] = alloc({br, bc});
      ds[s] = alloc({br, bc});
      pIn[s] = narrow ? alloc({br, bc}, MemorySpace::SRAM, element) : p[s];
      dsIn[s] = narrow ? alloc({br, bc}, MemorySpace::SRAM, element) : ds[s];
    }
    for (int s = 0; s < 2; ++s) {
      dkt[s] = alloc({d, bc}, MemorySpace::ACC);
      dvt[s] = alloc({dv, bc}, MemorySpace::ACC);
      dkOut[s] = alloc({1, bc, d});
      dvOut[s] = alloc({1, bc, dv});
    }
  }

  /// Batch `bi` of HBM `operand` [B, R, C] into SRAM `tile` [1, R, C] of
  /// type `type`, through a staging copy when the types differ.
  void load(Value operand, Value bi, Value tile) {
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
    ew(ElementwiseKind::Copy, {staged}, tile);
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
  /// itself in f32; in bf16, its rounding and the remainder.
  void writeNegated(Value term, Value tile, int64_t col) {
    int64_t rows = shape(term)[0];
    Value first = view(tile, {attr(0), attr(col)}, {rows, 1});
    if (element.isF32()) {
      ew(ElementwiseKind::Mul, {term}, first, -1.0);
      return;
    }
    ew(ElementwiseKind::Mul, {term}, negated, -1.0);
    ew(ElementwiseKind::Copy, {negated}, first);
    ew(ElementwiseKind::Copy, {first}, rounded);
    ew(ElementwiseKind::Sub, {negated, rounded}, rounded);
    ew(ElementwiseKind::Copy, {rounded}, view(tile, {attr(0), attr(col + 1)}, {rows, 1}));
  }

  /// Makes `set` the current batch buffers.
  void useSet(int64_t set) {
    const BatchBuffers &buf = perBatch[set];
    q3 = buf.q3;
    k3 = buf.k3;
    v3 = buf.v3;
    do3 = buf.do3;
    do32 = buf.do32;
    o32 = buf.o32;
    lseRow = buf.lseRow;
    lse = buf.lse;
    delta = buf.delta;
    dqt = buf.dqt;
    dqScaled = buf.dqScaled;
    dq3 = buf.dq3;
  }

  /// Batch `bi`'s loads and row terms into `set`.
  void prologue(Value bi, int64_t set) {
    useSet(set);
    load(op.getQuery(), bi, q3);
    double scale = op.getScale().convertToDouble();
    if (scale != 1.0)
      ew(ElementwiseKind::Mul, {columns(q3, 0, d)}, columns(q3, 0, d), scale);
    load(op.getKeys(), bi, k3);
    load(op.getValue(), bi, v3);
    // grad_out once from HBM, widened or narrowed on chip.
    if (cast<MemRefType>(op.getGradOut().getType()).getElementType() == element) {
      load(op.getGradOut(), bi, do3);
      if (!element.isF32())
        ew(ElementwiseKind::Copy, {columns(do3, 0, dv)}, do32);
    } else {
      load(op.getGradOut(), bi, do32);
      ew(ElementwiseKind::Copy, {do32}, columns(do3, 0, dv));
    }
    load(op.getOut(), bi, o32);
    // delta = rowsum(dO * O): the softmax backward's per-row term.
    ew(ElementwiseKind::Mul, {do32, o32}, o32);
    ReduceOp::create(b, loc, ReductionKind::Sum, flat(o32), delta, 1);
    staging::copy(b, loc, view(op.getLse(), {bi, attr(0)}, {1, tq}), lseRow);
    TransposeOp::create(b, loc, lseRow, lse, ArrayRef<int64_t>{1, 0});

    if (extra) {
      writeNegated(lse, flat(q3), d);
      writeNegated(delta, flat(do3), dv);
    }
  }

  /// Batch `bi`'s pairs and gradients from `set` (its prologue emitted);
  /// `early` runs after its first pairs' vector work (the next batch's
  /// prologue: the vector unit, in order, does it before this batch's tail,
  /// so the next batch's first scores do not wait for that tail).
  void body(Value bi, int64_t set, function_ref<void()> early) {
    useSet(set);
    q = flat(q3);
    k = flat(k3);
    v = flat(v3);
    dO = flat(do3);
    SmallVector<Pair> all = pairs();
    for (int64_t n = 0; n < std::min<int64_t>(kAhead, all.size()); ++n)
      matrixScores(all[n], n % kSlots);
    // A key block's dK and dV are written kWriteDelay pairs after its last
    // gradient matmuls: the vector unit's transposes of them wait for those
    // matmuls, and would hold up the softmax work queued behind them.
    SmallVector<std::pair<int64_t, int64_t>> pending; // (due pair, key block)
    for (int64_t n = 0; n < (int64_t)all.size(); ++n) {
      if (n + kAhead < (int64_t)all.size())
        matrixScores(all[n + kAhead], (n + kAhead) % kSlots);
      vectorWork(all[n], n % kSlots);
      if (n == std::min<int64_t>(kAhead, all.size() - 1)) {
        early();
        useSet(set); // the prologue switched the current buffers
      }
      while (!pending.empty() && pending.front().first <= n) {
        writeKeyBlock(pending.front().second, bi);
        pending.erase(pending.begin());
      }
      gradients(all[n], n % kSlots);
      if (all[n].lastOfKey)
        pending.push_back({n + kWriteDelay, all[n].j});
    }
    for (auto [due, j] : pending)
      writeKeyBlock(j, bi);
    // dQ = scale * dS K (the queries' scale is not in K).
    ew(ElementwiseKind::Mul, {dqt}, dqScaled, op.getScale().convertToDouble());
    TransposeOp::create(b, loc, dqScaled, flat(dq3), ArrayRef<int64_t>{1, 0});
    store(dq3, op.getGradQuery(), bi, attr(0));
  }

  /// Block rows of an on-chip [R, C] operand, its first `n` columns.
  Value rowsOf(Value tile, int64_t row0, int64_t rows, int64_t n) {
    return view(tile, {attr(row0), attr(0)}, {rows, n});
  }
  Value queryRows(const Pair &pr, int64_t plus = 0) { return rowsOf(q, pr.i * br, br, d + plus); }
  Value gradRows(const Pair &pr, int64_t plus = 0) { return rowsOf(dO, pr.i * br, br, dv + plus); }
  Value keyRows(const Pair &pr, int64_t plus = 0) { return rowsOf(k, pr.j * bc, bc, d + plus); }
  Value valueRows(const Pair &pr, int64_t plus = 0) { return rowsOf(v, pr.j * bc, bc, dv + plus); }

  /// S = Q_i K_j^T and dP = dO_i V_j^T (minus lse and delta, with the
  /// augmented columns).
  void matrixScores(const Pair &pr, int64_t slot) {
    MatmulOp::create(b, loc, queryRows(pr, extra), transposed(keyRows(pr, extra)),
                     scores[slot], /*accumulate=*/false);
    MatmulOp::create(b, loc, gradRows(pr, extra), transposed(valueRows(pr, extra)),
                     dp[slot], /*accumulate=*/false);
  }

  /// P = exp(S - lse_i), dS = P (dP - delta_i).
  void vectorWork(const Pair &pr, int64_t slot) {
    Value s = scores[slot];
    if (pr.diagonal) {
      ew(ElementwiseKind::Add, {s, bias}, p[slot]);
      s = p[slot];
    }
    if (extra) {
      // S and dP came with lse and delta subtracted.
      ew(ElementwiseKind::Exp, {s}, p[slot]);
      if (pIn[slot] != p[slot])
        ew(ElementwiseKind::Copy, {p[slot]}, pIn[slot]);
      ew(ElementwiseKind::Mul, {dp[slot], p[slot]}, ds[slot]);
      if (dsIn[slot] != ds[slot])
        ew(ElementwiseKind::Copy, {ds[slot]}, dsIn[slot]);
      return;
    }
    ew(ElementwiseKind::Sub, {s, view(lse, {attr(pr.i * br), attr(0)}, {br, 1})},
       p[slot]);
    ew(ElementwiseKind::Exp, {p[slot]}, p[slot]);
    if (pIn[slot] != p[slot])
      ew(ElementwiseKind::Copy, {p[slot]}, pIn[slot]);
    ew(ElementwiseKind::Sub,
       {dp[slot], view(delta, {attr(pr.i * br), attr(0)}, {br, 1})}, ds[slot]);
    ew(ElementwiseKind::Mul, {ds[slot], p[slot]}, ds[slot]);
    if (dsIn[slot] != ds[slot])
      ew(ElementwiseKind::Copy, {ds[slot]}, dsIn[slot]);
  }

  /// dV_j^T += dO_i^T P, dK_j^T += Q_i^T dS, dQ_i^T += K_j^T dS^T.
  void gradients(const Pair &pr, int64_t slot) {
    int set = pr.j % 2;
    MatmulOp::create(b, loc, transposed(gradRows(pr)), pIn[slot], dvt[set],
                     /*accumulate=*/!pr.firstOfKey);
    MatmulOp::create(b, loc, transposed(queryRows(pr)), dsIn[slot], dkt[set],
                     /*accumulate=*/!pr.firstOfKey);
    // Key block 0 is the first that every query block sees.
    MatmulOp::create(b, loc, transposed(keyRows(pr)), transposed(dsIn[slot]),
                     view(dqt, {attr(0), attr(pr.i * br)}, {d, br}),
                     /*accumulate=*/pr.j != 0);
  }

  /// dK_j and dV_j from their transposes in the accumulator to HBM.
  void writeKeyBlock(int64_t j, Value bi) {
    int set = j % 2;
    TransposeOp::create(b, loc, dkt[set], flat(dkOut[set]), ArrayRef<int64_t>{1, 0});
    store(dkOut[set], op.getGradKeys(), bi, attr(j * bc));
    TransposeOp::create(b, loc, dvt[set], flat(dvOut[set]), ArrayRef<int64_t>{1, 0});
    store(dvOut[set], op.getGradValue(), bi, attr(j * bc));
  }

  PatternRewriter &b;
  Location loc;
  AttentionBackwardOp op;
  Type f32, element;
  int64_t batch, tq, d, tk, dv, br, bc;
  Value bias;
  /// The current batch's buffers (one of perBatch).
  Value q3, k3, v3, do3, do32, o32, lseRow, lse, delta, dqt, dqScaled, dq3;
  struct BatchBuffers {
    Value q3, k3, v3, do3, do32, o32, lseRow, lse, delta, dqt, dqScaled, dq3;
  };
  BatchBuffers perBatch[2];
  Value q, k, v, dO;
  Value scores[kSlots], dp[kSlots], p[kSlots], ds[kSlots], pIn[kSlots],
      dsIn[kSlots];
  Value dkt[2], dvt[2], dkOut[2], dvOut[2];
  /// Augmented columns per operand (0: the row terms on the vector unit).
  int64_t extra = 0;
  /// bf16: -term in f32 and its bf16 rounding widened back.
  Value negated, rounded;
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
