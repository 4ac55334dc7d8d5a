//===- NovaISAOps.cpp - nova_isa instructions and verifiers -----*- C++ -*-===//
//
// The rules checked here are the "verified" rules of docs/isa.md.
//
//===----------------------------------------------------------------------===//
#include "nova/Dialect/NovaISA/IR/NovaISAOps.h"
#include "nova/Dialect/Nova/IR/ActivationEngine.h"
#include "nova/Dialect/Nova/IR/Immediates.h"
#include "nova/Dialect/Nova/IR/ReplicaGroups.h"
#include "nova/Dialect/Nova/IR/VectorPairs.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::nova_isa;
using mlir::nova::parseImmediate;
using mlir::nova::parseReplicaGroups;
using mlir::nova::printImmediate;
using mlir::nova::printReplicaGroups;
using mlir::nova::verifyReplicaGroups;
using nova::MemorySpace;

#include "nova/Dialect/NovaISA/IR/NovaISAInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Custom assembly directives
//===----------------------------------------------------------------------===//

/// Enum attributes printed as a bare keyword (`on dma`, `salu add`).
template <typename AttrT, typename SymbolizeFn>
static ParseResult parseKeywordEnum(OpAsmParser &parser, AttrT &attr,
                                    SymbolizeFn symbolize, StringRef what) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  auto value = symbolize(keyword);
  if (!value)
    return parser.emitError(loc) << "unknown " << what << " '" << keyword
                                 << "'";
  attr = AttrT::get(parser.getContext(), *value);
  return success();
}

static ParseResult parseEnumKeyword(OpAsmParser &parser, EngineAttr &attr) {
  return parseKeywordEnum(parser, attr,
      [](StringRef s) { return symbolizeEngine(s); }, "engine");
}
static ParseResult parseEnumKeyword(OpAsmParser &parser, SaluKindAttr &attr) {
  return parseKeywordEnum(parser, attr,
      [](StringRef s) { return symbolizeSaluKind(s); }, "salu kind");
}
static ParseResult parseEnumKeyword(OpAsmParser &parser,
                                    nova::ElementwiseKindAttr &attr) {
  return parseKeywordEnum(parser, attr,
      [](StringRef s) { return nova::symbolizeElementwiseKind(s); },
                          "elementwise kind");
}
static ParseResult parseEnumKeyword(OpAsmParser &parser,
                                    nova::ReductionKindAttr &attr) {
  return parseKeywordEnum(parser, attr,
      [](StringRef s) { return nova::symbolizeReductionKind(s); },
                          "reduction kind");
}

static void printEnumKeyword(OpAsmPrinter &printer, Operation *,
                             EngineAttr attr) {
  printer << stringifyEngine(attr.getValue());
}
static void printEnumKeyword(OpAsmPrinter &printer, Operation *,
                             SaluKindAttr attr) {
  printer << stringifySaluKind(attr.getValue());
}
static void printEnumKeyword(OpAsmPrinter &printer, Operation *,
                             nova::ElementwiseKindAttr attr) {
  printer << nova::stringifyElementwiseKind(attr.getValue());
}
static void printEnumKeyword(OpAsmPrinter &printer, Operation *,
                             nova::ReductionKindAttr attr) {
  printer << nova::stringifyReductionKind(attr.getValue());
}

/// A tile operand: `%addr : #nova_isa.tile<...>`.
static ParseResult parseTile(OpAsmParser &parser,
                             OpAsmParser::UnresolvedOperand &address,
                             TileAttr &tile) {
  return failure(parser.parseOperand(address) || parser.parseColon() ||
                 parser.parseAttribute(tile));
}

static void printTile(OpAsmPrinter &printer, Operation *, Value address,
                      TileAttr tile) {
  printer << address << " : ";
  printer.printAttribute(tile);
}

/// A `vfused` operand: `%addr : #tile` or an immediate.
static ParseResult
parseTileOrImmediate(OpAsmParser &parser,
                     std::optional<OpAsmParser::UnresolvedOperand> &address,
                     TileAttr &tile, Attribute &scalar) {
  OpAsmParser::UnresolvedOperand operand;
  OptionalParseResult parsed = parser.parseOptionalOperand(operand);
  if (!parsed.has_value())
    return parseImmediate(parser, scalar);
  if (failed(*parsed) || parser.parseColon() || parser.parseAttribute(tile))
    return failure();
  address = operand;
  return success();
}

static void printTileOrImmediate(OpAsmPrinter &printer, Operation *op,
                                 Value address, TileAttr tile,
                                 Attribute scalar) {
  if (address)
    return printTile(printer, op, address, tile);
  printImmediate(printer, op, scalar);
}

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

LogicalResult mlir::nova_isa::verifyInstruction(Operation *op) {
  auto inst = cast<InstructionOpInterface>(op);
  Engine engine = inst.getEngine();
  ArrayRef<Engine> allowed = inst.getAllowedEngines();
  if (llvm::is_contained(allowed, engine)) {
    // The activation engine exists only on targets that describe one.
    if (engine == Engine::Activation)
      if (nova::TargetAttr target = nova::lookupTarget(op))
        if (!nova::hasActivationEngine(target))
          return op->emitOpError()
                 << "runs on activation, but target '" << target.getName()
                 << "' has no activation engine";
    return success();
  }
  // Name the activation engine only where the target has one.
  SmallVector<Engine> named(allowed);
  if (!nova::hasActivationEngine(nova::lookupTarget(op)))
    llvm::erase(named, Engine::Activation);
  auto diag = op->emitOpError() << "must run on ";
  llvm::interleave(
      named, [&](Engine e) { diag << stringifyEngine(e); },
      [&] { diag << " or "; });
  return diag << ", got " << stringifyEngine(engine);
}

static std::string shapeStr(ArrayRef<int64_t> dims) {
  std::string result;
  llvm::raw_string_ostream os(result);
  llvm::interleave(dims, os, "x");
  return result;
}

static constexpr MemorySpace kHbmOrSram[] = {MemorySpace::HBM,
                                             MemorySpace::SRAM};
static constexpr MemorySpace kSram[] = {MemorySpace::SRAM};
static constexpr MemorySpace kAcc[] = {MemorySpace::ACC};
static constexpr MemorySpace kSramOrAcc[] = {MemorySpace::SRAM,
                                             MemorySpace::ACC};

static int64_t capacityOf(nova::TargetAttr target, MemorySpace space) {
  switch (space) {
  case MemorySpace::HBM:
    return target.getHbmBytes();
  case MemorySpace::SRAM:
    return target.getSramBytes();
  case MemorySpace::ACC:
    return target.getAccBytes();
  }
  llvm_unreachable("unknown memory space");
}

/// Checks a tile operand: its memory space is one of `allowed`, an output
/// tile writes no element twice, and with a target the tile fits its space.
static LogicalResult checkTile(Operation *op, StringRef role, TileAttr tile,
                               ArrayRef<MemorySpace> allowed,
                               bool isOutput = false) {
  MemorySpace space = tile.getMemorySpace();
  if (!llvm::is_contained(allowed, space)) {
    auto diag = op->emitOpError() << role << " must live in ";
    llvm::interleave(
        allowed, [&](MemorySpace s) { diag << nova::stringifyMemorySpace(s); },
        [&] { diag << " or "; });
    return diag << ", got " << nova::stringifyMemorySpace(space);
  }
  if (isOutput)
    for (auto [dim, size, stride] :
         llvm::enumerate(tile.getShape(), tile.getStrides()))
      if (stride == 0 && size > 1)
        return op->emitOpError()
               << role << " has stride 0 in dimension " << dim
               << " of size " << size << ", an output must not repeat elements";
  if (nova::TargetAttr target = nova::lookupTarget(op)) {
    int64_t capacity = capacityOf(target, space);
    if (tile.getExtentBytes() > capacity)
      return op->emitOpError()
             << role << " spans " << tile.getExtentBytes()
             << " bytes, more than the target's " << capacity << "-byte "
             << nova::stringifyMemorySpace(space);
  }
  return success();
}

static LogicalResult checkSameElementType(Operation *op, StringRef aRole,
                                          TileAttr a, StringRef bRole,
                                          TileAttr b) {
  if (a.getElementType() == b.getElementType())
    return success();
  return op->emitOpError() << aRole << " and " << bRole
                           << " element types must match, got "
                           << a.getElementType() << " and "
                           << b.getElementType();
}

static LogicalResult checkShape(Operation *op, StringRef role, TileAttr tile,
                                ArrayRef<int64_t> expected) {
  if (tile.getShape() == expected)
    return success();
  return op->emitOpError() << role << " shape must be " << shapeStr(expected)
                           << ", got " << shapeStr(tile.getShape());
}

static LogicalResult checkDim(Operation *op, StringRef role, int64_t dim,
                              TileAttr tile) {
  if (dim < tile.getRank())
    return success();
  return op->emitOpError() << role << " " << dim
                           << " is out of range for rank " << tile.getRank();
}

/// Float tiles of an elementwise instruction may differ in float type: each
/// is read as f32 and the f32 result is rounded to the output's type
/// (docs/isa.md 2.4).
static bool floatsMix(TileAttr a, TileAttr b) {
  return isa<FloatType>(a.getElementType()) &&
         isa<FloatType>(b.getElementType());
}

/// Checks that `input` broadcasts to `output` (same rank, each size equal or
/// 1) and, with `sameType`, has its element type or both are floats.
static LogicalResult checkBroadcast(Operation *op, StringRef role,
                                    TileAttr input, TileAttr output,
                                    bool sameType = true) {
  if (input.getRank() != output.getRank())
    return op->emitOpError() << role << " has rank " << input.getRank()
                             << " but the output has rank "
                             << output.getRank();
  for (auto [inDim, outDim] :
       llvm::zip_equal(input.getShape(), output.getShape()))
    if (inDim != outDim && inDim != 1)
      return op->emitOpError()
             << role << " of shape " << shapeStr(input.getShape())
             << " does not broadcast to the output shape "
             << shapeStr(output.getShape());
  if (!sameType || floatsMix(input, output))
    return success();
  return checkSameElementType(op, role, input, "output", output);
}

static bool isComparison(nova::ElementwiseKind kind) {
  return kind >= nova::ElementwiseKind::CmpEq &&
         kind <= nova::ElementwiseKind::CmpGe;
}

/// A comparison may write i1 instead of its inputs' type.
static bool typeExempt(nova::ElementwiseKind kind, TileAttr output) {
  return isComparison(kind) && output.getElementType().isInteger(1);
}

enum class Arity { Unary, Binary };

static LogicalResult checkKindArity(Operation *op, nova::ElementwiseKind kind,
                                    Arity arity) {
  auto code = static_cast<uint32_t>(kind);
  bool ok = arity == Arity::Unary ? code < 32 : (code >= 32 && code < 64);
  if (ok)
    return success();
  return op->emitOpError() << "kind must be "
                           << (arity == Arity::Unary ? "unary" : "binary")
                           << ", got " << nova::stringifyElementwiseKind(kind);
}

/// Shared rules of the collectives that move `input` to `output`.
static FailureOr<int64_t> verifyCollective(Operation *op, TileAttr input,
                                           TileAttr output, ArrayAttr groups) {
  if (failed(checkTile(op, "input", input, kHbmOrSram)) ||
      failed(checkTile(op, "output", output, kHbmOrSram, /*isOutput=*/true)) ||
      failed(checkSameElementType(op, "input", input, "output", output)))
    return failure();
  return verifyReplicaGroups(op, groups);
}

/// Checks that dimension `dim` of `tile` splits evenly over `groupSize` chips.
static LogicalResult checkSplits(Operation *op, TileAttr tile, int64_t dim,
                                 int64_t groupSize) {
  int64_t size = tile.getShape()[dim];
  if (size % groupSize == 0)
    return success();
  return op->emitOpError() << "dim " << dim << " of size " << size
                           << " does not split evenly over groups of "
                           << groupSize;
}

//===----------------------------------------------------------------------===//
// Sequencer
//===----------------------------------------------------------------------===//

static LogicalResult checkNonEmptySemaphores(Operation *op,
                                            ArrayRef<int64_t> ids) {
  if (!ids.empty())
    return success();
  return op->emitOpError() << "needs at least one semaphore";
}

LogicalResult SemWaitOp::verify() {
  return checkNonEmptySemaphores(getOperation(), getSemaphores());
}

LogicalResult SemSignalOp::verify() {
  return checkNonEmptySemaphores(getOperation(), getSemaphores());
}

/// A loop bound: a register or an immediate.
static ParseResult
parseBound(OpAsmParser &parser,
           std::optional<OpAsmParser::UnresolvedOperand> &reg,
           IntegerAttr &imm) {
  OpAsmParser::UnresolvedOperand operand;
  OptionalParseResult result = parser.parseOptionalOperand(operand);
  if (result.has_value()) {
    if (failed(*result))
      return failure();
    reg = operand;
    return success();
  }
  int64_t value;
  if (parser.parseInteger(value))
    return failure();
  imm = parser.getBuilder().getI64IntegerAttr(value);
  return success();
}

static void printBound(OpAsmPrinter &printer, Value reg, IntegerAttr imm) {
  if (reg)
    printer << reg;
  else
    printer << imm.getInt();
}

/// `%iv = bound to bound step bound on scalar region attr-dict`
ParseResult LoopOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::Argument iv;
  std::optional<OpAsmParser::UnresolvedOperand> regs[3];
  IntegerAttr imms[3];
  EngineAttr engine;
  if (parser.parseArgument(iv) || parser.parseEqual() ||
      parseBound(parser, regs[0], imms[0]) || parser.parseKeyword("to") ||
      parseBound(parser, regs[1], imms[1]) || parser.parseKeyword("step") ||
      parseBound(parser, regs[2], imms[2]) || parser.parseKeyword("on") ||
      parseEnumKeyword(parser, engine))
    return failure();
  Type indexType = parser.getBuilder().getIndexType();
  iv.type = indexType;
  int32_t segments[3];
  for (int i = 0; i < 3; ++i) {
    segments[i] = regs[i] ? 1 : 0;
    if (regs[i] &&
        parser.resolveOperand(*regs[i], indexType, result.operands))
      return failure();
  }
  Properties &props = result.getOrAddProperties<Properties>();
  props.operandSegmentSizes = {segments[0], segments[1], segments[2]};
  props.lower_imm = imms[0];
  props.upper_imm = imms[1];
  props.step_imm = imms[2];
  props.engine = engine;
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, {iv}) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  LoopOp::ensureTerminator(*body, parser.getBuilder(), result.location);
  return success();
}

void LoopOp::print(OpAsmPrinter &printer) {
  printer << ' ' << getInductionVar() << " = ";
  printBound(printer, getLower(), getLowerImmAttr());
  printer << " to ";
  printBound(printer, getUpper(), getUpperImmAttr());
  printer << " step ";
  printBound(printer, getStep(), getStepImmAttr());
  printer << " on " << stringifyEngine(getEngine()) << ' ';
  printer.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                      /*printBlockTerminators=*/false);
  printer.printOptionalAttrDict(
      (*this)->getAttrs(),
      {getOperandSegmentSizesAttrName(), getLowerImmAttrName(),
       getUpperImmAttrName(), getStepImmAttrName(), getEngineAttrName()});
}

LogicalResult LoopOp::verify() {
  struct Bound {
    StringRef name;
    Value reg;
    std::optional<int64_t> imm;
  };
  Bound bounds[] = {{"lower bound", getLower(), getLowerImm()},
                    {"upper bound", getUpper(), getUpperImm()},
                    {"step", getStep(), getStepImm()}};
  for (const Bound &bound : bounds)
    if (bool(bound.reg) == bound.imm.has_value())
      return emitOpError() << bound.name
                           << " must be exactly one of a register and an "
                              "immediate";
  if (std::optional<int64_t> step = getStepImm(); step && *step <= 0)
    return emitOpError() << "step must be positive, got " << *step;
  Block &body = getBody().front();
  if (body.getNumArguments() != 1 || !body.getArgument(0).getType().isIndex())
    return emitOpError()
           << "body must take exactly one index argument, the induction "
              "variable";
  int64_t depth = 1;
  for (Operation *parent = (*this)->getParentOp(); parent;
       parent = parent->getParentOp())
    if (isa<LoopOp>(parent))
      ++depth;
  if (depth > kMaxDepth)
    return emitOpError() << "loops nest " << depth << " deep, the loop stack "
                         << "holds at most " << kMaxDepth;
  return success();
}

//===----------------------------------------------------------------------===//
// DMA and matrix
//===----------------------------------------------------------------------===//

LogicalResult NopOp::verify() {
  std::optional<uint64_t> queue = getQueue();
  if (!queue)
    return success();
  if (getEngine() != Engine::DMA)
    return emitOpError() << "names a dma queue but runs on "
                         << stringifyEngine(getEngine())
                         << "; only a nop on dma has a queue";
  if (nova::TargetAttr targetDesc = nova::lookupTarget(getOperation()))
    if (static_cast<int64_t>(*queue) >= targetDesc.getDmaEngines())
      return emitOpError() << "queue " << *queue
                           << " is out of range for a target with "
                           << targetDesc.getDmaEngines() << " dma engines";
  return success();
}

LogicalResult DmaCopyOp::verify() {
  Operation *op = getOperation();
  TileAttr source = getSourceTile(), target = getTargetTile();
  if (failed(checkTile(op, "source", source, kHbmOrSram)) ||
      failed(checkTile(op, "target", target, kHbmOrSram, /*isOutput=*/true)) ||
      failed(checkSameElementType(op, "source", source, "target", target)))
    return failure();
  if (source.getShape() != target.getShape())
    return emitOpError() << "source and target shapes must match, got "
                         << shapeStr(source.getShape()) << " and "
                         << shapeStr(target.getShape());
  if (getPeer() && target.getMemorySpace() != MemorySpace::HBM)
    return emitOpError() << "a dma to a peer chip must write to hbm, got "
                         << nova::stringifyMemorySpace(target.getMemorySpace());
  if (nova::TargetAttr targetDesc = nova::lookupTarget(op))
    if (getQueue() >= targetDesc.getDmaEngines())
      return emitOpError() << "queue " << getQueue()
                           << " is out of range for a target with "
                           << targetDesc.getDmaEngines() << " dma engines";
  return success();
}

LogicalResult MatmulOp::verify() {
  Operation *op = getOperation();
  TileAttr lhs = getLhsTile(), rhs = getRhsTile(), acc = getAccTile();
  for (auto [role, tile] : {std::pair<StringRef, TileAttr>{"lhs", lhs},
                            {"rhs", rhs}, {"acc", acc}})
    if (tile.getRank() != 2)
      return emitOpError() << role << " must be 2-D, got rank "
                           << tile.getRank();
  int64_t m = lhs.getShape()[0], k = lhs.getShape()[1], n = rhs.getShape()[1];
  if (rhs.getShape()[0] != k)
    return emitOpError() << "lhs columns (" << k << ") must equal rhs rows ("
                         << rhs.getShape()[0] << ")";
  if (failed(checkShape(op, "acc", acc, {m, n})) ||
      failed(checkSameElementType(op, "lhs", lhs, "rhs", rhs)))
    return failure();
  if (!acc.getElementType().isF32())
    return emitOpError() << "acc element type must be f32, got "
                         << acc.getElementType();
  if (!isa<FloatType>(lhs.getElementType()))
    return emitOpError() << "lhs and rhs must be float tiles, got "
                         << lhs.getElementType();
  if (failed(checkTile(op, "lhs", lhs, kSram)) ||
      failed(checkTile(op, "rhs", rhs, kSram)) ||
      failed(checkTile(op, "acc", acc, kAcc, /*isOutput=*/true)))
    return failure();
  nova::TargetAttr target = nova::lookupTarget(op);
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
  return success();
}

//===----------------------------------------------------------------------===//
// Vector
//===----------------------------------------------------------------------===//

LogicalResult VUnaryOp::verify() {
  Operation *op = getOperation();
  if (failed(checkKindArity(op, getKind(), Arity::Unary)) ||
      failed(checkTile(op, "input", getInputTile(), kSramOrAcc)) ||
      failed(checkTile(op, "output", getOutputTile(), kSramOrAcc,
                       /*isOutput=*/true)))
    return failure();
  return checkBroadcast(op, "input", getInputTile(), getOutputTile());
}

LogicalResult VBinaryOp::verify() {
  Operation *op = getOperation();
  if (failed(checkKindArity(op, getKind(), Arity::Binary)) ||
      failed(checkTile(op, "lhs", getLhsTile(), kSramOrAcc)) ||
      failed(checkTile(op, "rhs", getRhsTile(), kSramOrAcc)) ||
      failed(checkTile(op, "output", getOutputTile(), kSramOrAcc,
                       /*isOutput=*/true)) ||
      failed(checkBroadcast(op, "lhs", getLhsTile(), getOutputTile(),
                            !typeExempt(getKind(), getOutputTile()))))
    return failure();
  if (getLhsTile().getElementType() != getRhsTile().getElementType() &&
      !floatsMix(getLhsTile(), getRhsTile()))
    return emitOpError() << "lhs and rhs element types must match, got "
                         << getLhsTile().getElementType() << " and "
                         << getRhsTile().getElementType();
  return checkBroadcast(op, "rhs", getRhsTile(), getOutputTile(),
                        !typeExempt(getKind(), getOutputTile()));
}

LogicalResult VScalarOp::verify() {
  Operation *op = getOperation();
  if (failed(checkKindArity(op, getKind(), Arity::Binary)) ||
      failed(checkTile(op, "input", getInputTile(), kSramOrAcc)) ||
      failed(checkTile(op, "output", getOutputTile(), kSramOrAcc,
                       /*isOutput=*/true)) ||
      failed(nova::verifyImmediate(op, "scalar", getScalar(),
                                   getInputTile().getElementType(),
                                   "input tile")))
    return failure();
  return checkBroadcast(op, "input", getInputTile(), getOutputTile(),
                        !typeExempt(getKind(), getOutputTile()));
}

LogicalResult VFusedOp::verify() {
  Operation *op = getOperation();
  TileAttr output = getOutputTile();
  for (nova::ElementwiseKind kind : {getKind0(), getKind1()})
    if (!nova::isPairStageKind(kind))
      return emitOpError() << "kinds must be add, sub, mul, div, max or min, got "
                           << nova::stringifyElementwiseKind(kind);
  // T is rounded to X's type, Y to its own: any float types.
  for (TileAttr tile : {getInputTile(), output})
    if (!isa<FloatType>(tile.getElementType()))
      return emitOpError() << "takes float tiles, got "
                           << tile.getElementType();
  if (failed(checkTile(op, "input", getInputTile(), kSramOrAcc)) ||
      failed(checkTile(op, "output", output, kSramOrAcc, /*isOutput=*/true)) ||
      failed(checkShape(op, "input", getInputTile(), output.getShape())))
    return failure();
  int fullRate = nova::isFullRate(getInputTile().getShape(), output.getShape());
  for (auto [role, address, tile, scalar] :
       {std::tuple<StringRef, Value, TileAttr, Attribute>{
            "a", getA(), getATileAttr(), getAScalarAttr()},
        {"b", getB(), getBTileAttr(), getBScalarAttr()}}) {
    if (bool(address) != bool(tile) || bool(tile) == bool(scalar))
      return emitOpError() << role << " must be a tile or an immediate";
    if (scalar) {
      if (failed(nova::verifyImmediate(op, role, scalar,
                                       getInputTile().getElementType(),
                                       "input tile")))
        return failure();
      continue;
    }
    if (failed(checkTile(op, role, tile, kSramOrAcc)) ||
        failed(checkBroadcast(op, role, tile, output, /*sameType=*/false)) ||
        failed(checkSameElementType(op, "input", getInputTile(), role, tile)))
      return failure();
    fullRate += nova::isFullRate(tile.getShape(), output.getShape());
  }
  if (fullRate > nova::kPairFullRateOperands)
    return emitOpError() << "reads " << fullRate
                         << " operands at the full rate, at most "
                         << nova::kPairFullRateOperands;
  return success();
}

LogicalResult VSelectOp::verify() {
  Operation *op = getOperation();
  TileAttr output = getOutputTile();
  if (failed(checkTile(op, "output", output, kSramOrAcc, /*isOutput=*/true)))
    return failure();
  for (auto [role, tile] :
       {std::pair<StringRef, TileAttr>{"condition", getConditionTile()},
        {"true value", getTrueTile()},
        {"false value", getFalseTile()}})
    if (failed(checkTile(op, role, tile, kSramOrAcc)) ||
        failed(checkBroadcast(op, role, tile, output,
                              /*sameType=*/role != "condition")))
      return failure();
  return success();
}

LogicalResult VReduceOp::verify() {
  Operation *op = getOperation();
  TileAttr input = getInputTile(), output = getOutputTile();
  if (failed(checkTile(op, "input", input, kSramOrAcc)) ||
      failed(checkTile(op, "output", output, kSramOrAcc, /*isOutput=*/true)) ||
      failed(checkDim(op, "axis", getAxis(), input)))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected[getAxis()] = 1;
  if (failed(checkShape(op, "output", output, expected)))
    return failure();
  if (getKind() == nova::ReductionKind::ArgMax ||
      getKind() == nova::ReductionKind::ArgMin) {
    Type t = output.getElementType();
    if (!t.isSignlessInteger(64) && !t.isSignlessInteger(32))
      return emitOpError() << "argmax/argmin write an i64 or i32 tile, got "
                           << t;
    return success();
  }
  if (getKind() == nova::ReductionKind::Avg &&
      isa<IntegerType>(input.getElementType()))
    return emitOpError() << "avg needs a float tile, got "
                         << input.getElementType();
  if (floatsMix(input, output))
    return success();
  return checkSameElementType(op, "input", input, "output", output);
}

LogicalResult VIotaOp::verify() {
  Operation *op = getOperation();
  if (failed(checkTile(op, "output", getOutputTile(), kSramOrAcc,
                       /*isOutput=*/true)))
    return failure();
  return checkDim(op, "axis", getAxis(), getOutputTile());
}

LogicalResult VAssertOp::verify() {
  return checkTile(getOperation(), "condition", getConditionTile(), kSramOrAcc);
}

LogicalResult DmaGatherOp::verify() {
  Operation *op = getOperation();
  TileAttr source = getSourceTile(), indices = getIndicesTile(),
           target = getTargetTile();
  if (failed(checkTile(op, "source", source, kHbmOrSram)) ||
      failed(checkTile(op, "indices", indices, kSram)) ||
      failed(checkTile(op, "target", target, kHbmOrSram, /*isOutput=*/true)) ||
      failed(checkSameElementType(op, "source", source, "target", target)))
    return failure();
  Type it = indices.getElementType();
  if (!it.isSignlessInteger(64) && !it.isSignlessInteger(32))
    return emitOpError() << "indices must be an i64 or i32 tile, got " << it;
  if (failed(checkShape(op, "indices", indices, target.getShape())))
    return failure();
  if (nova::TargetAttr targetDesc = nova::lookupTarget(op))
    if (getQueue() >= targetDesc.getDmaEngines())
      return emitOpError() << "queue " << getQueue()
                           << " is out of range for a target with "
                           << targetDesc.getDmaEngines() << " dma engines";
  return success();
}

LogicalResult DmaScatterOp::verify() {
  Operation *op = getOperation();
  TileAttr source = getSourceTile(), indices = getIndicesTile(),
           target = getTargetTile();
  if (failed(checkTile(op, "source", source, kHbmOrSram)) ||
      failed(checkTile(op, "indices", indices, kSram)) ||
      failed(checkTile(op, "target", target, kHbmOrSram, /*isOutput=*/true)) ||
      failed(checkSameElementType(op, "source", source, "target", target)))
    return failure();
  Type it = indices.getElementType();
  if (!it.isSignlessInteger(64) && !it.isSignlessInteger(32))
    return emitOpError() << "indices must be an i64 or i32 tile, got " << it;
  if (failed(checkShape(op, "indices", indices, source.getShape())))
    return failure();
  if (nova::TargetAttr targetDesc = nova::lookupTarget(op))
    if (getQueue() >= targetDesc.getDmaEngines())
      return emitOpError() << "queue " << getQueue()
                           << " is out of range for a target with "
                           << targetDesc.getDmaEngines() << " dma engines";
  return success();
}

LogicalResult VTransposeOp::verify() {
  Operation *op = getOperation();
  TileAttr input = getInputTile(), output = getOutputTile();
  if (failed(checkTile(op, "input", input, kSramOrAcc)) ||
      failed(checkTile(op, "output", output, kSramOrAcc, /*isOutput=*/true)))
    return failure();
  ArrayRef<int64_t> perm = getPerm();
  ArrayRef<int64_t> inShape = input.getShape();
  if ((int64_t)perm.size() != input.getRank())
    return emitOpError() << "perm has " << perm.size()
                         << " entries for an input of rank " << input.getRank();
  SmallVector<bool> used(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= (int64_t)perm.size() || used[p])
      return emitOpError() << "perm is not a permutation of 0.."
                           << perm.size() - 1;
    used[p] = true;
  }
  SmallVector<int64_t> expected;
  for (int64_t p : perm)
    expected.push_back(inShape[p]);
  if (failed(checkShape(op, "output", output, expected)))
    return failure();
  return checkSameElementType(op, "input", input, "output", output);
}

LogicalResult VFillOp::verify() {
  if (failed(nova::verifyImmediate(getOperation(), "value", getValue(),
                                   getOutputTile().getElementType(),
                                   "output tile")))
    return failure();
  return checkTile(getOperation(), "output", getOutputTile(), kSramOrAcc,
                   /*isOutput=*/true);
}

LogicalResult VCopyOp::verify() {
  Operation *op = getOperation();
  TileAttr input = getInputTile(), output = getOutputTile();
  if (failed(checkTile(op, "input", input, kSramOrAcc)) ||
      failed(checkTile(op, "output", output, kSramOrAcc, /*isOutput=*/true)))
    return failure();
  return checkShape(op, "output", output, input.getShape());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyCollective(op, getInputTile(), getOutputTile(),
                              getGroups())))
    return failure();
  return checkShape(op, "output", getOutputTile(),
                    getInputTile().getShape());
}

LogicalResult AllGatherOp::verify() {
  Operation *op = getOperation();
  TileAttr input = getInputTile();
  FailureOr<int64_t> groupSize =
      verifyCollective(op, input, getOutputTile(), getGroups());
  if (failed(groupSize) || failed(checkDim(op, "dim", getDim(), input)))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected[getDim()] *= *groupSize;
  return checkShape(op, "output", getOutputTile(), expected);
}

LogicalResult ReduceScatterOp::verify() {
  Operation *op = getOperation();
  TileAttr input = getInputTile();
  FailureOr<int64_t> groupSize =
      verifyCollective(op, input, getOutputTile(), getGroups());
  if (failed(groupSize) || failed(checkDim(op, "dim", getDim(), input)) ||
      failed(checkSplits(op, input, getDim(), *groupSize)))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected[getDim()] /= *groupSize;
  return checkShape(op, "output", getOutputTile(), expected);
}

LogicalResult AllToAllOp::verify() {
  Operation *op = getOperation();
  TileAttr input = getInputTile();
  FailureOr<int64_t> groupSize =
      verifyCollective(op, input, getOutputTile(), getGroups());
  if (failed(groupSize) ||
      failed(checkDim(op, "split_dim", getSplitDim(), input)) ||
      failed(checkDim(op, "concat_dim", getConcatDim(), input)) ||
      failed(checkSplits(op, input, getSplitDim(), *groupSize)))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  expected[getSplitDim()] /= *groupSize;
  expected[getConcatDim()] *= *groupSize;
  return checkShape(op, "output", getOutputTile(), expected);
}

LogicalResult SendOp::verify() {
  return checkTile(getOperation(), "input", getInputTile(), kHbmOrSram);
}

LogicalResult RecvOp::verify() {
  return checkTile(getOperation(), "output", getOutputTile(), kHbmOrSram,
                   /*isOutput=*/true);
}

LogicalResult BarrierOp::verify() {
  return verifyReplicaGroups(getOperation(), getGroups());
}

#define GET_OP_CLASSES
#include "nova/Dialect/NovaISA/IR/NovaISAOps.cpp.inc"
