//===- ComputeToISA.cpp - nova compute ops to matrix and vector ----------===//
//
// nova.matmul -> matmul on the matrix engine; nova.elementwise -> vunary,
// vbinary, vscalar, vselect or vcopy, nova.reduce -> vreduce,
// nova.transpose -> vtranspose and nova.fill -> vfill on the vector engine.
//
//===----------------------------------------------------------------------===//
#include "FuncLowering.h"

#include "nova/Dialect/Nova/IR/NovaOps.h"

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::isa_lowering;
using nova_isa::Engine;

static nova_isa::EngineAttr engine(FuncLowering &l, Engine e) {
  return nova_isa::EngineAttr::get(l.builder().getContext(), e);
}

static Access read(const TileOperand &t) { return Access{t.range, false}; }
static Access write(const TileOperand &t) { return Access{t.range, true}; }

static LogicalResult lowerMatmul(nova::MatmulOp op, FuncLowering &l) {
  FailureOr<TileOperand> lhs = l.tile(op.getLhs(), op);
  if (failed(lhs))
    return failure();
  FailureOr<TileOperand> rhs = l.tile(op.getRhs(), op);
  if (failed(rhs))
    return failure();
  FailureOr<TileOperand> acc = l.tile(op.getAcc(), op);
  if (failed(acc))
    return failure();
  auto mm = nova_isa::MatmulOp::create(
      l.builder(), op.getLoc(), lhs->addr, lhs->tile, rhs->addr, rhs->tile,
      acc->addr, acc->tile,
      op.getAccumulate() ? l.builder().getUnitAttr() : UnitAttr(),
      engine(l, Engine::Matrix),
      nullptr, nullptr);
  SmallVector<Access> acc2 = {read(*lhs), read(*rhs), write(*acc)};
  if (op.getAccumulate())
    acc2.push_back(read(*acc));
  l.instruction(mm, acc2);
  return success();
}

/// The tiles of an elementwise op's inputs, then its output. Operands of one
/// shape pair up element by element: a rank > 4 op may collapse (not when one
/// broadcasts; tile() checks the shapes).
static FailureOr<SmallVector<TileOperand>>
elementwiseTiles(Operation *op, ValueRange inputs, Value output,
                 FuncLowering &l) {
  SmallVector<Value> all(inputs);
  all.push_back(output);
  SmallVector<TileOperand> tiles;
  for (Value v : all) {
    FailureOr<TileOperand> t = l.tile(v, op, all);
    if (failed(t))
      return failure();
    tiles.push_back(*t);
  }
  return tiles;
}

/// What an elementwise instruction over `tiles` (inputs, then the output)
/// reads and writes.
static SmallVector<Access> elementwiseAccesses(ArrayRef<TileOperand> tiles) {
  SmallVector<Access> acc;
  for (const TileOperand &t : tiles.drop_back())
    acc.push_back(read(t));
  acc.push_back(write(tiles.back()));
  return acc;
}

static LogicalResult lowerElementwise(nova::ElementwiseOp op, FuncLowering &l) {
  FailureOr<SmallVector<TileOperand>> tiles =
      elementwiseTiles(op, op.getInputs(), op.getOutput(), l);
  if (failed(tiles))
    return failure();
  TileOperand *out = &tiles->back();
  ArrayRef<TileOperand> ins = ArrayRef(*tiles).drop_back();
  OpBuilder &b = l.builder();
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  ElementwiseKind kind = op.getKind();
  auto kindAttr = ElementwiseKindAttr::get(ctx, kind);
  Operation *instr = nullptr;
  if (kind == ElementwiseKind::Copy && ins.size() == 1 && !op.getScalarAttr()) {
    // vcopy needs equal shapes: broadcast size-1 input dimensions through a
    // stride of 0 (ISA 1.3).
    nova_isa::TileAttr inTile = ins[0].tile;
    if (inTile.getShape() != out->tile.getShape() &&
        inTile.getRank() == out->tile.getRank()) {
      SmallVector<int64_t> strides(inTile.getStrides());
      for (auto [i, size] : llvm::enumerate(inTile.getShape()))
        if (size == 1 && out->tile.getShape()[i] != 1)
          strides[i] = 0;
      inTile = nova_isa::TileAttr::get(ctx, inTile.getMemorySpace(),
                                       inTile.getElementType(),
                                       out->tile.getShape(), strides);
    }
    instr = nova_isa::VCopyOp::create(b, loc, ins[0].addr, inTile,
                                      out->addr, out->tile,
                                      engine(l, Engine::Vector), nullptr,
                                      nullptr);
  } else if (kind == ElementwiseKind::Select && ins.size() == 3) {
    instr = nova_isa::VSelectOp::create(
        b, loc, ins[0].addr, ins[0].tile, ins[1].addr, ins[1].tile,
        ins[2].addr, ins[2].tile, out->addr, out->tile,
        engine(l, Engine::Vector), nullptr, nullptr);
  } else if (op.getScalarAttr() && ins.size() == 1) {
    instr = nova_isa::VScalarOp::create(
        b, loc, kindAttr, ins[0].addr, ins[0].tile,
        op.getScalarAttr(), out->addr,
        out->tile, engine(l, Engine::Vector), nullptr, nullptr);
  } else if (ins.size() == 1) {
    instr = nova_isa::VUnaryOp::create(b, loc, kindAttr, ins[0].addr,
                                       ins[0].tile, out->addr, out->tile,
                                       engine(l, Engine::Vector), nullptr,
                                       nullptr);
  } else if (ins.size() == 2) {
    instr = nova_isa::VBinaryOp::create(
        b, loc, kindAttr, ins[0].addr, ins[0].tile, ins[1].addr, ins[1].tile,
        out->addr, out->tile, engine(l, Engine::Vector), nullptr, nullptr);
  } else {
    return op.emitOpError() << "has no nova_isa lowering for "
                            << ins.size() << " inputs";
  }
  l.instruction(instr, elementwiseAccesses(*tiles));
  return success();
}

static LogicalResult lowerElementwisePair(nova::ElementwisePairOp op,
                                          FuncLowering &l) {
  FailureOr<SmallVector<TileOperand>> tiles =
      elementwiseTiles(op, op.getInputs(), op.getOutput(), l);
  if (failed(tiles))
    return failure();
  TileOperand *out = &tiles->back();
  ArrayRef<TileOperand> ins = ArrayRef(*tiles).drop_back();
  OpBuilder &b = l.builder();
  MLIRContext *ctx = b.getContext();
  // Inputs are x, then a and b where they are not immediates.
  const TileOperand *a = op.getA() ? &ins[1] : nullptr;
  const TileOperand *bt = op.getB() ? &ins.back() : nullptr;
  auto instr = nova_isa::VFusedOp::create(
      b, op.getLoc(), ElementwiseKindAttr::get(ctx, op.getKind0()),
      ElementwiseKindAttr::get(ctx, op.getKind1()), ins[0].addr, ins[0].tile,
      a ? a->addr : Value(), a ? a->tile : nova_isa::TileAttr(),
      op.getAScalarAttr(), bt ? bt->addr : Value(),
      bt ? bt->tile : nova_isa::TileAttr(), op.getBScalarAttr(), out->addr,
      out->tile, engine(l, Engine::Vector), nullptr, nullptr);
  l.instruction(instr, elementwiseAccesses(*tiles));
  return success();
}

static LogicalResult lowerReduce(nova::ReduceOp op, FuncLowering &l) {
  FailureOr<TileOperand> in = l.tile(op.getInput(), op);
  if (failed(in))
    return failure();
  FailureOr<TileOperand> out = l.tile(op.getOutput(), op);
  if (failed(out))
    return failure();
  OpBuilder &b = l.builder();
  auto instr = nova_isa::VReduceOp::create(
      b, op.getLoc(), ReductionKindAttr::get(b.getContext(), op.getKind()),
      in->addr, in->tile, out->addr, out->tile, b.getI64IntegerAttr(op.getDim()),
      engine(l, Engine::Vector), nullptr, nullptr);
  l.instruction(instr, {read(*in), write(*out)});
  return success();
}

static LogicalResult lowerTranspose(nova::TransposeOp op, FuncLowering &l) {
  FailureOr<TileOperand> in = l.tile(op.getInput(), op);
  if (failed(in))
    return failure();
  FailureOr<TileOperand> out = l.tile(op.getOutput(), op);
  if (failed(out))
    return failure();
  OpBuilder &b = l.builder();
  auto instr = nova_isa::VTransposeOp::create(
      b, op.getLoc(), in->addr, in->tile, out->addr, out->tile,
      op.getPermutationAttr(), engine(l, Engine::Vector), nullptr, nullptr);
  l.instruction(instr, {read(*in), write(*out)});
  return success();
}

static LogicalResult lowerFill(nova::FillOp op, FuncLowering &l) {
  FailureOr<TileOperand> out =
      l.tile(op.getOutput(), op, /*collapseWith=*/{op.getOutput()});
  if (failed(out))
    return failure();
  Value valueReg;
  if (Value dynamic = op.getDynamicValue()) {
    FailureOr<Value> reg = l.scalar(op.getLoc(), dynamic, op);
    if (failed(reg))
      return failure();
    valueReg = *reg;
  }
  OpBuilder &b = l.builder();
  auto instr = nova_isa::VFillOp::create(
      b, op.getLoc(), op.getValueAttr(),
      out->addr, out->tile, valueReg, engine(l, Engine::Vector), nullptr,
      nullptr);
  l.instruction(instr, {write(*out)});
  return success();
}

static LogicalResult lowerIota(nova::IotaOp op, FuncLowering &l) {
  FailureOr<TileOperand> out = l.tile(op.getOutput(), op);
  if (failed(out))
    return failure();
  OpBuilder &b = l.builder();
  auto instr = nova_isa::VIotaOp::create(
      b, op.getLoc(), out->addr, out->tile, b.getI64IntegerAttr(op.getDim()),
      engine(l, Engine::Vector), nullptr, nullptr);
  l.instruction(instr, {write(*out)});
  return success();
}

static LogicalResult lowerAssert(nova::AssertOp op, FuncLowering &l) {
  FailureOr<TileOperand> cond = l.tile(op.getCondition(), op);
  if (failed(cond))
    return failure();
  OpBuilder &b = l.builder();
  auto instr = nova_isa::VAssertOp::create(
      b, op.getLoc(), cond->addr, cond->tile, op.getMessageAttr(),
      engine(l, Engine::Vector), nullptr, nullptr);
  l.instruction(instr, {read(*cond)});
  return success();
}

void mlir::nova::isa_lowering::populateComputePatterns(
    NovaToNovaISAPatterns &patterns) {
  patterns.add<nova::MatmulOp>(lowerMatmul);
  patterns.add<nova::ElementwiseOp>(lowerElementwise);
  patterns.add<nova::ElementwisePairOp>(lowerElementwisePair);
  patterns.add<nova::ReduceOp>(lowerReduce);
  patterns.add<nova::TransposeOp>(lowerTranspose);
  patterns.add<nova::FillOp>(lowerFill);
  patterns.add<nova::IotaOp>(lowerIota);
  patterns.add<nova::AssertOp>(lowerAssert);
}
