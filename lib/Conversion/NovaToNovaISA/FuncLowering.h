//===- FuncLowering.h - state of one function's nova_isa lowering -*- C++ -*-===//
//
// Internal to convert-nova-to-isa. The driver walks the body in program
// order; each source op's lowering emits instructions through this state,
// which maps source index values to registers, memrefs to their root buffer
// and byte offset, and records the byte ranges every instruction reads and
// writes for the synchronisation step (Synchronization.h).
//
//===----------------------------------------------------------------------===//
#ifndef LIB_CONVERSION_NOVATONOVAISA_FUNCLOWERING_H
#define LIB_CONVERSION_NOVATONOVAISA_FUNCLOWERING_H

#include "nova/Conversion/NovaToNovaISA/NovaToNovaISA.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"
#include "nova/Dialect/NovaISA/IR/NovaISAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include <tuple>

namespace mlir::nova::isa_lowering {

/// Bytes [lo, hi) of one memory space.
struct ByteRange {
  nova::MemorySpace space;
  int64_t lo, hi;
  bool overlaps(const ByteRange &o) const {
    return space == o.space && lo < o.hi && o.lo < hi;
  }
  bool contains(const ByteRange &o) const {
    return space == o.space && lo <= o.lo && o.hi <= hi;
  }
};

/// One memory access of an instruction.
struct Access {
  ByteRange range;
  bool write;
};

/// Where a memref value lives: its root buffer and its byte offset from the
/// root's address, `constBytes + sum(value_i * coef_i)` over source index
/// values.
struct BufferRef {
  nova::MemorySpace space;
  int64_t rootAddr = 0;
  int64_t rootBytes = 0;
  int64_t constBytes = 0;
  SmallVector<std::pair<Value, int64_t>> terms;
};

/// A tile operand of an instruction.
struct TileOperand {
  Value addr;
  nova_isa::TileAttr tile;
  ByteRange range;
};

class FuncLowering {
public:
  FuncLowering(func::FuncOp func, const NovaToNovaISAPatterns &patterns,
               const NovaToNovaISAOptions &options);

  /// Lowers and synchronises the body, then replaces it. With
  /// `outOfSemaphores`, running out of semaphores sets it and fails quietly
  /// (see synchronize()).
  LogicalResult run(NovaToNovaISAStats &stats,
                    bool *outOfSemaphores = nullptr);

  OpBuilder &builder() { return b; }
  nova::TargetAttr getTarget() const { return target; }

  // Scalars ------------------------------------------------------------------
  Value li(Location loc, int64_t value);
  Value salu(Location loc, nova_isa::SaluKind kind, Value lhs, Value rhs);
  /// The register holding source index value `v` (materialising constants).
  FailureOr<Value> scalar(Location loc, Value v, Operation *user);
  void setConstant(Value v, int64_t c) { constants[v] = c; }
  std::optional<int64_t> getConstant(Value v) const;
  void setRegister(Value v, Value reg) { registers[v] = reg; }

  // Buffers ------------------------------------------------------------------
  void setBuffer(Value memref, BufferRef ref) { buffers[memref] = ref; }
  const BufferRef *lookupBuffer(Value memref) const;
  /// The strides of `type` (MemRefType::getStridesAndOffset). Cached: that
  /// simplifies the layout's affine map on every call, and the operands of
  /// a function share a few hundred types.
  FailureOr<SmallVector<int64_t>> stridesOf(MemRefType type);
  /// The register and descriptor of `memref` as an operand of `user`.
  /// `collapseWith`: when the instruction pairs its operands element by
  /// element in row-major order (a copy: `memref` and these, all of one
  /// shape; a fill: `memref` alone, give it itself), a tile of rank > 4
  /// drops unit dimensions and merges dimensions contiguous in every one of
  /// them, to fit the descriptor.
  FailureOr<TileOperand> tile(Value memref, Operation *user,
                              ArrayRef<Value> collapseWith = {});

  // Instructions ---------------------------------------------------------------
  /// Registers an emitted instruction and the ranges it reads and writes.
  void instruction(Operation *instr, ArrayRef<Access> accesses);
  /// The DMA queue of the next DMA: round robin over `dma-queues` outside
  /// loops; in a loop body, by the loop policy over `loopDmaQueues` queues
  /// (`toHbm`: a store, which the split policy keeps off the loads' queues).
  int64_t nextDmaQueue(bool toHbm);
  /// Tokens: `strict` ones (peer DMA, barrier) become a sequencer wait at
  /// their nova.wait, the others are ordered by the hazards on their buffers.
  void setToken(Value token, Operation *instr, bool strict);
  void setLocalToken(Value token) { localTokens.insert(token); }
  LogicalResult waitToken(Value token, Operation *waitOp);

private:
  LogicalResult lowerBlock(Block &block);
  LogicalResult lowerFor(Operation *forOp);
  LogicalResult bindArguments();
  /// The least and greatest value of source index value `v` (inclusive),
  /// if constant (upstream value-bounds analysis: loop induction variables
  /// and arithmetic on them). Cached: the source body does not change while
  /// it is lowered, and each tile asks again for the same few values.
  std::optional<std::pair<int64_t, int64_t>> boundsOf(Value v);
  /// The least and greatest value of `sum(value_i * coef_i)` (inclusive), if
  /// every value has constant bounds. No terms give {0, 0}.
  std::optional<std::pair<int64_t, int64_t>>
  offsetSpan(ArrayRef<std::pair<Value, int64_t>> terms);
  void pushScope() { scopes.emplace_back(); }
  void popScope() { scopes.pop_back(); }

  using CacheKey = std::tuple<int64_t, void *, void *, int64_t>;
  struct CacheEntry {
    Value reg;
    int64_t index;
  };
  Value cached(const CacheKey &key);
  void cache(const CacheKey &key, Value reg);

  func::FuncOp func;
  const NovaToNovaISAPatterns &patterns;
  NovaToNovaISAOptions options;
  nova::TargetAttr target;
  OpBuilder b;
  Block *newBody = nullptr;
  int64_t emitted = 0;
  int64_t loopDepth = 0;
  int64_t dmaCounter = 0;
  /// Per enclosing loop body, innermost last: the loads and stores so far.
  SmallVector<std::pair<int64_t, int64_t>> loopDmaCounters;
  SmallVector<DenseMap<CacheKey, CacheEntry>> scopes;
  DenseMap<Value, int64_t> constants;
  DenseMap<Value, Value> registers;
  DenseMap<Value, int64_t> registerConstants;
  DenseMap<Value, BufferRef> buffers;
  DenseMap<Value, std::optional<std::pair<int64_t, int64_t>>> valueBounds;
  DenseMap<Type, std::optional<SmallVector<int64_t>>> strideCache;
  struct TokenInfo {
    Operation *instr;
    bool strict;
  };
  DenseMap<Value, TokenInfo> tokens;
  DenseSet<Value> localTokens;
  DenseMap<Operation *, SmallVector<Access>> accesses;
  DenseMap<Operation *, Operation *> strictWaits;
};

/// Bytes of one element of `type` (f32 4, bf16/f16 2, iN N/8).
int64_t elementBytes(Type type);

// Topic files.
void populateAddressingPatterns(NovaToNovaISAPatterns &patterns);
void populateComputePatterns(NovaToNovaISAPatterns &patterns);
void populateDataMovementPatterns(NovaToNovaISAPatterns &patterns);

} // namespace mlir::nova::isa_lowering

#endif // LIB_CONVERSION_NOVATONOVAISA_FUNCLOWERING_H
