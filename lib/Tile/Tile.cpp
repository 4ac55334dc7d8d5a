//===- Tile.cpp - tile linalg ops to the target -----------------*- C++ -*-===//
//
// Tile sizes come from the #nova.target: the matrix unit bounds the
// contraction tiles, the accumulator bounds their rows, and the SRAM budget
// (every operand of a tile, double buffered) bounds everything.
//
//===----------------------------------------------------------------------===//
#include "nova/Tile/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "nova-tile"

namespace mlir::nova {
#define GEN_PASS_DEF_NOVATILE
#include "nova/Tile/Passes.h.inc"
} // namespace mlir::nova

using namespace mlir;
using namespace mlir::nova;

namespace {

/// Bytes of one element of `type` (sub-byte types round up).
int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, (type.getIntOrFloatBitWidth() + 7) / 8);
}

/// A contraction plan's modeled time (the busiest engine's, ns) and its
/// tile loops' HBM traffic (bytes).
struct ContractionCost {
  double ns = 0, traffic = 0;
};

/// A candidate tiling of one op: a tile size per loop (0 = whole loop).
struct TilePlan {
  SmallVector<int64_t> sizes;
  int64_t bytes = 0; // double-buffered SRAM footprint
};

/// SRAM bytes that one tile of `op` needs, double buffered: every operand
/// slice plus one domain-sized temporary per body op of a generic.
int64_t tileFootprint(linalg::LinalgOp op, ArrayRef<int64_t> loopSizes) {
  int64_t bytes = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<ShapedType>(operand.get().getType());
    if (!type)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    int64_t elems = 1;
    for (AffineExpr expr : map.getResults())
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        elems *= loopSizes[dim.getPosition()];
    bytes += elems * elementBytes(type.getElementType());
  }
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
    int64_t domain = 1;
    for (int64_t s : loopSizes)
      domain *= s;
    int64_t temps = std::max<int64_t>(
        0, (int64_t)generic.getBody()->getOperations().size() - 2);
    bytes += temps * domain * 4;
  }
  return 2 * bytes;
}

/// The largest divisor of `range` that is at most `limit`, so that every
/// tile has the same static shape (no partial tiles).
int64_t divisorAtMost(int64_t range, int64_t limit) {
  limit = std::max<int64_t>(1, std::min(range, limit));
  for (int64_t d = limit; d > 1; --d)
    if (range % d == 0)
      return d;
  return 1;
}

/// A wider tile size for a dimension whose best divisor up to `limit`,
/// `best`, is under a quarter of the limit (GPT-2's vocabulary, 50257 =
/// 29 x 1733, gave 29-element tiles): a divisor at least 4 x `best` and up
/// to 8 x `limit`, if there is one.
std::optional<int64_t> widerDivisor(int64_t range, int64_t best,
                                    int64_t limit) {
  if (best * 4 > std::min(range, limit))
    return std::nullopt;
  int64_t wide = divisorAtMost(range, 8 * limit);
  if (wide < 4 * best)
    return std::nullopt;
  return wide;
}

/// Effective size of each loop for a tile plan (0 means the whole loop).
SmallVector<int64_t> effectiveSizes(ArrayRef<int64_t> ranges,
                                    ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> result;
  for (auto [range, size] : llvm::zip_equal(ranges, sizes))
    result.push_back(size == 0 ? range : std::min(size, range));
  return result;
}

struct TilePass : public nova::impl::NovaTileBase<TilePass> {
  using Base::Base;

  void runOnOperation() override;

private:
  FailureOr<TilePlan> planContraction(linalg::LinalgOp op,
                                      const linalg::ContractionDimensions &dims,
                                      ArrayRef<int64_t> ranges,
                                      linalg::LinalgOp epilogue);
  /// The plan with output tiles `n` columns wide; `report` emits the
  /// diagnostic when no tile fits.
  FailureOr<TilePlan>
  planContractionColumns(linalg::LinalgOp op,
                         const linalg::ContractionDimensions &dims,
                         ArrayRef<int64_t> ranges, linalg::LinalgOp epilogue,
                         int64_t n, bool report);
  /// A plan's modeled time: the slowest of its tile loops' HBM traffic, the
  /// vector unit's accumulator drains and the matrix unit's work.
  ContractionCost contractionCost(linalg::LinalgOp op,
                         const linalg::ContractionDimensions &dims,
                         ArrayRef<int64_t> ranges, ArrayRef<int64_t> sizes);
  FailureOr<TilePlan> planGeneric(linalg::LinalgOp op, ArrayRef<int64_t> ranges,
                                  ArrayRef<linalg::LinalgOp> joining = {});
  InFlightDiagnostic tooBig(linalg::LinalgOp op, int64_t bytes);

  TargetAttr target;
};

InFlightDiagnostic TilePass::tooBig(linalg::LinalgOp op, int64_t bytes) {
  return op->emitOpError()
         << "cannot be tiled to fit sram: its smallest tile needs " << bytes
         << " bytes (double buffered) but target '" << target.getName()
         << "' has " << target.getSramBytes() << " bytes of sram";
}

FailureOr<TilePlan>
TilePass::planContraction(linalg::LinalgOp op,
                          const linalg::ContractionDimensions &dims,
                          ArrayRef<int64_t> ranges, linalg::LinalgOp epilogue) {
  unsigned mDim = dims.m.back(), nDim = dims.n.back();
  // One array width of columns, the narrowest tile: the first candidate.
  int64_t narrow = divisorAtMost(ranges[nDim], target.getMatrixCols());
  FailureOr<TilePlan> best =
      planContractionColumns(op, dims, ranges, epilogue, narrow, /*report=*/true);
  if (failed(best))
    return failure();
  // Wider output blocks (whole multiples of the array's width, which
  // MatmulToNova multiplies a column chunk at a time from the same staged
  // operands) where they cut the tile loops' HBM traffic: an operand that a
  // narrow tile re-reads once per column tile, such as the LM head's
  // [tokens x vocabulary] gradient in dX = dY W, is then read once. A plan
  // is scored by its modeled time, then by its traffic; a wider block must
  // cut one of them by a margin without raising the other.
  ContractionCost bestCost = contractionCost(op, dims, ranges, best->sizes);
  int64_t cols = target.getMatrixCols();
  int64_t rowsFloor = std::min<int64_t>(ranges[mDim], target.getMatrixRows());
  bool chunked = isa<linalg::MatmulOp, linalg::BatchMatmulOp>(op.getOperation());
  for (int64_t n = 2 * cols; chunked && narrow == cols && n <= ranges[nDim];
       n += cols) {
    if (ranges[nDim] % n != 0)
      continue;
    FailureOr<TilePlan> wide =
        planContractionColumns(op, dims, ranges, epilogue, n, /*report=*/false);
    if (failed(wide) || wide->sizes[mDim] < rowsFloor)
      continue;
    ContractionCost cost = contractionCost(op, dims, ranges, wide->sizes);
    bool faster = cost.ns < 0.9 * bestCost.ns &&
                  cost.traffic <= bestCost.traffic;
    bool lighter = cost.ns <= bestCost.ns &&
                   cost.traffic < 0.9 * bestCost.traffic;
    if (faster || lighter) {
      best = wide;
      bestCost = cost;
    }
  }
  return best;
}

ContractionCost TilePass::contractionCost(linalg::LinalgOp op,
                                 const linalg::ContractionDimensions &dims,
                                 ArrayRef<int64_t> ranges,
                                 ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> eff = effectiveSizes(ranges, sizes);
  auto product = [&](ArrayRef<unsigned> ds) {
    int64_t p = 1;
    for (unsigned d : ds)
      p *= ranges[d];
    return p;
  };
  auto tiles = [&](ArrayRef<unsigned> ds) {
    int64_t p = 1;
    for (unsigned d : ds)
      p *= ranges[d] / eff[d];
    return p;
  };
  auto bytesOf = [&](Value v) {
    auto type = cast<ShapedType>(v.getType());
    return double(type.getNumElements()) * elementBytes(type.getElementType());
  };
  double a = bytesOf(op.getDpsInputs()[0]), b = bytesOf(op.getDpsInputs()[1]),
         c = bytesOf(op.getDpsInits()[0]);
  int64_t mTiles = tiles(dims.m), nTiles = tiles(dims.n), kTiles = tiles(dims.k);
  // The loops run M, N, K (innermost): A is re-read per column tile unless
  // K is whole (the load of A then leaves the column loop,
  // nova-hoist-invariant-loads) or there is one column tile; B per row tile
  // unless it is one tile; C is loaded and stored once around a K loop
  // (kept in SRAM across it, nova-hoist-invariant-loads).
  double traffic = a * (kTiles == 1 ? 1 : nTiles) +
                   b * (kTiles == 1 && nTiles == 1 ? 1 : mTiles) +
                   c * (kTiles == 1 ? 1 : 2);
  double ghz = double(target.getClockMhz()) * 1e-3;
  double dmaNs = traffic / double(target.getHbmGbps());
  double outputs = double(product(dims.batch)) * product(dims.m) * product(dims.n);
  double vectorNs = double(kTiles) * outputs /
                    (double(target.getVectorLanes()) * ghz);
  // The matrix unit's time is the same for every plan: a floor under which
  // the other engines' time is hidden (f32 runs at a quarter of the rate).
  auto aType = cast<ShapedType>(op.getDpsInputs()[0].getType());
  double macsPerNs = double(target.getMatrixRows()) * target.getMatrixCols() *
                     ghz / (aType.getElementType().isF32() ? 4.0 : 1.0);
  double matrixNs = outputs * product(dims.k) / macsPerNs;
  return {std::max({dmaNs, vectorNs, matrixNs}), traffic};
}

FailureOr<TilePlan> TilePass::planContractionColumns(
    linalg::LinalgOp op, const linalg::ContractionDimensions &dims,
    ArrayRef<int64_t> ranges, linalg::LinalgOp epilogue, int64_t n,
    bool report) {
  TilePlan plan;
  plan.sizes.assign(ranges.size(), 0);
  for (unsigned d : dims.batch)
    plan.sizes[d] = 1;
  // Outer M/N dims by 1, the innermost ones by the hardware.
  for (unsigned d : ArrayRef(dims.m).drop_back())
    plan.sizes[d] = 1;
  for (unsigned d : ArrayRef(dims.n).drop_back())
    plan.sizes[d] = 1;
  unsigned mDim = dims.m.back(), nDim = dims.n.back();
  // Rows: as many as half the accumulator holds (f32, double buffered, one
  // array-wide column chunk at a time), not max-rows: every matmul tile
  // pays the array's weight load, fill and drain once, so longer row tiles
  // amortise them (docs/isa.md 2.3).
  int64_t chunkCols = std::min<int64_t>(n, target.getMatrixCols());
  int64_t m = divisorAtMost(
      ranges[mDim],
      std::max<int64_t>(1, target.getAccBytes() / 2 / (chunkCols * 4)));
  int64_t mMax = m;
  plan.sizes[nDim] = n;
  for (unsigned d : ArrayRef(dims.k).drop_back())
    plan.sizes[d] = 1;
  unsigned kDim = dims.k.back();

  auto footprint = [&](int64_t mSize, int64_t kSize) {
    plan.sizes[mDim] = mSize;
    plan.sizes[kDim] = kSize;
    SmallVector<int64_t> eff = effectiveSizes(ranges, plan.sizes);
    int64_t bytes = tileFootprint(op, eff);
    if (epilogue) {
      // The epilogue shares the (M, N) tile; count one output-sized tile per
      // epilogue operand plus one temporary.
      int64_t outTile = eff[mDim] * eff[nDim] * 4;
      bytes += 2 * outTile * (epilogue->getNumOperands() +
                              (isa<linalg::GenericOp>(epilogue.getOperation())
                                   ? 1
                                   : 0));
    }
    return bytes;
  };

  // Shrink rows first (down to one matrix-unit height), then split K.
  int64_t kFull = 0;
  int64_t bytes = footprint(m, kFull);
  int64_t minRows = std::min<int64_t>(m, target.getMatrixRows());
  while (bytes > target.getSramBytes() && m > minRows) {
    m = divisorAtMost(ranges[mDim], std::max(minRows, m / 2));
    bytes = footprint(m, kFull);
  }
  if (bytes > target.getSramBytes()) {
    if (epilogue)
      return failure(); // retry without fusing the epilogue
    // K panels: whole multiples of the array's rows when K is one, so that
    // every chunk the array takes is full height (GPT-2's 50304-word
    // vocabulary halved to 6288-deep panels fed the array 48 rows at a time).
    int64_t arrayRows = target.getMatrixRows();
    auto smallerK = [&](int64_t k) {
      if (ranges[kDim] % arrayRows == 0 && k / 2 >= arrayRows)
        return arrayRows * divisorAtMost(ranges[kDim] / arrayRows, k / 2 / arrayRows);
      return divisorAtMost(ranges[kDim], k / 2);
    };
    int64_t k = ranges[kDim];
    while (true) {
      bytes = footprint(m, k);
      if (bytes <= target.getSramBytes())
        break;
      if (k > 1 && k > std::min(ranges[kDim], arrayRows)) {
        k = smallerK(k);
        continue;
      }
      if (m <= 1)
        break;
      m = divisorAtMost(ranges[mDim], m / 2);
    }
    if (bytes > target.getSramBytes()) {
      if (report)
        tooBig(op, bytes);
      return failure();
    }
    // With K split, rows grow back as far as the panels leave room: each
    // tile pays the array's weight load once, so it should stream as many
    // rows as the accumulator takes.
    int64_t topRows = divisorAtMost(ranges[mDim], mMax);
    auto growRows = [&](int64_t panel) {
      for (int64_t rows = topRows; rows > m;
           rows = divisorAtMost(ranges[mDim], rows - 1))
        if (footprint(rows, panel) <= target.getSramBytes())
          return rows;
      return m;
    };
    m = growRows(k);
    bytes = footprint(m, k);
    // Thinner panels where they let the rows grow further: the panel search
    // above stops at the first depth that fits one array height of rows,
    // and every row tile re-reads the other operand. K = 50176 (the first
    // 392 array heights of GPT-2's 50257-word vocabulary, nova-pad-matmul)
    // stopped at 6272-deep panels and row tiles that re-read the operands
    // (the LM head moved 1.9 GB at one layer of HF GPT-2, 1.4 GB after);
    // 1024-deep panels hold all 2048 rows and read each operand once, as 50304 = 128 x 393 does by luck (its panels go 16768,
    // 384). Scored as the column widths are.
    auto thinner = [&](int64_t panel) {
      int64_t unit = ranges[kDim] % arrayRows == 0 ? arrayRows : 1;
      int64_t d = divisorAtMost(ranges[kDim] / unit, panel / unit - 1);
      return d * unit < panel ? d * unit : int64_t(0);
    };
    if (m < topRows) {
      ContractionCost cost = contractionCost(op, dims, ranges, plan.sizes);
      int64_t floor = std::min(ranges[kDim], arrayRows);
      for (int64_t panel = thinner(k); panel >= floor && m < topRows;
           panel = thinner(panel)) {
        int64_t rows = growRows(panel);
        if (rows == m)
          continue;
        footprint(rows, panel);
        ContractionCost c = contractionCost(op, dims, ranges, plan.sizes);
        bool faster = c.ns < 0.9 * cost.ns && c.traffic <= cost.traffic;
        bool lighter = c.ns <= cost.ns && c.traffic < 0.9 * cost.traffic;
        if (faster || lighter) {
          m = rows;
          k = panel;
          cost = c;
        }
      }
      bytes = footprint(m, k);
    }
    footprint(m, k);
  }
  plan.bytes = bytes;
  return plan;
}

/// `ranges`' tiles also hold a tile of every op in `joining` (producers
/// that will join the loop, see isReturnedAndRead).
FailureOr<TilePlan> TilePass::planGeneric(linalg::LinalgOp op,
                                          ArrayRef<int64_t> ranges,
                                          ArrayRef<linalg::LinalgOp> joining) {
  TilePlan plan;
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  SmallVector<unsigned> parallel;
  for (auto [d, it] : llvm::enumerate(iters)) {
    if (it == utils::IteratorType::parallel)
      parallel.push_back(d);
  }
  plan.sizes.assign(ranges.size(), 0); // reductions stay whole
  for (unsigned d : parallel)
    plan.sizes[d] = 1;
  int64_t cols = 1, rows = 1, rowLimit = maxRows;
  if (!parallel.empty()) {
    int64_t range = ranges[parallel.back()];
    cols = divisorAtMost(range, maxCols);
    // A last dimension with no good divisor up to max-cols (29-element DMA
    // runs over GPT-2's logits) takes a wider one, and fewer rows.
    if (std::optional<int64_t> wide = widerDivisor(range, cols, maxCols)) {
      cols = *wide;
      rowLimit = std::max<int64_t>(1, maxRows * maxCols / cols);
    }
    plan.sizes[parallel.back()] = cols;
  }
  // The same for rows: an embedding table's vocabulary (50257 x 768) gave
  // its elementwise ops (AdamW, clipping, the bf16 copy) 29-row tiles, 1733
  // of them per column tile. A wider row divisor with fewer columns keeps
  // the tile near max-rows x max-cols elements; `narrowRows` and
  // `narrowCols` are the plan to return to if it does not fit in SRAM.
  int64_t narrowRows = 0, narrowCols = cols;
  if (parallel.size() >= 2) {
    int64_t range = ranges[parallel[parallel.size() - 2]];
    rows = divisorAtMost(range, rowLimit);
    std::optional<int64_t> wide;
    if (rowLimit == maxRows && (wide = widerDivisor(range, rows, rowLimit))) {
      narrowRows = rows;
      rows = *wide;
      cols = divisorAtMost(ranges[parallel.back()],
                           std::max<int64_t>(1, maxRows * maxCols / rows));
      plan.sizes[parallel.back()] = cols;
    }
    plan.sizes[parallel[parallel.size() - 2]] = rows;
  }
  // A transpose that moves the input's innermost dimension (a key gradient
  // [b, h, d, t] back to [b, t, h, d]) reads that dimension at a stride:
  // with a tile of 1 along it, every element is a DMA run of its own. Tile
  // it like a row instead, so that the input's runs are `run` elements long
  // (the vector unit's transpose reorders the tile in SRAM).
  int64_t run = 1, runDim = -1;
  if (auto transpose = dyn_cast<linalg::TransposeOp>(op.getOperation())) {
    AffineMap in = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
    if (auto d = dyn_cast<AffineDimExpr>(in.getResults().back());
        d && plan.sizes[d.getPosition()] == 1) {
      runDim = d.getPosition();
      run = divisorAtMost(ranges[runDim], target.getVectorLanes());
      plan.sizes[runDim] = run;
    }
  }
  // Two small innermost dims held whole (attention's heads, [b, t, 12, 64]
  // to [b, 12, t, 64] and back) leave tiles of a few hundred elements: one
  // DMA of a few runs and a loop iteration each. The outer parallel dims
  // then grow, innermost first, up to `max-rows` x `max-cols` elements.
  SmallVector<unsigned> grown;
  if (runDim < 0 && parallel.size() >= 3 &&
      rows == ranges[parallel[parallel.size() - 2]] &&
      cols == ranges[parallel.back()]) {
    int64_t elements = rows * cols;
    for (int i = static_cast<int>(parallel.size()) - 3; i >= 0; --i) {
      unsigned d = parallel[i];
      int64_t size = divisorAtMost(
          ranges[d], std::max<int64_t>(1, maxRows * maxCols / elements));
      if (size <= 1)
        break;
      plan.sizes[d] = size;
      grown.push_back(d);
      elements *= size;
      if (size < ranges[d])
        break;
    }
  }
  auto footprint = [&] {
    SmallVector<int64_t> eff = effectiveSizes(ranges, plan.sizes);
    int64_t bytes = tileFootprint(op, eff);
    for (linalg::LinalgOp j : joining)
      bytes += tileFootprint(j, eff);
    return bytes;
  };
  int64_t bytes = footprint();
  // Wide rows give way to fewer columns (down to a quarter of the first
  // choice, 128-byte DMA runs at f32 over 128 columns), then to the narrow
  // plan.
  if (narrowRows) {
    int64_t floor = std::max<int64_t>(1, cols / 4);
    while (bytes > target.getSramBytes() && cols > floor) {
      cols = divisorAtMost(ranges[parallel.back()], cols / 2);
      plan.sizes[parallel.back()] = cols;
      bytes = footprint();
    }
    if (bytes > target.getSramBytes()) {
      rows = narrowRows;
      cols = narrowCols;
      plan.sizes[parallel[parallel.size() - 2]] = rows;
      plan.sizes[parallel.back()] = cols;
      bytes = footprint();
    }
  }
  // Grown dims give way first (outermost first), back to one.
  for (unsigned d : llvm::reverse(grown)) {
    if (bytes <= target.getSramBytes())
      break;
    plan.sizes[d] = 1;
    bytes = footprint();
  }
  while (bytes > target.getSramBytes() && run > 1) {
    run = divisorAtMost(ranges[runDim], run / 2);
    plan.sizes[runDim] = run;
    bytes = footprint();
  }
  while (bytes > target.getSramBytes() && (rows > 1 || cols > 1)) {
    if (rows > 1) {
      rows = divisorAtMost(ranges[parallel[parallel.size() - 2]], rows / 2);
      plan.sizes[parallel[parallel.size() - 2]] = rows;
    } else {
      cols = divisorAtMost(ranges[parallel.back()], cols / 2);
      plan.sizes[parallel.back()] = cols;
    }
    bytes = footprint();
  }
  // A reduction too large for SRAM even one output element at a time (a
  // gradient norm's sum over a whole embedding table) is split too: its
  // loops become tile loops, outermost first so that the innermost rows stay
  // contiguous, and each chunk is combined into the output the loop carries.
  bool split = false;
  for (auto [d, it] : llvm::enumerate(iters)) {
    if (bytes <= target.getSramBytes())
      break;
    if (it != utils::IteratorType::reduction)
      continue;
    int64_t size = ranges[d];
    while (bytes > target.getSramBytes() && size > 1) {
      size = divisorAtMost(ranges[d], size / 2);
      plan.sizes[d] = size;
      bytes = footprint();
      split = true;
    }
  }
  numSplitReductions += split;
  if (bytes > target.getSramBytes()) {
    tooBig(op, bytes);
    return failure();
  }
  plan.bytes = bytes;
  return plan;
}

/// True if `producer`'s one result is returned by the function and read by
/// `consumer`, all in one block, with identity maps on both sides (the
/// producer's tile is the consumer's tile).
bool isReturnedAndRead(linalg::GenericOp producer, linalg::LinalgOp consumer) {
  if (producer->getNumResults() != 1 ||
      producer->getBlock() != consumer->getBlock())
    return false;
  Value result = producer->getResult(0);
  bool returned = false, read = false;
  for (OpOperand &use : result.getUses()) {
    if (isa<func::ReturnOp>(use.getOwner()))
      returned = true;
    else if (isa<tensor::ExtractSliceOp>(use.getOwner()))
      continue; // the tile loop being built reads it through a slice
    else if (use.getOwner() == consumer.getOperation())
      read = consumer.getMatchingIndexingMap(&use).isIdentity();
    else
      return false;
  }
  return returned && read &&
         producer.getMatchingIndexingMap(producer.getDpsInitOperand(0))
             .isIdentity();
}

/// The single elementwise generic that consumes `op`'s only result, if any.
linalg::LinalgOp elementwiseConsumer(linalg::LinalgOp op) {
  if (op->getNumResults() != 1 || !op->getResult(0).hasOneUse())
    return {};
  auto consumer = dyn_cast<linalg::GenericOp>(*op->getResult(0).user_begin());
  if (!consumer || !linalg::isElementwise(consumer) ||
      consumer->getBlock() != op->getBlock())
    return {};
  // The consumer's iteration space must be the contraction's (M, N) tile.
  if (consumer.getNumLoops() != op.getNumParallelLoops())
    return {};
  return consumer;
}

void TilePass::runOnOperation() {
  func::FuncOp func = getOperation();
  target = lookupTarget(func);
  if (!target) {
    func.emitError() << "nova-tile needs a #nova.target on the module; run "
                        "--nova-attach-target first";
    return signalPassFailure();
  }

  // Roots in program order; consumers are visited last-to-first so that a
  // contraction is fused into its epilogue before it would be tiled alone.
  // Ops inside the program's own loops (a decomposed convolution's loops
  // over images and kernel taps) are tiled like any other; the loops this
  // pass creates are made after the walk.
  SmallVector<linalg::LinalgOp> ops;
  func.walk([&](linalg::LinalgOp op) {
    if (op.hasPureTensorSemantics())
      ops.push_back(op);
  });

  IRRewriter rewriter(func.getContext());
  llvm::SmallPtrSet<Operation *, 16> done;
  bool failedAny = false;
  for (linalg::LinalgOp op : llvm::reverse(ops)) {
    if (done.contains(op))
      continue;
    if (isa<linalg::FillOp>(op) && op->use_empty()) {
      rewriter.eraseOp(op); // its uses were all fused into tile loops
      continue;
    }
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic)) {
      op->emitOpError() << "has dynamic shapes, which nova-tile does not "
                           "support";
      failedAny = true;
      continue;
    }
    if (ranges.empty())
      continue; // rank-0 ops need no tiling
    if (llvm::is_contained(ranges, 0)) {
      // No iterations: every result is its init as given (a reduction over
      // nothing, or an empty result). Tiling would hand upstream zero tile
      // sizes, which it asserts on.
      rewriter.replaceOp(op, op.getDpsInits());
      done.insert(op);
      ++numEmpty;
      continue;
    }

    // A generic whose operand comes from a contraction: tile the pair.
    linalg::LinalgOp root = op, contraction;
    FailureOr<linalg::ContractionDimensions> dims = failure();
    if (isa<linalg::GenericOp>(op) && linalg::isElementwise(op)) {
      for (Value in : op.getDpsInputs()) {
        auto producer = in.getDefiningOp<linalg::LinalgOp>();
        if (!producer || done.contains(producer) ||
            elementwiseConsumer(producer) != op)
          continue;
        auto pdims = linalg::inferContractionDims(producer);
        if (succeeded(pdims) && !pdims->m.empty() && !pdims->n.empty() &&
            !pdims->k.empty()) {
          contraction = producer;
          dims = pdims;
          break;
        }
      }
    } else {
      dims = linalg::inferContractionDims(op);
      if (succeeded(dims) && !dims->m.empty() && !dims->n.empty() &&
          !dims->k.empty())
        contraction = op;
    }

    FailureOr<TilePlan> plan = failure();
    SmallVector<int64_t> rootSizes;
    SmallVector<linalg::LinalgOp> joining;
    if (contraction && contraction != op) {
      // Plan on the contraction, then map its parallel sizes onto the
      // epilogue's loops through the contraction's output map.
      SmallVector<int64_t> cRanges = contraction.getStaticLoopRanges();
      plan = planContraction(contraction, *dims, cRanges, op);
      if (succeeded(plan) && plan->sizes[dims->k.back()] == 0) {
        AffineMap outMap =
            contraction.getMatchingIndexingMap(contraction.getDpsInitOperand(0));
        AffineMap epiMap = op.getMatchingIndexingMap(
            op->getOpOperands().begin() +
            llvm::find(op->getOperands(), contraction->getResult(0)).getIndex());
        rootSizes.assign(ranges.size(), 0);
        bool ok = outMap.isProjectedPermutation() && epiMap.isPermutation();
        for (auto [i, expr] : llvm::enumerate(outMap.getResults())) {
          if (!ok)
            break;
          unsigned cDim = cast<AffineDimExpr>(expr).getPosition();
          unsigned eDim = cast<AffineDimExpr>(epiMap.getResult(i)).getPosition();
          rootSizes[eDim] = plan->sizes[cDim];
        }
        if (!ok)
          contraction = {};
      } else {
        contraction = {};
      }
      if (!contraction) {
        plan = planGeneric(op, ranges);
        if (failed(plan)) {
          failedAny = true;
          continue;
        }
        rootSizes = plan->sizes;
      }
    } else if (contraction) {
      plan = planContraction(op, *dims, ranges, {});
      if (failed(plan)) {
        failedAny = true;
        continue;
      }
      rootSizes = plan->sizes;
    } else {
      // Producers that will join an elementwise op's loop share its tiles
      // (a plan with them fits whenever one without does: tiles shrink to
      // one element).
      if (linalg::isElementwise(op))
        for (Value in : op.getDpsInputs())
          if (auto g = in.getDefiningOp<linalg::GenericOp>();
              g && !done.contains(g) && linalg::isElementwise(g) &&
              g.getStaticLoopRanges() == ranges && isReturnedAndRead(g, op))
            joining.push_back(g);
      plan = planGeneric(op, ranges, joining);
      if (failed(plan)) {
        failedAny = true;
        continue;
      }
      rootSizes = plan->sizes;
    }
    peakTileBytes = std::max<uint64_t>(peakTileBytes, plan->bytes);

    // Inside a loop, an op that is one tile already (tiled earlier, or a
    // small matmul in a convolution's tap loop) is left as it is.
    SmallVector<int64_t> rootRanges = root.getStaticLoopRanges();
    bool oneTile = llvm::all_of(llvm::enumerate(rootSizes), [&](auto it) {
      return it.value() == 0 || it.value() >= rootRanges[it.index()];
    });
    if (oneTile && root->getParentOfType<scf::ForOp>()) {
      done.insert(root);
      continue;
    }

    SmallVector<OpFoldResult> sizes =
        getAsIndexOpFoldResult(func.getContext(), rootSizes);
    scf::SCFTilingOptions tiling;
    tiling.setTileSizes(sizes);
    scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    Operation *fusedContraction = contraction;
    // A fill may only join the loop nest when no reduction loop is tiled:
    // inside a K loop it would reset the partial sums of every chunk.
    SmallVector<utils::IteratorType> rootIters = root.getIteratorTypesArray();
    bool tilesReduction = llvm::any_of(
        llvm::enumerate(rootSizes), [&](auto it) {
          return it.value() != 0 && it.value() < ranges[it.index()] &&
                 rootIters[it.index()] == utils::IteratorType::reduction;
        });
    // SRAM left for elementwise producers that join the consumer's loop
    // (planned in when they were known, see planGeneric's `joining`).
    int64_t sramLeft = target.getSramBytes() - plan->bytes;
    SmallVector<int64_t> rootTile = effectiveSizes(rootRanges, rootSizes);
    options.setFusionControlFn(
        [&](tensor::ExtractSliceOp, OpResult producer, bool isDestination)
            -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          Operation *p = producer.getOwner();
          // Fuse the contraction into its epilogue, and zero fills into the
          // contraction.
          if (p == fusedContraction)
            return scf::SCFTileAndFuseOptions::ControlFnResult{};
          if (isa<linalg::FillOp>(p) && !tilesReduction)
            return scf::SCFTileAndFuseOptions::ControlFnResult{};
          // An elementwise producer that is also a result of the function
          // (an optimizer's new moment, read by the parameter's update)
          // joins an elementwise consumer's loop and the loop yields its
          // tiles too: one pass over the tiles instead of two.
          if (auto g = dyn_cast<linalg::GenericOp>(p);
              g && !isDestination && !contraction &&
              linalg::isElementwise(root) && linalg::isElementwise(g) &&
              g.getNumLoops() == root.getNumLoops() &&
              isReturnedAndRead(g, root)) {
            int64_t bytes = llvm::is_contained(joining, linalg::LinalgOp(g))
                                ? 0 // planned in
                                : tileFootprint(g, rootTile);
            if (bytes <= sramLeft) {
              sramLeft -= bytes;
              ++numFusedResults;
              return scf::SCFTileAndFuseOptions::ControlFnResult{
                  /*yieldProducerReplacement=*/true};
            }
          }
          return std::nullopt;
        });
    rewriter.setInsertionPoint(root);
    FailureOr<scf::SCFTileAndFuseResult> result =
        scf::tileConsumerAndFuseProducersUsingSCF(
            rewriter, cast<TilingInterface>(root.getOperation()), options);
    if (failed(result)) {
      root->emitOpError() << "could not be tiled";
      failedAny = true;
      continue;
    }
    ++numTiled;
    numFused += result->fusedProducers.size();
    for (Operation *p : result->fusedProducers)
      done.insert(p);
    for (OpResult res : root->getResults())
      if (Value repl = result->replacements.lookup(res))
        rewriter.replaceAllUsesWith(res, repl);
    // A fused producer the loop yields: its uses outside the loop read the
    // yielded value (those inside are the slices fusion has replaced).
    Operation *outer = result->loops.empty() ? nullptr
                                             : result->loops.front().getOperation();
    for (Operation *p : result->fusedProducers)
      for (OpResult res : p->getResults())
        if (Value repl = result->replacements.lookup(res))
          rewriter.replaceUsesWithIf(res, repl, [&](OpOperand &use) {
            return !outer || !outer->isAncestor(use.getOwner());
          });
    // The slices fusion replaced are dead; with them gone, so is the producer.
    for (Operation *p : result->fusedProducers)
      for (Operation *user : llvm::make_early_inc_range(p->getUsers()))
        if (isa<tensor::ExtractSliceOp>(user) && user->use_empty())
          rewriter.eraseOp(user);
    done.insert(root);
    rewriter.eraseOp(root);
    for (Operation *p : result->fusedProducers)
      if (p->use_empty())
        rewriter.eraseOp(p);
  }
  if (failedAny)
    signalPassFailure();
}

} // namespace
