//===- AddressingToISA.cpp - buffers, views and index arithmetic ----------===//
//
// Buffers (memref.alloc/alloca, memref.get_global, function arguments) take
// their address from `nova.address`; views (subview, expand/collapse_shape,
// view, cast, reinterpret_cast) only add to the byte offset, so they emit
// nothing until an instruction uses them (FuncLowering::tile). Index
// arithmetic becomes li/salu, folded when its operands are constants.
//
//===----------------------------------------------------------------------===//
#include "FuncLowering.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::isa_lowering;
using nova_isa::SaluKind;

static FailureOr<BufferRef> rootBuffer(Operation *op, MemRefType type,
                                       IntegerAttr addr) {
  if (!addr)
    return op->emitOpError()
           << "has no `nova.address` (run nova-plan-memory first)";
  std::optional<MemorySpace> space = getMemorySpace(type);
  if (!space)
    return op->emitOpError() << "buffer has no nova memory space: " << type;
  if (!type.hasStaticShape())
    return op->emitOpError() << "buffer has a dynamic shape: " << type;
  BufferRef ref;
  ref.space = *space;
  ref.rootAddr = addr.getInt();
  int64_t eb = elementBytes(type.getElementType());
  if (eb == 0)
    return op->emitOpError() << "buffer element type has no size: " << type;
  ref.rootBytes = type.getNumElements() * eb;
  return ref;
}

static LogicalResult lowerAlloc(Operation *op, FuncLowering &l) {
  auto type = cast<MemRefType>(op->getResult(0).getType());
  FailureOr<BufferRef> ref =
      rootBuffer(op, type, op->getAttrOfType<IntegerAttr>(
          NovaDialect::AddressAttrHelper::getNameStr()));
  if (failed(ref))
    return failure();
  l.setBuffer(op->getResult(0), *ref);
  return success();
}

static LogicalResult lowerGetGlobal(memref::GetGlobalOp op, FuncLowering &l) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      op, op.getNameAttr());
  if (!global)
    return op.emitOpError() << "refers to an unknown memref.global";
  FailureOr<BufferRef> ref =
      rootBuffer(op, op.getType(),
                 global->getAttrOfType<IntegerAttr>(NovaDialect::AddressAttrHelper::getNameStr()));
  if (failed(ref))
    return failure();
  l.setBuffer(op.getResult(), *ref);
  return success();
}

/// A view with the source's offset plus `extraConst` bytes and `extraTerms`.
static LogicalResult
viewOf(Operation *op, Value source, Value result, int64_t extraConst,
       ArrayRef<std::pair<Value, int64_t>> extraTerms, FuncLowering &l) {
  const BufferRef *src = l.lookupBuffer(source);
  if (!src)
    return op->emitOpError() << "views a buffer that has no address";
  BufferRef ref = *src;
  ref.constBytes += extraConst;
  for (auto term : extraTerms) {
    if (std::optional<int64_t> c = l.getConstant(term.first)) {
      ref.constBytes += *c * term.second;
      continue;
    }
    ref.terms.push_back(term);
  }
  l.setBuffer(result, ref);
  return success();
}

static LogicalResult lowerSubView(memref::SubViewOp op, FuncLowering &l) {
  MemRefType srcType = op.getSourceType();
  FailureOr<SmallVector<int64_t>> strides = l.stridesOf(srcType);
  if (failed(strides) || llvm::any_of(*strides, ShapedType::isDynamic))
    return op.emitOpError() << "source must have static strides, got "
                            << srcType;
  int64_t eb = elementBytes(srcType.getElementType());
  int64_t constBytes = 0;
  SmallVector<std::pair<Value, int64_t>> terms;
  unsigned dynIdx = 0;
  for (auto [i, off] : llvm::enumerate(op.getStaticOffsets())) {
    if (ShapedType::isDynamic(off))
      terms.push_back({op.getOffsets()[dynIdx++], (*strides)[i] * eb});
    else
      constBytes += off * (*strides)[i] * eb;
  }
  return viewOf(op, op.getSource(), op.getResult(), constBytes, terms, l);
}

static LogicalResult lowerView(memref::ViewOp op, FuncLowering &l) {
  return viewOf(op, op.getSource(), op.getResult(), 0,
                {{op.getByteShift(), 1}}, l);
}

static LogicalResult lowerReinterpretCast(memref::ReinterpretCastOp op,
                                          FuncLowering &l) {
  const BufferRef *src = l.lookupBuffer(op.getSource());
  if (!src)
    return op.emitOpError() << "views a buffer that has no address";
  if (op.getStaticOffsets().size() != 1 ||
      ShapedType::isDynamic(op.getStaticOffsets()[0]))
    return op.emitOpError() << "must have a static offset";
  // The offset of a reinterpret_cast is absolute from the root's base.
  BufferRef ref = *src;
  ref.terms.clear();
  ref.constBytes = op.getStaticOffsets()[0] *
                   elementBytes(op.getType().getElementType());
  l.setBuffer(op.getResult(), ref);
  return success();
}

static LogicalResult lowerSameOffsetView(Operation *op, FuncLowering &l) {
  return viewOf(op, op->getOperand(0), op->getResult(0), 0, {}, l);
}

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

static LogicalResult lowerConstant(arith::ConstantOp op, FuncLowering &l) {
  if (auto attr = dyn_cast<IntegerAttr>(op.getValue()))
    l.setConstant(op.getResult(), attr.getValue().getSExtValue());
  // Float and other constants are only immediates of nova ops.
  return success();
}

static LogicalResult binary(Operation *op, SaluKind kind, FuncLowering &l,
                            bool swap = false) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (swap)
    std::swap(lhs, rhs);
  FailureOr<Value> a = l.scalar(op->getLoc(), lhs, op);
  if (failed(a))
    return failure();
  FailureOr<Value> bv = l.scalar(op->getLoc(), rhs, op);
  if (failed(bv))
    return failure();
  l.setRegister(op->getResult(0), l.salu(op->getLoc(), kind, *a, *bv));
  return success();
}

static LogicalResult lowerCmp(arith::CmpIOp op, FuncLowering &l) {
  using P = arith::CmpIPredicate;
  switch (op.getPredicate()) {
  case P::eq: return binary(op, SaluKind::Eq, l);
  case P::ne: return binary(op, SaluKind::Ne, l);
  case P::slt: case P::ult: return binary(op, SaluKind::Lt, l);
  case P::sle: case P::ule: return binary(op, SaluKind::Le, l);
  case P::sgt: case P::ugt: return binary(op, SaluKind::Lt, l, /*swap=*/true);
  case P::sge: case P::uge: return binary(op, SaluKind::Le, l, /*swap=*/true);
  }
  return failure();
}

/// select(c, a, b) = b + c * (a - b), with c in {0, 1}.
static LogicalResult lowerSelect(arith::SelectOp op, FuncLowering &l) {
  if (!op.getType().isIntOrIndex())
    return op.emitOpError() << "selects non-integer values";
  Location loc = op.getLoc();
  FailureOr<Value> c = l.scalar(loc, op.getCondition(), op);
  if (failed(c))
    return failure();
  FailureOr<Value> a = l.scalar(loc, op.getTrueValue(), op);
  if (failed(a))
    return failure();
  FailureOr<Value> bv = l.scalar(loc, op.getFalseValue(), op);
  if (failed(bv))
    return failure();
  Value diff = l.salu(loc, SaluKind::Sub, *a, *bv);
  Value scaled = l.salu(loc, SaluKind::Mul, *c, diff);
  l.setRegister(op.getResult(), l.salu(loc, SaluKind::Add, *bv, scaled));
  return success();
}

/// Folds an integer op whose operands are all constants.
template <typename OpTy>
static bool foldConstant(OpTy op, FuncLowering &l,
                         function_ref<std::optional<int64_t>(int64_t, int64_t)> fn) {
  std::optional<int64_t> a = l.getConstant(op->getOperand(0));
  std::optional<int64_t> bv = l.getConstant(op->getOperand(1));
  if (!a || !bv)
    return false;
  std::optional<int64_t> r = fn(*a, *bv);
  if (!r)
    return false;
  l.setConstant(op->getResult(0), *r);
  return true;
}

template <typename OpTy>
static void addBinary(NovaToNovaISAPatterns &patterns, SaluKind kind,
                      std::optional<int64_t> (*fn)(int64_t, int64_t)) {
  patterns.add<OpTy>([kind, fn](OpTy op, FuncLowering &l) -> LogicalResult {
    if (!op.getType().isIntOrIndex())
      return op.emitOpError() << "has no nova_isa lowering for non-integer "
                                 "operands";
    if (foldConstant(op, l, fn))
      return success();
    return binary(op, kind, l);
  });
}

static LogicalResult lowerIndexCast(Operation *op, FuncLowering &l) {
  Value in = op->getOperand(0);
  if (std::optional<int64_t> c = l.getConstant(in)) {
    l.setConstant(op->getResult(0), *c);
    return success();
  }
  FailureOr<Value> reg = l.scalar(op->getLoc(), in, op);
  if (failed(reg))
    return failure();
  l.setRegister(op->getResult(0), *reg);
  return success();
}

/// affine.apply with +, * by constants, constants, dims and symbols.
static FailureOr<Value> lowerAffineExpr(AffineExpr expr, ValueRange operands,
                                        unsigned numDims, Operation *op,
                                        FuncLowering &l) {
  Location loc = op->getLoc();
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return l.li(loc, c.getValue());
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return l.scalar(loc, operands[d.getPosition()], op);
  if (auto s = dyn_cast<AffineSymbolExpr>(expr))
    return l.scalar(loc, operands[numDims + s.getPosition()], op);
  auto bin = cast<AffineBinaryOpExpr>(expr);
  SaluKind kind;
  switch (bin.getKind()) {
  case AffineExprKind::Add: kind = SaluKind::Add; break;
  case AffineExprKind::Mul: kind = SaluKind::Mul; break;
  default:
    return op->emitOpError()
           << "affine floordiv/ceildiv/mod have no nova_isa lowering (run "
              "lower-affine first)";
  }
  FailureOr<Value> lhs = lowerAffineExpr(bin.getLHS(), operands, numDims, op, l);
  if (failed(lhs))
    return failure();
  FailureOr<Value> rhs = lowerAffineExpr(bin.getRHS(), operands, numDims, op, l);
  if (failed(rhs))
    return failure();
  return l.salu(loc, kind, *lhs, *rhs);
}

static LogicalResult lowerAffineApply(affine::AffineApplyOp op,
                                      FuncLowering &l) {
  AffineMap map = op.getAffineMap();
  FailureOr<Value> reg = lowerAffineExpr(map.getResult(0), op.getMapOperands(),
                                         map.getNumDims(), op, l);
  if (failed(reg))
    return failure();
  l.setRegister(op.getResult(), *reg);
  return success();
}

void mlir::nova::isa_lowering::populateAddressingPatterns(
    NovaToNovaISAPatterns &patterns) {
  patterns.add<memref::AllocOp>(
      [](memref::AllocOp op, FuncLowering &l) { return lowerAlloc(op, l); });
  patterns.add<memref::AllocaOp>(
      [](memref::AllocaOp op, FuncLowering &l) { return lowerAlloc(op, l); });
  patterns.add<memref::DeallocOp>(
      [](memref::DeallocOp, FuncLowering &) { return success(); });
  patterns.add<memref::AssumeAlignmentOp>(
      [](memref::AssumeAlignmentOp op, FuncLowering &l) {
        return lowerSameOffsetView(op, l);
      });
  patterns.add<memref::GetGlobalOp>(lowerGetGlobal);
  patterns.add<memref::SubViewOp>(lowerSubView);
  patterns.add<memref::ViewOp>(lowerView);
  patterns.add<memref::ReinterpretCastOp>(lowerReinterpretCast);
  patterns.add<memref::ExpandShapeOp>([](memref::ExpandShapeOp op,
                                         FuncLowering &l) {
    return lowerSameOffsetView(op, l);
  });
  patterns.add<memref::CollapseShapeOp>([](memref::CollapseShapeOp op,
                                           FuncLowering &l) {
    return lowerSameOffsetView(op, l);
  });
  patterns.add<memref::CastOp>(
      [](memref::CastOp op, FuncLowering &l) { return lowerSameOffsetView(op, l); });
  // A transpose only permutes the strides, which the tile descriptor takes
  // from the result type.
  patterns.add<memref::TransposeOp>([](memref::TransposeOp op,
                                       FuncLowering &l) {
    return lowerSameOffsetView(op, l);
  });

  patterns.add<arith::ConstantOp>(lowerConstant);
  patterns.add<nova::ChipIdOp>([](nova::ChipIdOp op, FuncLowering &l) {
    l.setRegister(op.getId(),
                  nova_isa::ChipIdOp::create(
                      l.builder(), op.getLoc(), l.builder().getIndexType(),
                      nova_isa::EngineAttr::get(op.getContext(), nova_isa::Engine::Scalar)));
    return success();
  });
  using R = std::optional<int64_t>;
  addBinary<arith::AddIOp>(patterns, SaluKind::Add,
                           [](int64_t a, int64_t b) -> R { return a + b; });
  addBinary<arith::SubIOp>(patterns, SaluKind::Sub,
                           [](int64_t a, int64_t b) -> R { return a - b; });
  addBinary<arith::MulIOp>(patterns, SaluKind::Mul,
                           [](int64_t a, int64_t b) -> R { return a * b; });
  auto div = [](int64_t a, int64_t b) -> R {
    return b == 0 ? R() : R(a / b);
  };
  auto rem = [](int64_t a, int64_t b) -> R {
    return b == 0 ? R() : R(a % b);
  };
  // Unsigned division and remainder of index values are lowered as signed
  // ones: loop indices and offsets are non-negative.
  addBinary<arith::DivSIOp>(patterns, SaluKind::Div, div);
  addBinary<arith::DivUIOp>(patterns, SaluKind::Div, div);
  addBinary<arith::RemSIOp>(patterns, SaluKind::Rem, rem);
  addBinary<arith::RemUIOp>(patterns, SaluKind::Rem, rem);
  auto mn = [](int64_t a, int64_t b) -> R { return std::min(a, b); };
  auto mx = [](int64_t a, int64_t b) -> R { return std::max(a, b); };
  addBinary<arith::MinSIOp>(patterns, SaluKind::Min, mn);
  addBinary<arith::MinUIOp>(patterns, SaluKind::Min, mn);
  addBinary<arith::MaxSIOp>(patterns, SaluKind::Max, mx);
  addBinary<arith::MaxUIOp>(patterns, SaluKind::Max, mx);
  patterns.add<arith::CmpIOp>([](arith::CmpIOp op, FuncLowering &l) {
    using P = arith::CmpIPredicate;
    std::optional<int64_t> a = l.getConstant(op.getLhs());
    std::optional<int64_t> bv = l.getConstant(op.getRhs());
    if (a && bv) {
      bool r = false;
      switch (op.getPredicate()) {
      case P::eq: r = *a == *bv; break;
      case P::ne: r = *a != *bv; break;
      case P::slt: case P::ult: r = *a < *bv; break;
      case P::sle: case P::ule: r = *a <= *bv; break;
      case P::sgt: case P::ugt: r = *a > *bv; break;
      case P::sge: case P::uge: r = *a >= *bv; break;
      }
      l.setConstant(op.getResult(), r);
      return success();
    }
    return lowerCmp(op, l);
  });
  patterns.add<arith::SelectOp>([](arith::SelectOp op, FuncLowering &l) {
    if (std::optional<int64_t> c = l.getConstant(op.getCondition())) {
      Value chosen = *c ? op.getTrueValue() : op.getFalseValue();
      if (std::optional<int64_t> v = l.getConstant(chosen)) {
        l.setConstant(op.getResult(), *v);
        return success();
      }
      FailureOr<Value> reg = l.scalar(op.getLoc(), chosen, op);
      if (failed(reg))
        return failure();
      l.setRegister(op.getResult(), *reg);
      return success();
    }
    return lowerSelect(op, l);
  });
  patterns.add<arith::IndexCastOp>(
      [](arith::IndexCastOp op, FuncLowering &l) { return lowerIndexCast(op, l); });
  patterns.add<arith::IndexCastUIOp>([](arith::IndexCastUIOp op,
                                        FuncLowering &l) {
    return lowerIndexCast(op, l);
  });
  patterns.add<affine::AffineApplyOp>(lowerAffineApply);
}
