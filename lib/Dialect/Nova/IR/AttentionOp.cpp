//===- AttentionOp.cpp - fused attention verifiers, bufferization -*- C++ -*-===//
//
// nova.attention, nova.attention_lse and nova.attention_backward are
// destination style on tensors and on buffers, like linalg ops: one-shot
// bufferization writes their results into their destinations' buffers.
//
//===----------------------------------------------------------------------===//
#include "nova/Dialect/Nova/IR/NovaAttentionTrainOps.h"
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace mlir::nova;

/// The rules nova.attention and nova.attention_lse share: the operands'
/// kinds, ranks, element types and shapes.
static LogicalResult verifyAttention(Operation *op, Value query, Value keys,
                                     Value value, Value out, bool keyRows,
                                     bool causal) {
  auto emitOpError = [&](const Twine &message) { return op->emitOpError(message); };
  auto getQuery = [&] { return query; };
  auto getKeys = [&] { return keys; };
  auto getValue = [&] { return value; };
  auto getOut = [&] { return out; };
  auto getKeyRows = [&] { return keyRows; };
  auto getCausal = [&] { return causal; };
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

/// A dropout mask `keep` (with `keepScale`), if any: [batch, Tq, Tk] i1 in
/// the same kind (tensor or buffer) as `like`.
static LogicalResult verifyKeep(Operation *op, Value keep,
                                std::optional<APFloat> keepScale,
                                ArrayRef<int64_t> want, Value like) {
  if (!keep != !keepScale)
    return op->emitOpError("keep and keep_scale go together");
  if (!keep)
    return success();
  if (isa<RankedTensorType>(keep.getType()) != isa<RankedTensorType>(like.getType()))
    return op->emitOpError("operands must be all tensors or all buffers");
  if (cast<ShapedType>(keep.getType()).getShape() != want) {
    InFlightDiagnostic diag = op->emitOpError("keep must be [");
    llvm::interleaveComma(want, diag);
    return diag << "], got " << keep.getType();
  }
  double s = keepScale->convertToDouble();
  if (!(s >= 1.0) || !std::isfinite(s))
    return op->emitOpError("keep_scale must be finite and at least 1, got ") << s;
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttention(*this, getQuery(), getKeys(), getValue(), getOut(),
                             getKeyRows(), getCausal())))
    return failure();
  bool tensors = isa<RankedTensorType>(getOut().getType());
  if (tensors != (getNumResults() == 1))
    return emitOpError(tensors ? "on tensors returns the updated out"
                               : "on buffers has no result");
  if (tensors && getResult().front().getType() != getOut().getType())
    return emitOpError("result type must be out's type");
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

//===----------------------------------------------------------------------===//
// nova.attention_lse
//===----------------------------------------------------------------------===//

LogicalResult AttentionLseOp::verify() {
  if (failed(verifyAttention(*this, getQuery(), getKeys(), getValue(), getOut(),
                             getKeyRows(), getCausal())))
    return failure();
  bool tensors = isa<RankedTensorType>(getOut().getType());
  if (isa<RankedTensorType>(getLse().getType()) != tensors)
    return emitOpError("operands must be all tensors or all buffers");
  if (tensors != (getNumResults() == 2))
    return emitOpError(tensors ? "on tensors returns the updated out and lse"
                               : "on buffers has no result");
  if (tensors && (getResult()[0].getType() != getOut().getType() ||
                  getResult()[1].getType() != getLse().getType()))
    return emitOpError("result types must be out's and lse's types");
  // [B * H, Tq]: the batches as the rank-3 form numbers them.
  ArrayRef<int64_t> q = cast<ShapedType>(getQuery().getType()).getShape();
  SmallVector<int64_t> want = {q.size() == 4 ? q[0] * q[2] : q[0], q[1]};
  if (cast<ShapedType>(getLse().getType()).getShape() != ArrayRef<int64_t>(want))
    return emitOpError("lse must be [") << want[0] << ", " << want[1]
                                        << "], got " << getLse().getType();
  ArrayRef<int64_t> k = cast<ShapedType>(getKeys().getType()).getShape();
  int64_t tk = q.size() == 4 || getKeyRows() ? k[1] : k[2];
  return verifyKeep(*this, getKeep(), getKeepScale(), {want[0], want[1], tk}, getOut());
}

// The keep mask comes after the inits: it is read, never written, and a
// missed read lets bufferization reuse its buffer while a backward still
// needs it.
bool AttentionLseOp::bufferizesToMemoryRead(OpOperand &operand,
                                            const bufferization::AnalysisState &) {
  return !isDpsInit(&operand);
}

bool AttentionLseOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
AttentionLseOp::getAliasingValues(OpOperand &operand,
                                  const bufferization::AnalysisState &) {
  unsigned n = operand.getOperandNumber();
  if (n < 3 || n > 4)
    return {};
  return {{getResult()[n - 3], bufferization::BufferRelation::Equivalent}};
}

LogicalResult
AttentionLseOp::bufferize(RewriterBase &rewriter,
                          const bufferization::BufferizationOptions &options,
                          bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value v : getOperands()) {
    FailureOr<Value> buffer = bufferization::getBuffer(rewriter, v, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  rewriter.setInsertionPoint(*this);
  AttentionLseOp::create(rewriter, getLoc(), TypeRange{}, buffers[0], buffers[1],
                         buffers[2], buffers[3], buffers[4], getScaleAttr(),
                         getKeyRowsAttr(), getCausalAttr(), getKeepScaleAttr(),
                         getKeep() ? buffers[5] : Value());
  bufferization::replaceOpWithBufferizedValues(
      rewriter, *this, ArrayRef<Value>(buffers).slice(3, 2));
  return success();
}

//===----------------------------------------------------------------------===//
// nova.attention_backward
//===----------------------------------------------------------------------===//

LogicalResult AttentionBackwardOp::verify() {
  auto shape = [](Value v) { return cast<ShapedType>(v.getType()).getShape(); };
  auto element = [](Value v) { return cast<ShapedType>(v.getType()).getElementType(); };
  bool tensors = isa<RankedTensorType>(getGradQuery().getType());
  for (Value v : getOperands())
    if (isa<RankedTensorType>(v.getType()) != tensors)
      return emitOpError("operands must be all tensors or all buffers");
  if (tensors != (getNumResults() == 3))
    return emitOpError(tensors ? "on tensors returns the three gradients"
                               : "on buffers has no result");
  if (tensors)
    for (auto [result, init] : llvm::zip(getResult(), getDpsInits()))
      if (result.getType() != init.getType())
        return emitOpError("result types must be the gradients' types");
  for (Value v : {getQuery(), getKeys(), getValue(), getOut(), getGradOut(),
                  getGradQuery(), getGradKeys(), getGradValue()})
    if (shape(v).size() != 3)
      return emitOpError("operands must have rank 3 ([batch, rows, columns]), got ")
             << v.getType();
  if (shape(getLse()).size() != 2)
    return emitOpError("lse must have rank 2 ([batch, queries]), got ")
           << getLse().getType();
  Type type = element(getQuery());
  for (Value v : {getKeys(), getValue()})
    if (element(v) != type)
      return emitOpError("query, keys and value must have one element type");
  for (Value v : {getOut(), getGradOut()})
    if (element(v) != type && !element(v).isF32())
      return emitOpError("out and grad_out must be f32 or the query's type");
  ArrayRef<int64_t> q = shape(getQuery()), k = shape(getKeys()),
                    v = shape(getValue());
  int64_t batch = q[0], tq = q[1], d = q[2], tk = k[1], dv = v[2];
  auto expect = [&](Value x, ArrayRef<int64_t> want,
                    StringRef name) -> LogicalResult {
    if (shape(x) == want)
      return success();
    InFlightDiagnostic diag = emitOpError() << name << " must be [";
    llvm::interleaveComma(want, diag);
    return diag << "], got " << x.getType();
  };
  if (failed(expect(getKeys(), {batch, tk, d}, "keys")) ||
      failed(expect(getValue(), {batch, tk, dv}, "value")) ||
      failed(expect(getOut(), {batch, tq, dv}, "out")) ||
      failed(expect(getGradOut(), {batch, tq, dv}, "grad_out")) ||
      failed(expect(getLse(), {batch, tq}, "lse")) ||
      failed(expect(getGradQuery(), {batch, tq, d}, "grad_query")) ||
      failed(expect(getGradKeys(), {batch, tk, d}, "grad_keys")) ||
      failed(expect(getGradValue(), {batch, tk, dv}, "grad_value")))
    return failure();
  if (getCausal() && tq != tk)
    return emitOpError("causal attention needs as many queries as keys, got ")
           << tq << " and " << tk;
  return success();
}

bool AttentionBackwardOp::bufferizesToMemoryRead(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return !isDpsInit(&operand);
}

bool AttentionBackwardOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
AttentionBackwardOp::getAliasingValues(OpOperand &operand,
                                       const bufferization::AnalysisState &) {
  unsigned n = operand.getOperandNumber();
  if (n < 6 || n > 8)
    return {};
  return {{getResult()[n - 6], bufferization::BufferRelation::Equivalent}};
}

LogicalResult AttentionBackwardOp::bufferize(
    RewriterBase &rewriter, const bufferization::BufferizationOptions &options,
    bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value v : getOperands()) {
    FailureOr<Value> buffer = bufferization::getBuffer(rewriter, v, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  rewriter.setInsertionPoint(*this);
  AttentionBackwardOp::create(rewriter, getLoc(), TypeRange{}, buffers[0],
                              buffers[1], buffers[2], buffers[3], buffers[4],
                              buffers[5], buffers[6], buffers[7], buffers[8],
                              getScaleAttr(), getCausalAttr(), getKeepScaleAttr(),
                              getKeep() ? buffers[9] : Value());
  bufferization::replaceOpWithBufferizedValues(
      rewriter, *this, ArrayRef<Value>(buffers).slice(6, 3));
  return success();
}

#define GET_OP_CLASSES
#include "nova/Dialect/Nova/IR/NovaAttentionTrainOps.cpp.inc"
