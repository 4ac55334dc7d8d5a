//===- ScatterAddOp.cpp - nova.scatter_add verifier, bufferization -*- C++ -*-===//
//
// nova.scatter_add is destination style on tensors and on buffers, like the
// fused attention ops: one-shot bufferization updates its destination's
// buffer in place (or a copy of it, when the base is still read later).
//
//===----------------------------------------------------------------------===//
#include "nova/Dialect/Nova/IR/NovaOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::nova;

LogicalResult ScatterAddOp::verify() {
  auto values = cast<ShapedType>(getValues().getType());
  auto positions = cast<ShapedType>(getPositions().getType());
  auto out = cast<ShapedType>(getOut().getType());
  bool tensors = isa<RankedTensorType>(out);
  if (isa<RankedTensorType>(values) != tensors ||
      isa<RankedTensorType>(positions) != tensors)
    return emitOpError("operands must be all tensors or all buffers");
  if (values.getRank() != 2)
    return emitOpError() << "values must have rank 2 (rows of a table), got "
                         << values;
  if (values.getShape() != positions.getShape())
    return emitOpError() << "positions must have the values' shape, got "
                         << positions << " for " << values;
  if (values.getElementType() != out.getElementType())
    return emitOpError() << "values and out must have one element type, got "
                         << values.getElementType() << " and "
                         << out.getElementType();
  if (getResult().size() != (tensors ? 1u : 0u))
    return emitOpError(tensors ? "on tensors returns the updated out"
                               : "on buffers has no result");
  if (tensors && getResult().front().getType() != getOut().getType())
    return emitOpError("result type must be out's type");
  return success();
}

bool ScatterAddOp::bufferizesToMemoryRead(OpOperand &,
                                          const bufferization::AnalysisState &) {
  // `out` too: the rows are added to its contents.
  return true;
}

bool ScatterAddOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return &operand == &getOutMutable();
}

bufferization::AliasingValueList
ScatterAddOp::getAliasingValues(OpOperand &operand,
                                const bufferization::AnalysisState &) {
  if (&operand != &getOutMutable())
    return {};
  return {{getResult().front(), bufferization::BufferRelation::Equivalent}};
}

LogicalResult
ScatterAddOp::bufferize(RewriterBase &rewriter,
                        const bufferization::BufferizationOptions &options,
                        bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value v : {Value(getValues()), Value(getPositions()), Value(getOut())}) {
    FailureOr<Value> buffer = bufferization::getBuffer(rewriter, v, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  rewriter.setInsertionPoint(*this);
  ScatterAddOp::create(rewriter, getLoc(), TypeRange{}, buffers[0], buffers[1],
                       buffers[2]);
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, buffers[2]);
  return success();
}
