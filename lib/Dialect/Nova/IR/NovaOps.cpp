//===- NovaOps.cpp - nova dialect operations and verifiers ------*- C++ -*-===//
#include "nova/Dialect/Nova/IR/NovaOps.h"
#include "nova/Dialect/Nova/IR/Immediates.h"
#include "nova/Dialect/Nova/IR/ReplicaGroups.h"
#include "nova/Dialect/Nova/IR/VectorPairs.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::nova;

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

/// Formats a static shape as `4x8`.
static std::string shapeStr(ArrayRef<int64_t> dims) {
  if (dims.empty())
    return "scalar";
  std::string result;
  llvm::raw_string_ostream os(result);
  llvm::interleave(dims, os, "x");
  return result;
}

static std::string shapeOf(Value v) {
  return shapeStr(cast<MemRefType>(v.getType()).getShape());
}

static StringRef spaceName(std::optional<MemorySpace> space) {
  return space ? stringifyMemorySpace(*space) : StringRef("no nova memory space");
}

/// Checks that `value` lives in one of `allowed`; `role` names it in the
/// message ("lhs must live in sram, got hbm").
static LogicalResult checkSpace(Operation *op, StringRef role, Value value,
                                ArrayRef<MemorySpace> allowed) {
  auto space = getMemorySpace(cast<MemRefType>(value.getType()));
  if (space && llvm::is_contained(allowed, *space))
    return success();
  auto diag = op->emitOpError() << role << " must live in ";
  llvm::interleave(
      allowed, [&](MemorySpace s) { diag << stringifyMemorySpace(s); },
      [&] { diag << " or "; });
  return diag << ", got " << spaceName(space);
}

static Type elementTypeOf(Value v) {
  return cast<MemRefType>(v.getType()).getElementType();
}

static LogicalResult checkSameElementType(Operation *op, Value a, StringRef aRole,
                                          Value b, StringRef bRole) {
  if (elementTypeOf(a) == elementTypeOf(b))
    return success();
  return op->emitOpError() << aRole << " and " << bRole
                           << " element types must match, got "
                           << elementTypeOf(a) << " and " << elementTypeOf(b);
}

static LogicalResult checkShape(Operation *op, StringRef role, Value v,
                                ArrayRef<int64_t> expected) {
  if (cast<MemRefType>(v.getType()).getShape() == expected)
    return success();
  return op->emitOpError() << role << " shape must be " << shapeStr(expected)
                           << ", got " << shapeOf(v);
}

static LogicalResult checkDim(Operation *op, StringRef role, int64_t dim,
                              Value v) {
  int64_t rank = cast<MemRefType>(v.getType()).getRank();
  if (dim < rank)
    return success();
  return op->emitOpError() << role << " " << dim
                           << " is out of range for rank " << rank;
}

/// Checks the chips named by a peer attribute against the target.
static LogicalResult checkPeer(Operation *op, int64_t peer) {
  TargetAttr target = lookupTarget(op);
  if (!target || peer < target.getChips())
    return success();
  return op->emitOpError() << "peer chip " << peer
                           << " is out of range for a target with "
                           << target.getChips() << " chips";
}

static constexpr MemorySpace kHbmOrSram[] = {MemorySpace::HBM,
                                             MemorySpace::SRAM};
static constexpr MemorySpace kSram[] = {MemorySpace::SRAM};
static constexpr MemorySpace kSramOrAcc[] = {MemorySpace::SRAM,
                                             MemorySpace::ACC};

/// Shared rules of the collectives that move `input` to `output`.
static FailureOr<int64_t> verifyCollective(Operation *op, Value input,
                                           Value output, ArrayAttr groups) {
  if (failed(checkSpace(op, "input", input, kHbmOrSram)) ||
      failed(checkSpace(op, "output", output, kHbmOrSram)) ||
      failed(checkSameElementType(op, input, "input", output, "output")))
    return failure();
  return verifyReplicaGroups(op, groups);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult DmaStartOp::verify() {
  Operation *op = getOperation();
  if (failed(checkSpace(op, "source", getSource(), kHbmOrSram)) ||
      failed(checkSpace(op, "target", getTarget(), kHbmOrSram)) ||
      failed(checkSameElementType(op, getSource(), "source", getTarget(),
                                  "target")))
    return failure();
  if (getSource().getType().getShape() != getTarget().getType().getShape())
    return emitOpError() << "source and target shapes must match, got "
                         << shapeOf(getSource()) << " and "
                         << shapeOf(getTarget());
  if (std::optional<int64_t> peer = getPeer()) {
    if (getMemorySpace(getTarget().getType()) != MemorySpace::HBM)
      return emitOpError() << "a dma to a peer chip must write to hbm, got "
                           << spaceName(getMemorySpace(getTarget().getType()));
    return checkPeer(op, *peer);
  }
  return success();
}

LogicalResult WaitOp::verify() {
  if (getTokens().empty())
    return emitOpError() << "needs at least one token";
  return success();
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  Operation *op = getOperation();
  auto lhsType = getLhs().getType(), rhsType = getRhs().getType(),
       accType = getAcc().getType();
  for (auto [role, type] : {std::pair<StringRef, MemRefType>{"lhs", lhsType},
                            {"rhs", rhsType}, {"acc", accType}})
    if (type.getRank() != 2)
      return emitOpError() << role << " must be 2-D, got rank "
                           << type.getRank();
  int64_t m = lhsType.getDimSize(0), k = lhsType.getDimSize(1),
          n = rhsType.getDimSize(1);
  if (rhsType.getDimSize(0) != k)
    return emitOpError() << "lhs columns (" << k << ") must equal rhs rows ("
                         << rhsType.getDimSize(0) << ")";
  if (failed(checkShape(op, "acc", getAcc(), {m, n})) ||
      failed(checkSameElementType(op, getLhs(), "lhs", getRhs(), "rhs")))
    return failure();
  if (!accType.getElementType().isF32())
    return emitOpError() << "acc element type must be f32, got "
                         << accType.getElementType();
  if (failed(checkSpace(op, "lhs", getLhs(), kSram)) ||
      failed(checkSpace(op, "rhs", getRhs(), kSram)) ||
      failed(checkSpace(op, "acc", getAcc(), {MemorySpace::ACC})))
    return failure();
  TargetAttr target = lookupTarget(op);
  if (!target)
    return success();
  if (k > target.getMatrixRows())
    return emitOpError() << "contraction size " << k
                         << " exceeds the matrix unit's "
                         << target.getMatrixRows() << " rows";
  if (n > target.getMatrixCols())
    return emitOpError() << "output width " << n
                         << " exceeds the matrix unit's "
                         << target.getMatrixCols() << " columns";
  int64_t accBytes = m * n * 4;
  if (accBytes > target.getAccBytes())
    return emitOpError() << "accumulator tile of " << accBytes
                         << " bytes exceeds the target's "
                         << target.getAccBytes() << "-byte accumulator";
  return success();
}

/// The element types each kind accepts (docs/isa.md 2.6).
static LogicalResult checkKindTypes(Operation *op, ElementwiseKind kind,
                                    Value output, ValueRange inputs) {
  using K = ElementwiseKind;
  // The operand type that decides: a comparison's or select's data inputs.
  Type t = elementTypeOf(output);
  if (!inputs.empty() && (kind >= K::CmpEq && kind <= K::CmpGe))
    t = elementTypeOf(inputs[0]);
  if (kind == K::Select && inputs.size() == 3)
    t = elementTypeOf(inputs[1]);
  if (kind == K::Copy)
    return success();
  bool isFloat = isa<FloatType>(t);
  bool isBool = t.isInteger(1);
  switch (kind) {
  case K::Exp: case K::Log: case K::Sqrt: case K::Rsqrt: case K::Recip:
  case K::Tanh: case K::Erf: case K::Sigmoid: case K::Relu: case K::Floor:
  case K::Ceil: case K::Round: case K::Trunc: case K::Sin: case K::Cos:
  case K::Log1p: case K::Pow:
    if (!isFloat)
      return op->emitOpError() << "'" << stringifyElementwiseKind(kind)
                               << "' needs float operands, got " << t;
    return success();
  case K::Not: case K::And: case K::Or: case K::Xor: case K::Shl: case K::Shr:
  case K::ShrU:
    if (isFloat)
      return op->emitOpError() << "'" << stringifyElementwiseKind(kind)
                               << "' needs integer or i1 operands, got " << t;
    if (isBool && (kind == K::Shl || kind == K::Shr || kind == K::ShrU))
      return op->emitOpError() << "'" << stringifyElementwiseKind(kind)
                               << "' needs integer operands, got i1";
    return success();
  // Bools order unsigned (false < true), as the unit holds them as 0/1.
  case K::Max: case K::Min: case K::CmpEq: case K::CmpNe: case K::CmpLt:
  case K::CmpLe: case K::CmpGt: case K::CmpGe: case K::Select:
    return success();
  default:
    if (isBool)
      return op->emitOpError() << "'" << stringifyElementwiseKind(kind)
                               << "' does not take i1 operands";
    return success();
  }
}

unsigned ElementwiseOp::getArity(ElementwiseKind kind) {
  auto code = static_cast<uint32_t>(kind);
  if (code < 32)
    return 1;
  if (code < 64)
    return 2;
  return 3;
}

/// Checks that elementwise input `index` of `inType` broadcasts to `outType`
/// (same rank, each size equal or 1).
static LogicalResult checkInputBroadcasts(Operation *op, size_t index,
                                          MemRefType inType,
                                          MemRefType outType) {
  if (inType.getRank() != outType.getRank())
    return op->emitOpError() << "input " << index << " has rank "
                             << inType.getRank()
                             << " but the output has rank "
                             << outType.getRank();
  for (auto [inDim, outDim] :
       llvm::zip_equal(inType.getShape(), outType.getShape()))
    if (inDim != outDim && inDim != 1)
      return op->emitOpError() << "input " << index << " of shape "
                               << shapeStr(inType.getShape())
                               << " does not broadcast to the output shape "
                               << shapeStr(outType.getShape());
  return success();
}

LogicalResult ElementwiseOp::verify() {
  Operation *op = getOperation();
  ElementwiseKind kind = getKind();
  StringRef name = stringifyElementwiseKind(kind);
  unsigned arity = getArity(kind);
  bool hasScalar = bool(getScalarAttr());
  if (hasScalar && arity != 2)
    return emitOpError() << "a scalar operand is only allowed on binary kinds, "
                            "not '"
                         << name << "'";
  unsigned expected = arity - (hasScalar ? 1 : 0);
  if (getInputs().size() != expected) {
    auto diag = emitOpError() << "'" << name << "' takes " << expected
                              << (expected == 1 ? " input" : " inputs");
    if (arity == 2 && !hasScalar)
      diag << " (or 1 and a scalar)";
    return diag << ", got " << getInputs().size();
  }
  MemRefType outType = getOutput().getType();
  Type outElt = outType.getElementType();
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    auto inType = cast<MemRefType>(input.getType());
    if (failed(checkInputBroadcasts(op, index, inType, outType)))
      return failure();
    Type inElt = inType.getElementType();
    bool isCmp = kind >= ElementwiseKind::CmpEq && kind <= ElementwiseKind::CmpGe;
    // Float types mix: the unit reads each as f32 and rounds the f32 result
    // to the output's type (docs/isa.md 2.4).
    bool exempt = kind == ElementwiseKind::Copy ||
                  (isa<FloatType>(inElt) && isa<FloatType>(outElt)) ||
                  (isCmp && outElt.isInteger(1)) ||
                  (kind == ElementwiseKind::Select && index == 0);
    if (!exempt && inElt != outElt)
      return emitOpError() << "input " << index << " element type " << inElt
                           << " differs from the output's " << outElt
                           << " (only copy converts; float types mix; "
                              "comparisons may write i1)";
    if (failed(checkSpace(op, ("input " + Twine(index)).str(), input,
                          kSramOrAcc)))
      return failure();
  }
  if (failed(checkKindTypes(op, kind, getOutput(), getInputs())))
    return failure();
  if (hasScalar &&
      failed(verifyImmediate(
          op, "scalar", getScalarAttr(),
          cast<MemRefType>(getInputs()[0].getType()).getElementType(),
          "input")))
    return failure();
  // The accumulator may be rescaled in place (flash attention's output).
  return checkSpace(op, "output", getOutput(), kSramOrAcc);
}

LogicalResult ElementwisePairOp::verify() {
  Operation *op = getOperation();
  for (ElementwiseKind kind : {getKind0(), getKind1()})
    if (!isPairStageKind(kind))
      return emitOpError() << "kinds must be add, sub, mul, div, max or min, got "
                           << stringifyElementwiseKind(kind);
  size_t expected = 3 - (getAScalarAttr() ? 1 : 0) - (getBScalarAttr() ? 1 : 0);
  if (getInputs().size() != expected)
    return emitOpError() << "takes " << expected << " inputs, got "
                         << getInputs().size();
  MemRefType outType = getOutput().getType();
  // The intermediate is rounded to the inputs' type, the result to the
  // output's (any float type).
  Type elt = cast<MemRefType>(getInputs()[0].getType()).getElementType();
  for (Type t : {elt, outType.getElementType()})
    if (!isa<FloatType>(t))
      return emitOpError() << "takes float buffers, got " << t;
  if (cast<MemRefType>(getInputs()[0].getType()).getShape() != outType.getShape())
    return emitOpError() << "input 0 must have the output's shape "
                         << shapeStr(outType.getShape());
  int fullRate = 0;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    auto inType = cast<MemRefType>(input.getType());
    if (inType.getElementType() != elt)
      return emitOpError() << "input " << index << " element type "
                           << inType.getElementType()
                           << " differs from input 0's " << elt;
    if (failed(checkInputBroadcasts(op, index, inType, outType)))
      return failure();
    if (failed(checkSpace(op, ("input " + Twine(index)).str(), input,
                          kSramOrAcc)))
      return failure();
    fullRate += isFullRate(inType.getShape(), outType.getShape());
  }
  if (fullRate > kPairFullRateOperands)
    return emitOpError() << "reads " << fullRate
                         << " operands at the full rate, at most "
                         << kPairFullRateOperands;
  for (auto [role, scalar] : {std::pair<StringRef, Attribute>{"a_scalar", getAScalarAttr()},
                              {"b_scalar", getBScalarAttr()}})
    if (scalar && failed(verifyImmediate(op, role, scalar, elt, "inputs")))
      return failure();
  return checkSpace(op, "output", getOutput(), kSramOrAcc);
}

LogicalResult ReduceOp::verify() {
  Operation *op = getOperation();
  if (failed(checkDim(op, "dim", getDim(), getInput())))
    return failure();
  SmallVector<int64_t> expected(getInput().getType().getShape());
  expected[getDim()] = 1;
  bool arg = getKind() == ReductionKind::ArgMax ||
             getKind() == ReductionKind::ArgMin;
  if (failed(checkShape(op, "output", getOutput(), expected)) ||
      failed(checkSpace(op, "input", getInput(), kSramOrAcc)))
    return failure();
  Type outElt = elementTypeOf(getOutput());
  if (arg) {
    if (!outElt.isSignlessInteger(64) && !outElt.isSignlessInteger(32))
      return emitOpError() << "'" << stringifyReductionKind(getKind())
                           << "' writes an i64 or i32 index, got " << outElt;
  } else if (!(isa<FloatType>(elementTypeOf(getInput())) &&
               isa<FloatType>(outElt)) &&
             failed(checkSameElementType(op, getInput(), "input", getOutput(),
                                         "output"))) {
    // Float types mix: read as f32, reduced in f32, rounded to the output's.
    return failure();
  }
  if (getKind() == ReductionKind::Avg &&
      isa<IntegerType>(elementTypeOf(getInput())))
    return emitOpError() << "'avg' needs a float input, got "
                         << elementTypeOf(getInput());
  return checkSpace(op, "output", getOutput(), kSram);
}

LogicalResult IotaOp::verify() {
  Operation *op = getOperation();
  if (failed(checkDim(op, "dim", getDim(), getOutput())))
    return failure();
  return checkSpace(op, "output", getOutput(), kSram);
}

LogicalResult AssertOp::verify() {
  return checkSpace(getOperation(), "condition", getCondition(), kSramOrAcc);
}

LogicalResult GatherOp::verify() {
  Operation *op = getOperation();
  if (failed(checkSpace(op, "source", getSource(), kHbmOrSram)) ||
      failed(checkSpace(op, "target", getTarget(), kHbmOrSram)) ||
      failed(checkSpace(op, "indices", getIndices(), kSram)) ||
      failed(checkSameElementType(op, getSource(), "source", getTarget(),
                                  "target")))
    return failure();
  return checkShape(op, "indices", getIndices(),
                    getTarget().getType().getShape());
}

LogicalResult ScatterOp::verify() {
  Operation *op = getOperation();
  if (failed(checkSpace(op, "source", getSource(), kHbmOrSram)) ||
      failed(checkSpace(op, "target", getTarget(), kHbmOrSram)) ||
      failed(checkSpace(op, "indices", getIndices(), kSram)) ||
      failed(checkSameElementType(op, getSource(), "source", getTarget(),
                                  "target")))
    return failure();
  if (!isa<FloatType>(getSource().getType().getElementType()))
    return emitOpError() << "accumulates floats only, got "
                         << getSource().getType().getElementType();
  return checkShape(op, "indices", getIndices(),
                    getSource().getType().getShape());
}

LogicalResult TransposeOp::verify() {
  Operation *op = getOperation();
  ArrayRef<int64_t> perm = getPermutation();
  ArrayRef<int64_t> inShape = getInput().getType().getShape();
  if (perm.size() != inShape.size())
    return emitOpError() << "permutation has " << perm.size()
                         << " entries for an input of rank " << inShape.size();
  SmallVector<bool> used(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= (int64_t)perm.size() || used[p])
      return emitOpError() << "permutation is not a permutation of 0.."
                           << perm.size() - 1;
    used[p] = true;
  }
  SmallVector<int64_t> expected;
  for (int64_t p : perm)
    expected.push_back(inShape[p]);
  if (failed(checkShape(op, "output", getOutput(), expected)) ||
      failed(checkSameElementType(op, getInput(), "input", getOutput(),
                                  "output")) ||
      failed(checkSpace(op, "input", getInput(), kSramOrAcc)))
    return failure();
  return checkSpace(op, "output", getOutput(), kSram);
}

LogicalResult FillOp::verify() {
  if (failed(verifyImmediate(getOperation(), "value", getValue(),
                             getOutput().getType().getElementType(),
                             "output")))
    return failure();
  return checkSpace(getOperation(), "output", getOutput(), kSramOrAcc);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  if (failed(verifyCollective(getOperation(), getInput(), getOutput(),
                              getGroups())))
    return failure();
  return checkShape(getOperation(), "output", getOutput(),
                    getInput().getType().getShape());
}

LogicalResult AllGatherOp::verify() {
  Operation *op = getOperation();
  FailureOr<int64_t> groupSize =
      verifyCollective(op, getInput(), getOutput(), getGroups());
  if (failed(groupSize) || failed(checkDim(op, "dim", getDim(), getInput())))
    return failure();
  SmallVector<int64_t> expected(getInput().getType().getShape());
  expected[getDim()] *= *groupSize;
  return checkShape(op, "output", getOutput(), expected);
}

/// Checks that dimension `dim` of `v` splits evenly over `groupSize` chips.
static LogicalResult checkSplits(Operation *op, Value v, int64_t dim,
                                 int64_t groupSize) {
  int64_t size = cast<MemRefType>(v.getType()).getDimSize(dim);
  if (size % groupSize == 0)
    return success();
  return op->emitOpError() << "dim " << dim << " of size " << size
                           << " does not split evenly over groups of "
                           << groupSize;
}

LogicalResult ReduceScatterOp::verify() {
  Operation *op = getOperation();
  FailureOr<int64_t> groupSize =
      verifyCollective(op, getInput(), getOutput(), getGroups());
  if (failed(groupSize) || failed(checkDim(op, "dim", getDim(), getInput())) ||
      failed(checkSplits(op, getInput(), getDim(), *groupSize)))
    return failure();
  SmallVector<int64_t> expected(getInput().getType().getShape());
  expected[getDim()] /= *groupSize;
  return checkShape(op, "output", getOutput(), expected);
}

LogicalResult AllToAllOp::verify() {
  Operation *op = getOperation();
  FailureOr<int64_t> groupSize =
      verifyCollective(op, getInput(), getOutput(), getGroups());
  if (failed(groupSize) ||
      failed(checkDim(op, "split_dim", getSplitDim(), getInput())) ||
      failed(checkDim(op, "concat_dim", getConcatDim(), getInput())) ||
      failed(checkSplits(op, getInput(), getSplitDim(), *groupSize)))
    return failure();
  SmallVector<int64_t> expected(getInput().getType().getShape());
  expected[getSplitDim()] /= *groupSize;
  expected[getConcatDim()] *= *groupSize;
  return checkShape(op, "output", getOutput(), expected);
}

LogicalResult SendOp::verify() {
  if (failed(checkSpace(getOperation(), "input", getInput(), kHbmOrSram)))
    return failure();
  return checkPeer(getOperation(), getPeer());
}

LogicalResult RecvOp::verify() {
  if (failed(checkSpace(getOperation(), "output", getOutput(), kHbmOrSram)))
    return failure();
  return checkPeer(getOperation(), getPeer());
}

LogicalResult BarrierOp::verify() {
  return verifyReplicaGroups(getOperation(), getGroups());
}

#define GET_OP_CLASSES
#include "nova/Dialect/Nova/IR/NovaOps.cpp.inc"
