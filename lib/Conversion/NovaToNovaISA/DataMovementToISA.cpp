//===- DataMovementToISA.cpp - DMA, waits and collectives ----------------===//
//
// nova.dma_start (and memref.copy) -> dma_copy on a DMA queue; collectives
// -> the collective instructions. Tokens of local DMAs and collectives need
// no instruction: the synchronisation step orders every later access of
// their buffers. A nova.wait of a peer DMA or a barrier, whose effect is on
// another chip, blocks the sequencer (sem_wait).
//
//===----------------------------------------------------------------------===//
#include "FuncLowering.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::isa_lowering;
using nova_isa::Engine;

static nova_isa::EngineAttr engine(FuncLowering &l, Engine e) {
  return nova_isa::EngineAttr::get(l.builder().getContext(), e);
}

/// A DMA writing hbm is a store for the loop queue policy.
static bool isHbm(const ByteRange &range) {
  return range.space == MemorySpace::HBM;
}

static Operation *dmaCopy(Operation *op, Value source, Value target,
                          std::optional<int64_t> peer, FuncLowering &l) {
  FailureOr<TileOperand> src = l.tile(source, op, /*collapseWith=*/{target});
  if (failed(src))
    return nullptr;
  FailureOr<TileOperand> dst = l.tile(target, op, /*collapseWith=*/{source});
  if (failed(dst))
    return nullptr;
  OpBuilder &b = l.builder();
  Value peerReg = peer ? l.li(op->getLoc(), *peer) : Value();
  auto dma = nova_isa::DmaCopyOp::create(
      b, op->getLoc(), src->addr, src->tile, dst->addr, dst->tile,
      b.getI64IntegerAttr(l.nextDmaQueue(isHbm(dst->range))), peerReg, engine(l, Engine::DMA),
      nullptr, nullptr);
  SmallVector<Access> acc = {Access{src->range, false}};
  // A peer DMA writes another chip's HBM: nothing local to order.
  if (!peer)
    acc.push_back(Access{dst->range, true});
  l.instruction(dma, acc);
  return dma;
}

static LogicalResult lowerDmaStart(nova::DmaStartOp op, FuncLowering &l) {
  Operation *dma = dmaCopy(op, op.getSource(), op.getTarget(), op.getPeer(), l);
  if (!dma)
    return failure();
  l.setToken(op.getToken(), dma, /*strict=*/op.getPeer().has_value());
  return success();
}

static LogicalResult lowerGather(nova::GatherOp op, FuncLowering &l) {
  FailureOr<TileOperand> src = l.tile(op.getSource(), op);
  if (failed(src))
    return failure();
  FailureOr<TileOperand> idx = l.tile(op.getIndices(), op);
  if (failed(idx))
    return failure();
  FailureOr<TileOperand> dst = l.tile(op.getTarget(), op);
  if (failed(dst))
    return failure();
  OpBuilder &b = l.builder();
  auto dma = nova_isa::DmaGatherOp::create(
      b, op.getLoc(), src->addr, src->tile, idx->addr, idx->tile, dst->addr,
      dst->tile, b.getI64IntegerAttr(l.nextDmaQueue(isHbm(dst->range))),
      engine(l, Engine::DMA),
      nullptr, nullptr);
  l.instruction(dma, {Access{src->range, false}, Access{idx->range, false},
                      Access{dst->range, true}});
  l.setToken(op.getToken(), dma, /*strict=*/false);
  return success();
}

static LogicalResult lowerScatter(nova::ScatterOp op, FuncLowering &l) {
  FailureOr<TileOperand> src = l.tile(op.getSource(), op);
  if (failed(src))
    return failure();
  FailureOr<TileOperand> idx = l.tile(op.getIndices(), op);
  if (failed(idx))
    return failure();
  FailureOr<TileOperand> dst = l.tile(op.getTarget(), op);
  if (failed(dst))
    return failure();
  OpBuilder &b = l.builder();
  auto dma = nova_isa::DmaScatterOp::create(
      b, op.getLoc(), src->addr, src->tile, idx->addr, idx->tile, dst->addr,
      dst->tile, b.getI64IntegerAttr(l.nextDmaQueue(isHbm(dst->range))),
      b.getUnitAttr(),
      engine(l, Engine::DMA), nullptr, nullptr);
  // A write orders the read-modify-write after every earlier access.
  l.instruction(dma, {Access{src->range, false}, Access{idx->range, false},
                      Access{dst->range, true}});
  l.setToken(op.getToken(), dma, /*strict=*/false);
  return success();
}

static LogicalResult lowerCopy(memref::CopyOp op, FuncLowering &l) {
  auto srcSpace = getMemorySpace(cast<MemRefType>(op.getSource().getType()));
  auto dstSpace = getMemorySpace(cast<MemRefType>(op.getTarget().getType()));
  if (srcSpace == MemorySpace::ACC || dstSpace == MemorySpace::ACC) {
    FailureOr<TileOperand> src = l.tile(op.getSource(), op);
    if (failed(src))
      return failure();
    FailureOr<TileOperand> dst = l.tile(op.getTarget(), op);
    if (failed(dst))
      return failure();
    auto copy = nova_isa::VCopyOp::create(
        l.builder(), op.getLoc(), src->addr, src->tile, dst->addr, dst->tile,
        engine(l, Engine::Vector), nullptr, nullptr);
    l.instruction(copy, {Access{src->range, false}, Access{dst->range, true}});
    return success();
  }
  return success(dmaCopy(op, op.getSource(), op.getTarget(), std::nullopt, l) !=
                 nullptr);
}

static LogicalResult lowerWait(nova::WaitOp op, FuncLowering &l) {
  for (Value token : op.getTokens())
    if (failed(l.waitToken(token, op)))
      return failure();
  return success();
}

/// Lowers a collective with one input and one output.
template <typename OpTy, typename BuildFn>
static LogicalResult lowerInOut(OpTy op, FuncLowering &l, BuildFn build) {
  FailureOr<TileOperand> in = l.tile(op.getInput(), op);
  if (failed(in))
    return failure();
  FailureOr<TileOperand> out = l.tile(op.getOutput(), op);
  if (failed(out))
    return failure();
  Operation *instr = build(*in, *out);
  l.instruction(instr, {Access{in->range, false}, Access{out->range, true}});
  l.setToken(op.getToken(), instr, /*strict=*/false);
  return success();
}

static LogicalResult checkChannel(Operation *op, int64_t channel) {
  if (channel > 255)
    return op->emitOpError() << "channel " << channel
                             << " does not fit the ISA's 0..255";
  return success();
}

void mlir::nova::isa_lowering::populateDataMovementPatterns(
    NovaToNovaISAPatterns &patterns) {
  patterns.add<nova::DmaStartOp>(lowerDmaStart);
  patterns.add<nova::GatherOp>(lowerGather);
  patterns.add<nova::ScatterOp>(lowerScatter);
  patterns.add<memref::CopyOp>(lowerCopy);
  patterns.add<nova::WaitOp>(lowerWait);

  patterns.add<nova::AllReduceOp>([](nova::AllReduceOp op, FuncLowering &l) {
    return lowerInOut(op, l, [&](TileOperand &in, TileOperand &out) {
      OpBuilder &b = l.builder();
      return nova_isa::AllReduceOp::create(
                 b, op.getLoc(), op.getKindAttr(), in.addr, in.tile, out.addr,
                 out.tile, op.getGroups(), engine(l, Engine::Collective),
                 nullptr, nullptr)
          .getOperation();
    });
  });
  patterns.add<nova::AllGatherOp>([](nova::AllGatherOp op, FuncLowering &l) {
    return lowerInOut(op, l, [&](TileOperand &in, TileOperand &out) {
      OpBuilder &b = l.builder();
      return nova_isa::AllGatherOp::create(
                 b, op.getLoc(), in.addr, in.tile, out.addr, out.tile,
                 op.getDimAttr(), op.getGroups(), engine(l, Engine::Collective),
                 nullptr, nullptr)
          .getOperation();
    });
  });
  patterns.add<nova::ReduceScatterOp>([](nova::ReduceScatterOp op,
                                         FuncLowering &l) {
    return lowerInOut(op, l, [&](TileOperand &in, TileOperand &out) {
      OpBuilder &b = l.builder();
      return nova_isa::ReduceScatterOp::create(
                 b, op.getLoc(), op.getKindAttr(), in.addr, in.tile, out.addr,
                 out.tile, op.getDimAttr(), op.getGroups(),
                 engine(l, Engine::Collective), nullptr, nullptr)
          .getOperation();
    });
  });
  patterns.add<nova::AllToAllOp>([](nova::AllToAllOp op, FuncLowering &l) {
    return lowerInOut(op, l, [&](TileOperand &in, TileOperand &out) {
      OpBuilder &b = l.builder();
      return nova_isa::AllToAllOp::create(
                 b, op.getLoc(), in.addr, in.tile, out.addr, out.tile,
                 op.getSplitDimAttr(), op.getConcatDimAttr(), op.getGroups(),
                 engine(l, Engine::Collective), nullptr, nullptr)
          .getOperation();
    });
  });
  patterns.add<nova::SendOp>([](nova::SendOp op, FuncLowering &l) -> LogicalResult {
    if (failed(checkChannel(op, op.getChannel())))
      return failure();
    FailureOr<TileOperand> in = l.tile(op.getInput(), op);
    if (failed(in))
      return failure();
    OpBuilder &b = l.builder();
    auto instr = nova_isa::SendOp::create(
        b, op.getLoc(), in->addr, in->tile, l.li(op.getLoc(), op.getPeer()),
        op.getChannelAttr(), engine(l, Engine::Collective), nullptr, nullptr);
    l.instruction(instr, {Access{in->range, false}});
    l.setToken(op.getToken(), instr, /*strict=*/false);
    return success();
  });
  patterns.add<nova::RecvOp>([](nova::RecvOp op, FuncLowering &l) -> LogicalResult {
    if (failed(checkChannel(op, op.getChannel())))
      return failure();
    FailureOr<TileOperand> out = l.tile(op.getOutput(), op);
    if (failed(out))
      return failure();
    OpBuilder &b = l.builder();
    auto instr = nova_isa::RecvOp::create(
        b, op.getLoc(), out->addr, out->tile, l.li(op.getLoc(), op.getPeer()),
        op.getChannelAttr(), engine(l, Engine::Collective), nullptr, nullptr);
    l.instruction(instr, {Access{out->range, true}});
    l.setToken(op.getToken(), instr, /*strict=*/false);
    return success();
  });
  patterns.add<nova::BarrierOp>([](nova::BarrierOp op, FuncLowering &l) {
    auto instr = nova_isa::BarrierOp::create(
        l.builder(), op.getLoc(), op.getGroups(),
        engine(l, Engine::Collective), nullptr, nullptr);
    l.instruction(instr, {});
    l.setToken(op.getToken(), instr, /*strict=*/true);
    return success();
  });
}
