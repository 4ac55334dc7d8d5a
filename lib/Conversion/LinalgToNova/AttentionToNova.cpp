//===- AttentionToNova.cpp - flash attention on the matrix unit -*- C++ -*-===//
//
// nova.attention on buffers becomes, for every batch b:
//
//   query[b], keys[b] and value[b] loaded into SRAM once (the queries
//   scaled once; value with a column of ones appended: the matmul that
//   applies the probabilities then also sums them, so the row sum costs no
//   vector pass);
//   for every block of Br query rows, its visible key blocks in units of
//   two (one [Br, 2 Bc] softmax tile; the first unit one block when the
//   count is odd):
//     scores S = Q_i K_j^T into one of three accumulator slots in turn,
//     three units ahead of their softmax (the slot unit u - 3's softmax has
//     read): the matrix unit computes scores while the vector unit does
//     softmaxes (software pipelining);
//     online softmax on the vector unit: m' = max(m, rowmax S),
//     P = exp(S - m'), alpha = exp(m - m') (unit 0: none of the running
//     state, its P V writes the output);
//     the transposed output O^T (with the row-sum row) kept in the
//     accumulator: O^T = O^T * alpha^T + [V 1]^T P^T, a full-width
//     weight-stationary matmul (P^T stationary, the Dv + 1 rows of [V 1]^T
//     streaming) instead of a half-width one; it goes first in the matrix
//     unit's queue, as the next unit's rescale of O^T waits for it;
//     out_i = (O^T / l)^T, written after the next query block's first
//     softmax.
//   With `causal`, query block i sees key blocks 0..i; block i's scores
//   accumulate onto a -1e38 bias above the diagonal (a bf16 eye @ bias
//   matmul; added on the vector unit when a sequence has one block) and
//   later blocks are never computed.
//
// After unit 0, units go in groups of kGroup per loop iteration (a multiple
// of the slot count) with a static tail of kSlots + 2 to kGroup + kSlots + 1
// units (unit 0 counted), so that the diagonal unit is in straight-line
// code. When causal, query blocks from the ninth on go in groups of
// 2 kGroup (i = 2 G j + r has j groups and a tail of ceil((r + 1) / 2)
// units), so that every tail is static and only the group count is a loop
// variable.
//
//===----------------------------------------------------------------------===//
#include "nova/Dialect/Nova/IR/NovaAttentionTrainOps.h"
#include "nova/Utils/Divisors.h"
#include "Patterns.h"
#include "Staging.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;
using namespace mlir::nova;

namespace {

/// The operands of a nova.attention, or of a nova.attention_lse (which also
/// writes each query row's log-sum-exp to `lse`).
struct Attention {
  Value query, keys, value, out, lse;
  bool keyRows, causal;
  double scale;
  /// Attention dropout: the i1 keep mask [B, Tq, Tk] and a kept
  /// probability's factor (null: none).
  Value keep;
  double keepScale = 1.0;

  template <typename OpTy>
  static Attention of(OpTy op, Value lse) {
    return Attention{op.getQuery(), op.getKeys(), op.getValue(), op.getOut(),
                     lse, op.getKeyRows(), op.getCausal(),
                     op.getScale().convertToDouble()};
  }
  Value getQuery() const { return query; }
  Value getKeys() const { return keys; }
  Value getValue() const { return value; }
  Value getOut() const { return out; }
  Value getLse() const { return lse; }
  bool getKeyRows() const { return keyRows; }
  bool getCausal() const { return causal; }
  APFloat getScale() const { return APFloat(scale); }
};

/// One query block to emit: batch, block index, key-block groups (a loop
/// count, or null) and static tail, and the batch's on-chip views.
struct Spec {
  Value bi, qi, groups;
  int64_t tail;
  /// Unit 0 is one key block (an odd count), else two.
  bool narrow;
  bool diagonal;
  Value queries, kt, vt;
};

/// The on-chip buffers of a query block. A chain allocates two sets and
/// alternates them: memory is planned in program order, so a buffer
/// allocated per block could take the address of one the previous block's
/// instructions still in flight use, and wait for them.
struct Buffers {
  Value ot;
  Value s[3], p[3], m[3];
  /// Per slot: the unit's row max, alpha = exp(m - m') and alpha as a row.
  Value rowMax[3], alpha[3], alphaRow[3];
  /// The output: 1 / l, O^T / l and O.
  Value inv, scaled, o3;
  /// The log-sum-exp m + log l as a row, and m as a row.
  Value lse, mRow;
  /// Dropout: per slot the unit's keep mask ([1, Br, 2 Bc] as loaded, and
  /// as [Br, 2 Bc]) and the dropped P (V reads it; the ones row of
  /// [V 1]^T reads the undropped P, whose row sums l are).
  Value keep3[3], keep[3], dropped[3];
};

/// A query block being emitted.
struct QueryBlock {
  Spec spec;
  Value row0, q;
  Buffers buf;
};

/// Emits the kernel of one nova.attention.
class Emitter {
public:
  /// Key blocks go through the softmax two at a time (a unit: one
  /// [Br, 2 Bc] tile), which halves the per-row work (running maximum,
  /// rescale of the output) and the instruction count per score.
  /// Units per iteration of a query block's loop. Each iteration boundary
  /// costs a synchronisation of the engines, so more units per iteration
  /// run closer to the vector unit's rate; the code grows with it.
  static constexpr int64_t kGroup = 9;
  /// Score slots in the accumulator: unit u's scores are computed kSlots
  /// units ahead of its softmax, into the slot unit u - kSlots's softmax
  /// has read. kGroup is a multiple of it (every iteration starts at slot 1).
  static constexpr int64_t kSlots = 3;
  static_assert(kGroup % kSlots == 0, "slots must repeat per iteration");
  /// Query blocks emitted as straight-line code in one chain.
  static constexpr int64_t kChain = 2 * kGroup;
  /// Batches unrolled into one chain when all are resident and short.
  static constexpr int64_t kUnrollBatches = 16;

  Emitter(PatternRewriter &b, Location loc, Attention op, int64_t block)
      : b(b), loc(loc), op(op), f32(b.getF32Type()),
        element(cast<MemRefType>(op.getQuery().getType()).getElementType()) {
    auto shape = [](Value v) { return cast<MemRefType>(v.getType()).getShape(); };
    ArrayRef<int64_t> q = shape(op.getQuery());
    // Sequence-major [B, T, H, D] operands: batch n is head n % H of n / H.
    if (q.size() == 4)
      heads = q[2];
    batch = heads ? q[0] * heads : q[0];
    tq = q[1];
    d = q.back();
    tk = shape(op.getKeys())[op.getKeyRows() ? 1 : 2];
    dv = shape(op.getValue()).back();
    br = largestDivisorAtMost(tq, block);
    bc = op.getCausal() ? br : largestDivisorAtMost(tk, block);
  }

  void emit() {
    if (op.keep) {
      // select's false value for a dropped probability.
      zero = alloc({1, 1});
      fill(0.0, zero);
    }
    if (op.getCausal()) {
      // bias[r, c] = -1e38 where key c is after query r (finite: 0 * bias
      // must be 0 below). With one block per sequence (the vector unit has
      // room to spare next to the matrix unit) it is added to the scores;
      // otherwise the diagonal block's mask rides on the matrix unit: its
      // scores accumulate onto eye @ bias, both exact in bf16 (one cycle
      // per streamed row).
      Value rows = alloc({br, bc}), cols = alloc({br, bc});
      IotaOp::create(b, loc, rows, 0);
      IotaOp::create(b, loc, cols, 1);
      Value hidden = alloc({br, bc});
      ew(ElementwiseKind::CmpGt, {cols, rows}, hidden);
      ew(ElementwiseKind::Mul, {hidden}, hidden, -1e38);
      if (tq == br) {
        addedBias = hidden;
      } else {
        Value one = alloc({br, bc});
        ew(ElementwiseKind::CmpEq, {cols, rows}, one);
        Type bf16 = b.getBF16Type();
        bias = staging::allocTile(b, loc, {br, bc}, bf16, MemorySpace::SRAM);
        eye = staging::allocTile(b, loc, {br, br}, bf16, MemorySpace::SRAM);
        ew(ElementwiseKind::Copy, {hidden}, bias);
        ew(ElementwiseKind::Copy, {one}, eye);
      }
    }
    int64_t perBatch = 4 * (tq * d + d * tk + tk * (dv + 1));
    allResident = batch * perBatch <= sramBudget;
    if (allResident)
      load(attr(0), batch);
    // A batch whose query blocks are all straight-line code (nq <= kChain)
    // runs as one chain with its neighbours: each query block's first
    // scores are issued before the previous block's last P V, so that the
    // matrix unit never waits for a block to drain before the next starts.
    // Batches that do not all fit are loaded a chunk at a time (one DMA per
    // operand and chunk) and chained within the chunk.
    int64_t nq = tq / br;
    int64_t unroll = allResident ? largestDivisorAtMost(batch, kUnrollBatches)
                                 : residentChunk(perBatch);
    if (nq <= kChain && (allResident || unroll > 1)) {
      forLoop(0, batch / unroll, [&](Value chunk) {
        Value first = times(chunk, unroll);
        if (!allResident)
          load(first, unroll);
        SmallVector<Spec> specs;
        for (int64_t u = 0; u < unroll; ++u) {
          Value bi = arith::AddIOp::create(b, loc, first, index(u));
          setBatch(bi, allResident ? OpFoldResult(bi) : attr(u));
          for (Spec spec : straightLineSpecs(bi))
            specs.push_back(spec);
        }
        emitChain(specs);
      });
      return;
    }
    forLoop(0, batch, [&](Value bi) {
      if (!allResident)
        load(bi, 1);
      setBatch(bi, allResident ? OpFoldResult(bi) : attr(0));
      emitBatch(bi);
    });
  }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  OpFoldResult attr(int64_t v) { return b.getIndexAttr(v); }

  Value alloc(ArrayRef<int64_t> shape, MemorySpace space = MemorySpace::SRAM,
              Type type = {}) {
    return staging::allocTile(b, loc, shape, type ? type : f32, space);
  }
  void ew(ElementwiseKind kind, ValueRange inputs, Value out,
          std::optional<double> scalar = std::nullopt) {
    ElementwiseOp::create(b, loc, kind, inputs, out,
                          scalar ? b.getF64FloatAttr(*scalar) : Attribute());
  }
  void fill(double value, Value out) {
    FillOp::create(b, loc, b.getF64FloatAttr(value), out);
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
  /// `v * n` as an index value.
  Value times(Value v, int64_t n) {
    return arith::MulIOp::create(b, loc, v, index(n));
  }
  void forLoop(Value lb, Value ub, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, lb, ub, index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    body(loop.getInductionVar());
  }
  void forLoop(int64_t lb, int64_t ub, function_ref<void(Value)> body) {
    forLoop(index(lb), index(ub), body);
  }

  /// Copies batches [first, first + n) of HBM `operand`, rows [row0, row0 +
  /// rows), to or from `tile`, an [n, rows, cols] SRAM view. Sequence-major
  /// operands are read in place, with strides (one batch, or all of them).
  void transfer(Value operand, OpFoldResult first, int64_t n, OpFoldResult row0,
                int64_t rows, int64_t cols, Value tile, bool toHbm) {
    Value hbm;
    if (!heads) {
      hbm = view(operand, {first, row0, attr(0)}, {n, rows, cols});
    } else {
      // Heads [first, first + n) as [m, c, rows, cols] of the heads-first
      // view [B, H, T, D]: whole batches (m = n / H, c = H) or heads of one
      // batch (m = 1, c = n).
      assert((n % heads == 0 || heads % n == 0) && "chunk across batches");
      int64_t m = n % heads == 0 ? n / heads : 1, c = n / m;
      OpFoldResult bi, hi;
      if (std::optional<int64_t> at = getConstantIntValue(first)) {
        bi = attr(*at / heads);
        hi = attr(*at % heads);
      } else {
        Value n = cast<Value>(first);
        bi = arith::DivUIOp::create(b, loc, n, index(heads)).getResult();
        hi = arith::RemUIOp::create(b, loc, n, index(heads)).getResult();
      }
      AffineMap swap = AffineMap::getPermutationMap(
          ArrayRef<unsigned>{0, 2, 1, 3}, b.getContext());
      Value heads4 = memref::TransposeOp::create(b, loc, operand,
                                                 AffineMapAttr::get(swap));
      hbm = view(heads4, {bi, hi, row0, attr(0)}, {m, c, rows, cols});
      tile = memref::ExpandShapeOp::create(
          b, loc, ArrayRef<int64_t>{m, c, rows, cols}, tile,
          ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
    }
    if (toHbm)
      staging::copy(b, loc, tile, hbm);
    else
      staging::copy(b, loc, hbm, tile);
  }

  /// Loads `batches` batches of queries (scaled), keys and values (with the
  /// ones column) from batch `first` into SRAM: [n, Tq, D], [n, D, Tk],
  /// [n, Tk, Dv + 1].
  void load(OpFoldResult first, int64_t batches) {
    // Keys as they lie in HBM: columns [n, D, Tk], or rows [n, Tk, D] read
    // through a transposed view (free for the matrix unit).
    SmallVector<int64_t> keyShape = {batches, d, tk};
    if (op.getKeyRows())
      keyShape = {batches, tk, d};
    q3 = alloc({batches, tq, d}, MemorySpace::SRAM, element);
    kt3 = alloc(keyShape, MemorySpace::SRAM, element);
    // Values in f32 whatever the inputs: P stays f32 (the vector unit writes
    // one element type), so P V runs at the f32 rate; with bf16 inputs the
    // scores run at the bf16 rate and V is widened once on chip.
    v3 = alloc({batches, tk, dv + 1});
    Value vIn = element == f32 ? Value() : alloc({batches, tk, dv}, MemorySpace::SRAM, element);
    // One batch per DMA and per scaling: the first batch's blocks start
    // once its own operands are in, not everyone's.
    for (int64_t u = 0; u < batches; ++u) {
      OpFoldResult at = first;
      if (u > 0) {
        Value base = getValueOrCreateConstantIndexOp(b, loc, first);
        at = arith::AddIOp::create(b, loc, base, index(u)).getResult();
      }
      auto one = [&](Value buffer, ArrayRef<int64_t> shape) {
        return view(buffer, {attr(u), attr(0), attr(0)}, {1, shape[1], shape[2]});
      };
      Value q = one(q3, {batches, tq, d});
      transfer(op.getQuery(), at, 1, attr(0), tq, d, q, false);
      double scale = op.getScale().convertToDouble();
      if (scale != 1.0)
        ew(ElementwiseKind::Mul, {q}, q, scale);
      transfer(op.getKeys(), at, 1, attr(0), keyShape[1], keyShape[2],
               one(kt3, keyShape), false);
      Value v = one(v3, {batches, tk, dv});
      if (vIn) {
        Value staged = one(vIn, {batches, tk, dv});
        transfer(op.getValue(), at, 1, attr(0), tk, dv, staged, false);
        ew(ElementwiseKind::Copy, {staged}, v);
      } else {
        transfer(op.getValue(), at, 1, attr(0), tk, dv, v, false);
      }
      fill(1.0, view(v3, {attr(u), attr(0), attr(dv)}, {1, tk, 1}));
    }
  }

  /// Batch `at` of an on-chip [n, R, C] buffer as an [R, C] view.
  Value batchOf(Value buffer, OpFoldResult at) {
    auto type = cast<MemRefType>(buffer.getType());
    ArrayRef<int64_t> shape = type.getShape();
    SmallVector<OpFoldResult> offsets = {at, attr(0), attr(0)};
    SmallVector<OpFoldResult> sizes = {attr(1), attr(shape[1]), attr(shape[2])};
    SmallVector<OpFoldResult> strides(3, attr(1));
    auto result = memref::SubViewOp::inferRankReducedResultType(
        {shape[1], shape[2]}, type, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(result), buffer,
                                     offsets, sizes, strides);
  }

  /// The most batches (up to kUnrollBatches) that fit the budget together
  /// and that one strided DMA per operand loads (sequence-major: a divisor
  /// or a multiple of the head count).
  int64_t residentChunk(int64_t perBatch) const {
    for (int64_t c = std::min(batch, kUnrollBatches); c > 1; --c)
      if (batch % c == 0 && c * perBatch <= sramBudget &&
          (!heads || c % heads == 0 || heads % c == 0))
        return c;
    return 1;
  }

  /// The on-chip views of batch `bi`, at index `at` of the loaded batches.
  void setBatch(Value bi, OpFoldResult at) {
    queries = batchOf(q3, at);
    kt = batchOf(kt3, at);
    if (op.getKeyRows())
      kt = transposed(kt);
    // [V 1]^T: the streamed operand of O^T += [V 1]^T P^T.
    vt = transposed(batchOf(v3, at));
  }

  Spec spec(Value bi, Value qi, Value groups, int64_t tail, bool narrow) {
    return Spec{bi, qi, groups, tail, narrow, op.getCausal(), queries, kt, vt};
  }
  /// A query block with a static count of n key blocks in U = ceil(n / 2)
  /// units (unit 0 narrow when n is odd): up to kSlots + 1 units in
  /// straight-line code, else unit 0, groups of kGroup units and a tail
  /// (unit 0 counted) of kSlots + 2 to kGroup + kSlots + 1 units, so that
  /// the diagonal unit's scores are issued in straight-line code.
  Spec specOf(Value bi, Value qi, int64_t n) {
    int64_t units = (n + 1) / 2;
    bool narrow = n % 2;
    if (units <= kSlots + 1)
      return spec(bi, qi, Value(), units, narrow);
    int64_t groups = (units - kSlots - 2) / kGroup;
    return spec(bi, qi, index(groups), units - kGroup * groups, narrow);
  }

  /// Every query block of batch `bi` with static key-block counts (for
  /// nq <= kChain): causal block i has i + 1 key blocks, full ones nk.
  SmallVector<Spec> straightLineSpecs(Value bi) {
    SmallVector<Spec> specs;
    int64_t nq = tq / br, nk = tk / bc;
    for (int64_t i = 0; i < nq; ++i) {
      int64_t n = op.getCausal() ? i + 1 : nk;
      specs.push_back(specOf(bi, index(i), n));
    }
    return specs;
  }

  void emitBatch(Value bi) {
    int64_t nq = tq / br, nk = tk / bc;
    if (!op.getCausal()) {
      // Every query block sees all nk key blocks.
      forLoop(0, nq, [&](Value qi) { emitChain({specOf(bi, qi, nk)}); });
      return;
    }
    // Query block i sees key blocks 0..i (i + 1 blocks, the last masked):
    // blocks 0 .. r0 - 1 with static counts, then i = 2 G j + r (r = r0 ..
    // r0 + 2 G - 1) with j groups of G units and a static tail of
    // ceil((r + 1) / 2) units (at least kSlots + 2 from r0 on).
    constexpr int64_t r0 = 2 * (kSlots + 2) - 2, period = 2 * kGroup;
    SmallVector<Spec> head;
    for (int64_t i = 0; i < std::min(r0, nq); ++i)
      head.push_back(specOf(bi, index(i), i + 1));
    emitChain(head);
    if (nq <= r0)
      return;
    int64_t groups = (nq - r0) / period;
    auto at = [&](Value base, int64_t r, Value j) {
      return spec(bi, arith::AddIOp::create(b, loc, base, index(r)), j,
                  (r + 2) / 2, r % 2 == 0);
    };
    if (groups > 0)
      forLoop(0, groups, [&](Value j) {
        Value base = times(j, period);
        SmallVector<Spec> specs;
        for (int64_t r = r0; r < r0 + period; ++r)
          specs.push_back(at(base, r, j));
        emitChain(specs);
      });
    SmallVector<Spec> rest;
    for (int64_t r = r0; r < r0 + (nq - r0) % period; ++r)
      rest.push_back(at(index(period * groups), r, index(groups)));
    if (!rest.empty())
      emitChain(rest);
  }

  /// Query blocks in sequence, each one's start (allocations and first
  /// scores) emitted before the previous one's last P V, and each one's
  /// output written after the next one's first softmax: the vector unit
  /// does that softmax while the matrix unit finishes the P V the output
  /// waits for.
  void emitChain(ArrayRef<Spec> specs) {
    if (specs.empty())
      return;
    Buffers sets[2] = {buffers(), buffers()};
    int which = 0;
    auto startQueryBlock = [&](const Spec &spec) {
      which ^= 1;
      return this->startQueryBlock(spec, sets[which]);
    };
    std::optional<QueryBlock> current, done;
    auto finishDone = [&] {
      if (done)
        writeOutput(*done);
      done.reset();
    };
    for (const Spec &next : specs) {
      if (!current) {
        current = startQueryBlock(next);
        continue;
      }
      std::optional<QueryBlock> started;
      finishQueryBlock(*current, [&] { started = startQueryBlock(next); },
                       finishDone);
      finishDone();
      done = current;
      current = started;
    }
    if (current) {
      finishQueryBlock(*current, [] {}, finishDone);
      finishDone();
      writeOutput(*current);
    }
  }

  /// Query block `spec.qi` against its key blocks, in units of two blocks
  /// (unit 0 one block when `narrow`): unit 0, then `groups` groups of
  /// kGroup units (null: none), then the rest of the `tail` (unit 0 counts
  /// in it), the last key block masked when `diagonal`. Unit u's scores go
  /// to accumulator slot u % kSlots, kSlots units ahead of its softmax;
  /// P V (u) comes before scores(u + kSlots) in the matrix unit's queue:
  /// the next softmax's rescale of the output waits for it. Unit 0 needs
  /// no running maximum and no rescale (its P V writes the output), so
  /// nothing is filled.
  QueryBlock startQueryBlock(const Spec &spec, const Buffers &buf) {
    QueryBlock qb;
    qb.spec = spec;
    qb.buf = buf;
    qb.row0 = times(spec.qi, br);
    qb.q = view(spec.queries, {qb.row0, attr(0)}, {br, d});
    // The last slot's scores go after the previous block's last P V (in
    // finishQueryBlock): that P V is what the vector unit waits for first.
    for (int64_t u = 0; u + 1 < kSlots; ++u)
      if (spec.groups || u < spec.tail)
        staticScores(qb, u);
    return qb;
  }

  Buffers buffers() {
    Buffers buf;
    for (int i = 0; i < kSlots; ++i) {
      buf.s[i] = alloc({br, 2 * bc}, MemorySpace::ACC);
      buf.p[i] = alloc({br, 2 * bc});
      buf.m[i] = alloc({br, 1});
      buf.rowMax[i] = alloc({br, 1});
      buf.alpha[i] = alloc({br, 1});
      buf.alphaRow[i] = alloc({1, br});
    }
    buf.ot = alloc({dv + 1, br}, MemorySpace::ACC);
    buf.inv = alloc({1, br});
    buf.scaled = alloc({dv, br});
    buf.o3 = alloc({1, br, dv});
    if (op.getLse()) {
      buf.lse = alloc({1, br});
      buf.mRow = alloc({1, br});
    }
    if (op.keep) {
      for (int i = 0; i < kSlots; ++i) {
        buf.keep3[i] = alloc({1, br, 2 * bc}, MemorySpace::SRAM, b.getI1Type());
        buf.keep[i] = staging::reshapeTile(b, loc, buf.keep3[i], {br, 2 * bc});
      }
      for (int i = 0; i < kSlots; ++i)
        buf.dropped[i] = alloc({br, 2 * bc});
    }
    return buf;
  }

  /// The key blocks of unit u (u >= 1: 2u - narrow, 2u + 1 - narrow).
  Value firstBlock(const Spec &spec, Value u) {
    return arith::SubIOp::create(b, loc, times(u, 2), index(spec.narrow));
  }
  int64_t width(const Spec &spec, int64_t u) const {
    return u == 0 && spec.narrow ? 1 : 2;
  }

  /// Scores of the `blocks` key blocks from `first` into slot `slot`; with
  /// `masked` the last one accumulates onto the causal bias.
  void scores(QueryBlock &qb, int slot, Value first, int64_t blocks, bool masked) {
    if (op.keep) {
      // The unit's keep mask, loaded as its scores are issued (kSlots units
      // ahead of the softmax that reads it).
      Value tile = view(qb.buf.keep3[slot], {attr(0), attr(0), attr(0)},
                        {1, br, blocks * bc});
      Value hbm = view(op.keep, {qb.spec.bi, qb.row0, times(first, bc)},
                       {1, br, blocks * bc});
      staging::copy(b, loc, hbm, tile);
    }
    for (int64_t j = 0; j < blocks; ++j) {
      Value keys = view(qb.spec.kt, {attr(0), times(plus(first, j), bc)}, {d, bc});
      Value out = view(qb.buf.s[slot], {attr(0), attr(j * bc)}, {br, bc});
      bool bias = masked && j + 1 == blocks && !addedBias;
      if (bias)
        MatmulOp::create(b, loc, eye, this->bias, out, /*accumulate=*/false);
      MatmulOp::create(b, loc, qb.q, keys, out, /*accumulate=*/bias);
    }
  }
  /// Scores of unit u (static), masked when it is the last of a diagonal
  /// query block.
  void staticScores(QueryBlock &qb, int64_t u) {
    const Spec &spec = qb.spec;
    bool last = !spec.groups && u + 1 == spec.tail;
    Value first = u == 0 ? index(0) : index(2 * u - spec.narrow);
    scores(qb, u % kSlots, first, width(spec, u), spec.diagonal && last);
  }

  /// Unit u (slot u % kSlots, `blocks` key blocks) reads the row max unit
  /// u - 1 left in the slot before; unit 0 (`first`) starts it.
  void softmax(QueryBlock &qb, int slot, int64_t blocks, bool first,
               bool masked = false) {
    Value x = view(qb.buf.s[slot], {attr(0), attr(0)}, {br, blocks * bc});
    Value p = view(qb.buf.p[slot], {attr(0), attr(0)}, {br, blocks * bc});
    Value t = p;
    if (masked && addedBias) {
      ew(ElementwiseKind::Add, {x, addedBias}, t);
      x = t;
    }
    Value ot = qb.buf.ot;
    Value mOld = qb.buf.m[(slot + kSlots - 1) % kSlots], mNew = qb.buf.m[slot];
    // Dropout: the dropped P beside the undropped one (apply's matmuls
    // read both).
    auto drop = [&] {
      if (!op.keep)
        return;
      Value keep = view(qb.buf.keep[slot], {attr(0), attr(0)}, {br, blocks * bc});
      Value dropped = view(qb.buf.dropped[slot], {attr(0), attr(0)}, {br, blocks * bc});
      ew(ElementwiseKind::Select, {keep, p, zero}, dropped);
    };
    if (first) {
      ReduceOp::create(b, loc, ReductionKind::Max, x, mNew, 1);
      ew(ElementwiseKind::Sub, {x, mNew}, t);
      ew(ElementwiseKind::Exp, {t}, p);
      drop();
      return;
    }
    Value rowMax = qb.buf.rowMax[slot];
    ReduceOp::create(b, loc, ReductionKind::Max, x, rowMax, 1);
    ew(ElementwiseKind::Max, {mOld, rowMax}, mNew);
    ew(ElementwiseKind::Sub, {x, mNew}, t);
    ew(ElementwiseKind::Exp, {t}, p);
    // The output so far, rescaled to the new row max (after the previous
    // unit's P V, which the hazard on `ot` orders before this).
    Value alpha = qb.buf.alpha[slot];
    ew(ElementwiseKind::Sub, {mOld, mNew}, alpha);
    ew(ElementwiseKind::Exp, {alpha}, alpha);
    drop();
    Value alphaRow = qb.buf.alphaRow[slot];
    TransposeOp::create(b, loc, alpha, alphaRow, ArrayRef<int64_t>{1, 0});
    ew(ElementwiseKind::Mul, {ot, alphaRow}, ot);
  }
  void apply(QueryBlock &qb, int slot, Value first, int64_t blocks, bool start) {
    for (int64_t j = 0; j < blocks; ++j) {
      Value col = times(plus(first, j), bc);
      Value p = view(qb.buf.p[slot], {attr(0), attr(j * bc)}, {br, bc});
      bool accumulate = !(start && j == 0);
      if (!op.keep) {
        Value values = view(qb.spec.vt, {attr(0), col}, {dv + 1, bc});
        MatmulOp::create(b, loc, values, transposed(p), qb.buf.ot, accumulate);
        continue;
      }
      // Dropout: the row sums l of the undropped P (the ones row, against
      // P as soon as exp wrote it), then V against the dropped P. The
      // matrix unit has room for the second stationary load; the vector
      // unit then has no row sum to take.
      Value ones = view(qb.spec.vt, {attr(dv), col}, {1, bc});
      MatmulOp::create(b, loc, ones, transposed(p),
                       view(qb.buf.ot, {attr(dv), attr(0)}, {1, br}), accumulate);
      Value values = view(qb.spec.vt, {attr(0), col}, {dv, bc});
      Value dropped = view(qb.buf.dropped[slot], {attr(0), attr(j * bc)}, {br, bc});
      MatmulOp::create(b, loc, values, transposed(dropped),
                       view(qb.buf.ot, {attr(0), attr(0)}, {dv, br}), accumulate);
    }
  }
  Value plus(Value k, int64_t n) {
    if (n == 0)
      return k;
    return arith::AddIOp::create(b, loc, k, index(n)).getResult();
  }

  /// The rest of a query block but its output; `beforeLastApply` runs
  /// between its last softmax and its last P V (where the next block
  /// starts), `afterFirstSoftmax` after its first softmax.
  void finishQueryBlock(QueryBlock &qb, function_ref<void()> beforeLastApply,
                        function_ref<void()> afterFirstSoftmax) {
    const Spec &spec = qb.spec;
    bool alone = !spec.groups && spec.tail == 1;
    if (spec.groups || kSlots - 1 < spec.tail)
      staticScores(qb, kSlots - 1);
    softmax(qb, 0, width(spec, 0), /*first=*/true, spec.diagonal && alone);
    afterFirstSoftmax();
    if (alone)
      beforeLastApply();
    apply(qb, 0, index(0), width(spec, 0), /*start=*/true);
    if (spec.groups || kSlots < spec.tail)
      staticScores(qb, kSlots);
    // Units 1 + G g + i in slot (1 + i) % kSlots (kGroup is a multiple);
    // the diagonal unit is in the tail (at least kSlots + 2 units).
    if (spec.groups)
      forLoop(index(0), spec.groups, [&](Value group) {
        Value k = plus(times(group, kGroup), 1);
        for (int64_t i = 0; i < kGroup; ++i) {
          int slot = (1 + i) % kSlots;
          softmax(qb, slot, 2, false);
          apply(qb, slot, firstBlock(spec, plus(k, i)), 2, false);
          scores(qb, slot, firstBlock(spec, plus(k, i + kSlots)), 2, false);
        }
      });
    // The tail's other units t .. t + tail - 2, their first kSlots scores
    // issued.
    Value t = spec.groups ? plus(times(spec.groups, kGroup), 1) : index(1);
    for (int64_t i = 0; i + 1 < spec.tail; ++i) {
      int slot = (1 + i) % kSlots;
      softmax(qb, slot, 2, false);
      if (i + 2 == spec.tail)
        beforeLastApply();
      apply(qb, slot, firstBlock(spec, plus(t, i)), 2, false);
      if (i + 1 + kSlots < spec.tail)
        scores(qb, slot, firstBlock(spec, plus(t, i + kSlots)), 2,
               spec.diagonal && i + 2 + kSlots == spec.tail);
    }
  }

  /// out = (O^T[:dv] / l)^T, l = O^T[dv].
  void writeOutput(QueryBlock &qb) {
    const Spec &spec = qb.spec;
    Value sums = view(qb.buf.ot, {attr(dv), attr(0)}, {1, br});
    Value inv = qb.buf.inv;
    ew(ElementwiseKind::Recip, {sums}, inv);
    // A kept probability is P / (1 - p): the factor rides on 1 / l.
    if (op.keep && op.keepScale != 1.0)
      ew(ElementwiseKind::Mul, {inv}, inv, op.keepScale);
    Value scaled = qb.buf.scaled;
    ew(ElementwiseKind::Mul, {view(qb.buf.ot, {attr(0), attr(0)}, {dv, br}), inv},
       scaled);
    Value o3 = qb.buf.o3;
    TransposeOp::create(b, loc, scaled, staging::reshapeTile(b, loc, o3, {br, dv}),
                        ArrayRef<int64_t>{1, 0});
    transfer(op.getOut(), spec.bi, 1, qb.row0, br, dv, o3, true);
    if (!op.getLse())
      return;
    // lse = m + log l, m the running maximum of the block's last unit
    // (unit u's is in slot u % kSlots; kGroup is a multiple of kSlots).
    Value m = qb.buf.m[(spec.tail - 1) % kSlots];
    TransposeOp::create(b, loc, m, qb.buf.mRow, ArrayRef<int64_t>{1, 0});
    ew(ElementwiseKind::Log, {sums}, qb.buf.lse);
    ew(ElementwiseKind::Add, {qb.buf.lse, qb.buf.mRow}, qb.buf.lse);
    staging::copy(b, loc, qb.buf.lse, view(op.getLse(), {spec.bi, qb.row0}, {1, br}));
  }

  PatternRewriter &b;
  Location loc;
  Attention op;
  Type f32;
  /// Of query, keys and value: f32 or bf16.
  Type element;
  int64_t batch, tq, d, tk, dv, br, bc;
  int64_t heads = 0;
  Value eye, bias, addedBias, queries, kt, vt, zero;
  Value q3, kt3, v3;
  bool allResident = false;

public:
  /// SRAM the resident queries, keys and values may take.
  int64_t sramBudget = 0;
};

template <typename OpTy>
struct AttentionToNova : public OpRewritePattern<OpTy> {
  AttentionToNova(MLIRContext *ctx, TargetAttr target)
      : OpRewritePattern<OpTy>(ctx), target(target) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (op.getNumResults() != 0)
      return rewriter.notifyMatchFailure(op, "still on tensors");
    auto shape = [](Value v) { return cast<MemRefType>(v.getType()).getShape(); };
    if (shape(op.getQuery()).back() > target.getMatrixRows())
      return op.emitOpError() << "head dimension " << shape(op.getQuery()).back()
                              << " exceeds the matrix unit's "
                              << target.getMatrixRows() << " rows";
    rewriter.setInsertionPoint(op);
    int64_t block = std::min(target.getMatrixRows(), target.getMatrixCols());
    Attention attention = Attention::of(op, Value());
    if constexpr (std::is_same_v<OpTy, AttentionLseOp>) {
      attention.lse = op.getLse();
      attention.keep = op.getKeep();
      if (std::optional<APFloat> s = op.getKeepScale())
        attention.keepScale = s->convertToDouble();
    }
    Emitter emitter(rewriter, op.getLoc(), attention, block);
    // nova-fuse-attention checked that one batch fits a quarter of SRAM.
    emitter.sramBudget = target.getSramBytes() / 4;
    emitter.emit();
    rewriter.eraseOp(op);
    return success();
  }

  TargetAttr target;
};
} // namespace

void mlir::nova::lowering::populateAttentionToNovaPatterns(
    RewritePatternSet &patterns, TargetAttr target) {
  patterns.add<AttentionToNova<AttentionOp>, AttentionToNova<AttentionLseOp>>(
      patterns.getContext(), target);
}
