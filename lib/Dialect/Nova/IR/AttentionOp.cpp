//===- AttentionOp.cpp - nova.attention verifier, bufferization -*- C++ -*-===//
//
// nova.attention is destination style on tensors and on buffers, like a
// linalg op: one-shot bufferization writes its result into `out`'s buffer.
//
//===----------------------------------------------------------------------===//
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::nova;

LogicalResult AttentionOp::verify() {
  auto shape = [](Value v) { return cast<ShapedType>(v.getType()).getShape(); };
  bool tensors = isa<RankedTensorType>(getOut().getType());
  size_t rank = shape(getQuery()).size();
  for (Value v : {getQuery(), getKeys(), getValue(), getOut()}) {
    if (isa<RankedTensorType>(v.getType()) != tensors)
      return emitOpError("operands must be all tensors or all buffers");
    if (shape(v).size() != 3 && shape(v).size() != 4)
      return emitOpError("operands must have rank 3 ([batch, rows, columns]) or "
                         "4 ([batch, rows, heads, columns]), got ")
             << v.getType();
    if (shape(v).size() != rank)
      return emitOpError("operands must all have the same rank");
  }
  Type element = cast<ShapedType>(getQuery().getType()).getElementType();
  for (Value v : {getKeys(), getValue()})
    if (cast<ShapedType>(v.getType()).getElementType() != element)
      return emitOpError("query, keys and value must have one element type");
  if (tensors != (getNumResults() == 1))
    return emitOpError(tensors ? "on tensors returns the updated out"
                               : "on buffers has no result");
  if (tensors && getResult().front().getType() != getOut().getType())
    return emitOpError("result type must be out's type");
  // Rank 4 is the sequence-major layout [B, T, H, D] (the heads interleaved
  // in each row, as a projection writes them): checked as [B * H, T, D].
  auto flat = [&](Value v) -> SmallVector<int64_t> {
    ArrayRef<int64_t> s = shape(v);
    if (s.size() == 3)
      return {s[0], s[1], s[2]};
    return {s[0] * s[2], s[1], s[3]};
  };
  if (rank == 4) {
    if (!getKeyRows())
      return emitOpError("rank-4 operands need key_rows (keys as [batch, keys, heads, D])");
    int64_t heads = shape(getQuery())[2];
    for (Value v : {getKeys(), getValue(), getOut()})
      if (shape(v)[0] != shape(getQuery())[0] || shape(v)[2] != heads)
        return emitOpError("batch and head sizes must match, got ")
               << getQuery().getType() << " and " << v.getType();
  }
  SmallVector<int64_t> q = flat(getQuery()), k = flat(getKeys()),
                       v = flat(getValue()), o = flat(getOut());
  // Keys as [batch, D, Tk], or [batch, Tk, D] with key_rows.
  SmallVector<int64_t> kt = {k[0], k[1], k[2]};
  if (getKeyRows())
    std::swap(kt[1], kt[2]);
  int64_t batch = q[0], tq = q[1], d = q[2], tk = kt[2], dv = v[2];
  if (kt[0] != batch || v[0] != batch || o[0] != batch)
    return emitOpError("batch sizes must match, got ")
           << batch << ", " << kt[0] << ", " << v[0] << ", " << o[0];
  if (kt[1] != d)
    return emitOpError("keys must be ")
           << (getKeyRows() ? "[batch, keys, " : "[batch, ") << d
           << (getKeyRows() ? "]" : ", keys]") << ", got " << getKeys().getType();
  if (v[1] != tk)
    return emitOpError("value must have ") << tk << " rows (one per key), got "
                                           << v[1];
  if (o[1] != tq || o[2] != dv)
    return emitOpError("out must be [batch, ")
           << tq << ", " << dv << "], got " << getOut().getType();
  if (getCausal() && tq != tk)
    return emitOpError("causal attention needs as many queries as keys, got ")
           << tq << " and " << tk;
  return success();
}

bool AttentionOp::bufferizesToMemoryRead(OpOperand &operand,
                                         const bufferization::AnalysisState &) {
  return &operand != &getOutMutable();
}

bool AttentionOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return &operand == &getOutMutable();
}

bufferization::AliasingValueList
AttentionOp::getAliasingValues(OpOperand &operand,
                               const bufferization::AnalysisState &) {
  if (&operand != &getOutMutable())
    return {};
  return {{getResult().front(), bufferization::BufferRelation::Equivalent}};
}

LogicalResult
AttentionOp::bufferize(RewriterBase &rewriter,
                       const bufferization::BufferizationOptions &options,
                       bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value v : {getQuery(), getKeys(), getValue(), getOut()}) {
    FailureOr<Value> buffer = bufferization::getBuffer(rewriter, v, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  rewriter.setInsertionPoint(*this);
  AttentionOp::create(rewriter, getLoc(), TypeRange{}, buffers[0], buffers[1],
                      buffers[2], buffers[3], getScaleAttr(), getKeyRowsAttr(),
                      getCausalAttr());
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, buffers[3]);
  return success();
}
