//===- ProgramEncoder.cpp - one func.func to instruction words --*- C++ -*-===//
//
// Three steps over a program function:
//   1. layout: give every instruction its index, in program order, including
//      the words that structured control flow adds (ENDLOOP, ELSE, ENDIF) and
//      the final HALT;
//   2. register allocation: linear scan over live ranges of `index` values
//      measured in instruction indices (docs/binary-format.md section 6);
//   3. encoding: one Word per instruction (docs/isa.md section 3).
//
//===----------------------------------------------------------------------===//
#include <limits>
#include "ProgramEncoder.h"
#include "nova/Dialect/Nova/IR/Immediates.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/raw_ostream.h"

#include <bitset>
#include <queue>

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::binary;
using namespace mlir::nova_isa;

void Word::appendTo(std::string &out) const {
  char bytes[kWordBytes] = {};
  using llvm::support::endian::write16le;
  using llvm::support::endian::write32le;
  using llvm::support::endian::write64le;
  bytes[0] = opcode;
  bytes[1] = engine;
  bytes[2] = kind;
  bytes[3] = flags;
  bytes[4] = queue;
  bytes[5] = rd;
  bytes[6] = ra;
  bytes[7] = rb;
  bytes[8] = rc;
  bytes[9] = rdst;
  for (int i = 0; i < 4; ++i)
    write16le(bytes + 10 + 2 * i, tiles[i]);
  write16le(bytes + 18, group);
  write32le(bytes + 20, target);
  write64le(bytes + 24, wait);
  write64le(bytes + 32, signal);
  for (int i = 0; i < 3; ++i)
    write64le(bytes + 40 + 8 * i, static_cast<uint64_t>(imm[i]));
  out.append(bytes, kWordBytes);
}

std::string mlir::nova::binary::renderLocation(Location loc) {
  // A call-site location (torch-mlir's `callsite(library at model)`) lists
  // the frames callee first: all of them are kept, so that the text names
  // the model's own line as well as the library's.
  SmallVector<FileLineColLoc> files;
  std::string module, layers;
  loc->walk([&](Location inner) {
    if (auto f = dyn_cast<FileLineColLoc>(inner))
      if (files.empty() || files.back() != f)
        files.push_back(f);
    // The frontend names each op's location after its module
    // (`module:blocks.0.attn`); a fused location keeps the first.
    if (auto name = dyn_cast<NameLoc>(inner))
      if (module.empty() && name.getName().getValue().starts_with("module:"))
        module = name.getName().getValue().drop_front(7).str();
    // nova-roll-layers names each iteration's module on its loop over
    // layers (`layers:blocks.0,blocks.1`).
    if (auto name = dyn_cast<NameLoc>(inner))
      if (layers.empty() && name.getName().getValue().starts_with("layers:"))
        layers = name.getName().getValue().drop_front(7).str();
    return WalkResult::advance();
  });
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto [i, f] : llvm::enumerate(files))
    os << (i ? " called from " : "") << f.getFilename().getValue() << ":"
       << f.getLine() << ":" << f.getColumn();
  if (files.empty() && module.empty() && layers.empty() && !isa<UnknownLoc>(loc))
    loc->print(os);
  if (!module.empty())
    os << (files.empty() ? "" : " ") << "in " << module;
  if (!layers.empty())
    os << (files.empty() && module.empty() ? "" : " ") << "over layers " << layers;
  return text;
}

namespace {

/// What an instruction slot encodes.
enum class SlotKind { Op, EndLoop, Else, EndIf, Halt };

struct Slot {
  SlotKind kind;
  Operation *op;
};

class ProgramEncoder {
public:
  explicit ProgramEncoder(func::FuncOp func) : func(func) {}

  FailureOr<ProgramImage> run() {
    if (failed(checkSignature()) || failed(layout(func.getBody().front())))
      return failure();
    // The encoder always ends a chip's code with HALT.
    if (slots.empty() || slots.back().kind != SlotKind::Op ||
        !isa<HaltOp>(slots.back().op)) {
      Operation *ret = func.getBody().front().getTerminator();
      slots.push_back({SlotKind::Halt, ret});
    }
    if (slots.size() >= (1ull << 32))
      return func.emitOpError("has too many instructions for one program");
    if (failed(allocateRegisters()))
      return failure();
    ProgramImage image;
    image.code.reserve(slots.size());
    for (auto [index, slot] : llvm::enumerate(slots)) {
      FailureOr<Word> word = encode(slot);
      if (failed(word))
        return failure();
      image.code.push_back(*word);
      image.origins.push_back(slot.op);
    }
    image.tiles = std::move(tiles);
    image.groups = std::move(groups);
    return image;
  }

private:
  LogicalResult checkSignature() {
    for (BlockArgument arg : func.getArguments())
      if (isa<IndexType>(arg.getType()))
        return func.emitOpError("argument ")
               << arg.getArgNumber()
               << " is an index value: a program starts with no register "
                  "set; materialise it with nova_isa.li";
    if (!func.getBody().hasOneBlock())
      return func.emitOpError("must have a single block to be encoded");
    return success();
  }

  //===------------------------------------------------------------------===//
  // Layout
  //===------------------------------------------------------------------===//

  uint32_t addSlot(SlotKind kind, Operation *op) {
    slots.push_back({kind, op});
    return slots.size() - 1;
  }

  static bool isEmptyRegion(Region &region) {
    return region.empty() ||
           (region.front().getOperations().size() == 1 &&
            isa<EndOp>(region.front().front()));
  }

  LogicalResult layout(Block &block) {
    for (Operation &op : block) {
      if (auto loop = dyn_cast<LoopOp>(op)) {
        index[&op] = addSlot(SlotKind::Op, &op);
        if (failed(layout(loop.getBody().front())))
          return failure();
        continue;
      }
      if (auto branch = dyn_cast<IfOp>(op)) {
        index[&op] = addSlot(SlotKind::Op, &op);
        if (failed(layout(branch.getThenRegion().front())))
          return failure();
        if (!isEmptyRegion(branch.getElseRegion()) &&
            failed(layout(branch.getElseRegion().front())))
          return failure();
        continue;
      }
      if (auto end = dyn_cast<EndOp>(op)) {
        Operation *parent = op.getParentOp();
        SlotKind kind = SlotKind::EndLoop;
        if (auto branch = dyn_cast<IfOp>(parent)) {
          bool inThen = op.getParentRegion() == &branch.getThenRegion();
          kind = inThen && !isEmptyRegion(branch.getElseRegion())
                     ? SlotKind::Else
                     : SlotKind::EndIf;
        }
        uint32_t slot = addSlot(kind, &op);
        index[&op] = slot;
        if (kind == SlotKind::EndLoop || kind == SlotKind::EndIf)
          closer[parent] = slot;
        else
          elseSlot[parent] = slot;
        continue;
      }
      if (isa<func::ReturnOp>(op))
        continue;
      if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
        if (!isa<IndexType>(constant.getType()) ||
            !isa<IntegerAttr>(constant.getValue()))
          return op.emitError("only index constants can be encoded (as LI), "
                              "got ")
                 << constant.getType();
        index[&op] = addSlot(SlotKind::Op, &op);
        continue;
      }
      if (!isa<InstructionOpInterface>(op))
        return op.emitError("'")
               << op.getName()
               << "' is not a nova_isa instruction and cannot be encoded";
      index[&op] = addSlot(SlotKind::Op, &op);
    }
    return success();
  }

  //===------------------------------------------------------------------===//
  // Register allocation
  //===------------------------------------------------------------------===//

  /// The slot at which `value` is defined.
  uint32_t defSlot(Value value) {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return index.lookup(arg.getOwner()->getParentOp());
    return index.lookup(value.getDefiningOp());
  }

  /// The last slot at which `value` must still hold its register.
  uint32_t lastSlot(Value value) {
    Operation *defOp = isa<BlockArgument>(value)
                           ? cast<BlockArgument>(value).getOwner()->getParentOp()
                           : value.getDefiningOp();
    uint32_t end = defSlot(value);
    // An induction variable is incremented by its ENDLOOP.
    if (isa<BlockArgument>(value))
      end = std::max(end, closer.lookup(defOp));
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      end = std::max(end, index.lookup(user));
      // Live across the back edge of every loop around the use that does
      // not also hold the definition.
      for (Operation *parent = user->getParentOp();
           parent && parent != func.getOperation();
           parent = parent->getParentOp())
        if (isa<LoopOp>(parent) && !parent->isAncestor(defOp))
          end = std::max(end, closer.lookup(parent));
    }
    return end;
  }

  LogicalResult allocateRegisters() {
    using Active = std::pair<uint32_t, unsigned>; // (last slot, register)
    std::priority_queue<Active, std::vector<Active>, std::greater<Active>>
        active;
    std::bitset<kNumRegisters> used;
    for (auto [slotIndex, slot] : llvm::enumerate(slots)) {
      if (slot.kind != SlotKind::Op)
        continue;
      Value defined;
      if (auto loop = dyn_cast<LoopOp>(slot.op))
        defined = loop.getInductionVar();
      else if (slot.op->getNumResults() == 1)
        defined = slot.op->getResult(0);
      if (!defined)
        continue;
      // Operands are read before the result is written: a register whose
      // value dies here may be reused for the result.
      while (!active.empty() && active.top().first <= slotIndex) {
        used.reset(active.top().second);
        active.pop();
      }
      unsigned reg = 0;
      while (reg < kNumRegisters && used.test(reg))
        ++reg;
      if (reg == kNumRegisters)
        return slot.op->emitError("too many live scalar values: more than ")
               << kNumRegisters << " registers needed here";
      used.set(reg);
      registers[defined] = reg;
      active.push({lastSlot(defined), reg});
    }
    return success();
  }

  uint8_t reg(Value value) { return registers.lookup(value); }

  //===------------------------------------------------------------------===//
  // Encoding
  //===------------------------------------------------------------------===//

  uint16_t tileIndex(TileAttr tile) {
    auto [it, inserted] = tileIndices.try_emplace(tile, tiles.size());
    if (inserted)
      tiles.push_back(tile);
    return it->second;
  }

  uint16_t groupIndex(ArrayAttr groupList) {
    auto [it, inserted] = groupIndices.try_emplace(groupList, groups.size());
    if (inserted)
      groups.push_back(groupList);
    return it->second;
  }

  static uint64_t mask(std::optional<ArrayRef<int64_t>> ids) {
    uint64_t bits = 0;
    if (ids)
      for (int64_t id : *ids)
        bits |= uint64_t(1) << id;
    return bits;
  }

  /// A vscalar/vfill immediate: the integer itself for integer and i1 tiles
  /// (the lowering only emits integers exact in an f64; the i64 extremes,
  /// whose f64 forms round outward, saturate), f64 bits otherwise.
  /// imm0 of vscalar / vfill: the verifiers made `value` an i64 for an
  /// integer or i1 tile and an f64 otherwise (docs/isa.md 3.1, 3.2).
  static int64_t immediateFor(Attribute value) {
    return nova::immediateBits(value);
  }

  template <typename OpTy>
  void setSync(Word &word, OpTy op) {
    word.wait = mask(op.getWait());
    word.signal = mask(op.getSignal());
  }

  void setTile(Word &word, int slot, Value address, TileAttr tile) {
    word.tiles[slot] = tileIndex(tile);
    uint8_t r = reg(address);
    switch (slot) {
    case 0: word.ra = r; break;
    case 1: word.rb = r; break;
    case 2: word.rc = r; break;
    default: word.rdst = r; break;
    }
  }

  FailureOr<Word> encode(const Slot &slot) {
    Word word;
    word.engine = static_cast<uint8_t>(Engine::Scalar);
    switch (slot.kind) {
    case SlotKind::Halt:
      word.opcode = uint8_t(Opcode::Halt);
      return word;
    case SlotKind::EndLoop:
      word.opcode = uint8_t(Opcode::EndLoop);
      word.target = index.lookup(slot.op->getParentOp());
      return word;
    case SlotKind::Else:
      word.opcode = uint8_t(Opcode::Else);
      word.target = closer.lookup(slot.op->getParentOp());
      return word;
    case SlotKind::EndIf:
      word.opcode = uint8_t(Opcode::EndIf);
      return word;
    case SlotKind::Op:
      break;
    }
    Operation *op = slot.op;
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      word.opcode = uint8_t(Opcode::Li);
      word.rd = reg(constant.getResult());
      word.imm[0] = cast<IntegerAttr>(constant.getValue()).getInt();
      return word;
    }
    word.engine =
        static_cast<uint8_t>(cast<InstructionOpInterface>(op).getEngine());
    auto opcode = [&](Opcode code) { word.opcode = uint8_t(code); };
    LogicalResult result =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case<NopOp>([&](NopOp nop) {
              opcode(Opcode::Nop);
              if (std::optional<uint64_t> queue = nop.getQueue())
                word.queue = uint8_t(*queue);
              setSync(word, nop);
              return success();
            })
            .Case<HaltOp>([&](HaltOp) {
              opcode(Opcode::Halt);
              return success();
            })
            .Case<LiOp>([&](LiOp li) {
              opcode(Opcode::Li);
              word.rd = reg(li.getResult());
              word.imm[0] = li.getValue();
              return success();
            })
            .Case<SaluOp>([&](SaluOp salu) {
              opcode(Opcode::Salu);
              word.kind = uint8_t(salu.getKind());
              word.rd = reg(salu.getResult());
              word.ra = reg(salu.getLhs());
              word.rb = reg(salu.getRhs());
              return success();
            })
            .Case<ChipIdOp>([&](ChipIdOp chip) {
              opcode(Opcode::ChipId);
              word.rd = reg(chip.getResult());
              return success();
            })
            .Case<SemWaitOp>([&](SemWaitOp wait) {
              opcode(Opcode::SemWait);
              word.wait = mask(wait.getSemaphores());
              return success();
            })
            .Case<SemSignalOp>([&](SemSignalOp signal) {
              opcode(Opcode::SemSignal);
              word.signal = mask(signal.getSemaphores());
              return success();
            })
            .Case<LoopOp>([&](LoopOp loop) {
              opcode(Opcode::Loop);
              word.rd = reg(loop.getInductionVar());
              word.target = closer.lookup(op);
              if (Value lower = loop.getLower()) {
                word.flags |= kFlagLbReg;
                word.ra = reg(lower);
              } else {
                word.imm[0] = int64_t(*loop.getLowerImm());
              }
              if (Value upper = loop.getUpper()) {
                word.flags |= kFlagUbReg;
                word.rb = reg(upper);
              } else {
                word.imm[1] = int64_t(*loop.getUpperImm());
              }
              if (Value step = loop.getStep()) {
                word.flags |= kFlagStepReg;
                word.rc = reg(step);
              } else {
                word.imm[2] = int64_t(*loop.getStepImm());
              }
              return success();
            })
            .Case<IfOp>([&](IfOp branch) {
              opcode(Opcode::If);
              word.ra = reg(branch.getCondition());
              auto it = elseSlot.find(op);
              word.target =
                  it != elseSlot.end() ? it->second : closer.lookup(op);
              return success();
            })
            .Case<DmaCopyOp>([&](DmaCopyOp dma) {
              opcode(Opcode::DmaCopy);
              word.queue = uint8_t(dma.getQueue());
              setTile(word, 0, dma.getSource(), dma.getSourceTile());
              setTile(word, 3, dma.getTarget(), dma.getTargetTile());
              if (Value peer = dma.getPeer()) {
                word.flags |= kFlagPeer;
                word.rc = reg(peer);
              }
              setSync(word, dma);
              return success();
            })
            .Case<MatmulOp>([&](MatmulOp mm) {
              opcode(Opcode::Matmul);
              setTile(word, 0, mm.getLhs(), mm.getLhsTile());
              setTile(word, 1, mm.getRhs(), mm.getRhsTile());
              setTile(word, 3, mm.getAcc(), mm.getAccTile());
              if (mm.getAccumulate())
                word.flags |= kFlagAccumulate;
              setSync(word, mm);
              return success();
            })
            .Case<VUnaryOp>([&](VUnaryOp v) {
              opcode(Opcode::VUnary);
              word.kind = uint8_t(v.getKind());
              setTile(word, 0, v.getInput(), v.getInputTile());
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              setSync(word, v);
              return success();
            })
            .Case<VBinaryOp>([&](VBinaryOp v) {
              opcode(Opcode::VBinary);
              word.kind = uint8_t(v.getKind());
              setTile(word, 0, v.getLhs(), v.getLhsTile());
              setTile(word, 1, v.getRhs(), v.getRhsTile());
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              setSync(word, v);
              return success();
            })
            .Case<VScalarOp>([&](VScalarOp v) {
              opcode(Opcode::VScalar);
              word.kind = uint8_t(v.getKind());
              setTile(word, 0, v.getInput(), v.getInputTile());
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              // The scalar has the input's type (a comparison may write i1).
              word.imm[0] = immediateFor(v.getScalar());
              setSync(word, v);
              return success();
            })
            .Case<VFusedOp>([&](VFusedOp v) {
              opcode(Opcode::VFused);
              word.kind = uint8_t(v.getKind0());
              word.imm[2] = int64_t(v.getKind1());
              setTile(word, 0, v.getInput(), v.getInputTile());
              // An immediate operand leaves its tile slot unused (0xFFFF).
              if (v.getA())
                setTile(word, 1, v.getA(), *v.getATile());
              else
                word.imm[0] = immediateFor(*v.getAScalar());
              if (v.getB())
                setTile(word, 2, v.getB(), *v.getBTile());
              else
                word.imm[1] = immediateFor(*v.getBScalar());
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              setSync(word, v);
              return success();
            })
            .Case<VSelectOp>([&](VSelectOp v) {
              opcode(Opcode::VSelect);
              setTile(word, 0, v.getCondition(), v.getConditionTile());
              setTile(word, 1, v.getTrueValue(), v.getTrueTile());
              setTile(word, 2, v.getFalseValue(), v.getFalseTile());
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              setSync(word, v);
              return success();
            })
            .Case<VReduceOp>([&](VReduceOp v) {
              opcode(Opcode::VReduce);
              word.kind = uint8_t(v.getKind());
              setTile(word, 0, v.getInput(), v.getInputTile());
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              word.imm[0] = int64_t(v.getAxis());
              setSync(word, v);
              return success();
            })
            .Case<VTransposeOp>([&](VTransposeOp v) {
              opcode(Opcode::VTranspose);
              setTile(word, 0, v.getInput(), v.getInputTile());
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              uint64_t perm = 0;
              for (auto [k, p] : llvm::enumerate(v.getPerm()))
                perm |= uint64_t(p & 0xFF) << (8 * k);
              word.imm[0] = int64_t(perm);
              setSync(word, v);
              return success();
            })
            .Case<VFillOp>([&](VFillOp v) {
              opcode(Opcode::VFill);
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              word.imm[0] = immediateFor(v.getValue());
              if (Value r = v.getValueReg()) {
                word.flags |= kFlagScalarReg;
                word.ra = reg(r);
              }
              setSync(word, v);
              return success();
            })
            .Case<VIotaOp>([&](VIotaOp v) {
              opcode(Opcode::VIota);
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              word.imm[0] = int64_t(v.getAxis());
              setSync(word, v);
              return success();
            })
            .Case<VAssertOp>([&](VAssertOp v) {
              opcode(Opcode::VAssert);
              setTile(word, 0, v.getCondition(), v.getConditionTile());
              setSync(word, v);
              return success();
            })
            .Case<DmaGatherOp>([&](DmaGatherOp dma) {
              opcode(Opcode::DmaGather);
              word.queue = uint8_t(dma.getQueue());
              setTile(word, 0, dma.getSource(), dma.getSourceTile());
              setTile(word, 1, dma.getIndices(), dma.getIndicesTile());
              setTile(word, 3, dma.getTarget(), dma.getTargetTile());
              setSync(word, dma);
              return success();
            })
            .Case<DmaScatterOp>([&](DmaScatterOp dma) {
              opcode(Opcode::DmaScatter);
              word.queue = uint8_t(dma.getQueue());
              if (dma.getAccumulate())
                word.flags |= kFlagAccumulate;
              setTile(word, 0, dma.getSource(), dma.getSourceTile());
              setTile(word, 1, dma.getIndices(), dma.getIndicesTile());
              setTile(word, 3, dma.getTarget(), dma.getTargetTile());
              setSync(word, dma);
              return success();
            })
            .Case<VCopyOp>([&](VCopyOp v) {
              opcode(Opcode::VCopy);
              setTile(word, 0, v.getInput(), v.getInputTile());
              setTile(word, 3, v.getOutput(), v.getOutputTile());
              setSync(word, v);
              return success();
            })
            .Case<AllReduceOp>([&](AllReduceOp c) {
              opcode(Opcode::AllReduce);
              word.kind = uint8_t(c.getKind());
              setTile(word, 0, c.getInput(), c.getInputTile());
              setTile(word, 3, c.getOutput(), c.getOutputTile());
              word.group = groupIndex(c.getGroups());
              setSync(word, c);
              return success();
            })
            .Case<AllGatherOp>([&](AllGatherOp c) {
              opcode(Opcode::AllGather);
              setTile(word, 0, c.getInput(), c.getInputTile());
              setTile(word, 3, c.getOutput(), c.getOutputTile());
              word.group = groupIndex(c.getGroups());
              word.imm[0] = int64_t(c.getDim());
              setSync(word, c);
              return success();
            })
            .Case<ReduceScatterOp>([&](ReduceScatterOp c) {
              opcode(Opcode::ReduceScatter);
              word.kind = uint8_t(c.getKind());
              setTile(word, 0, c.getInput(), c.getInputTile());
              setTile(word, 3, c.getOutput(), c.getOutputTile());
              word.group = groupIndex(c.getGroups());
              word.imm[0] = int64_t(c.getDim());
              setSync(word, c);
              return success();
            })
            .Case<AllToAllOp>([&](AllToAllOp c) {
              opcode(Opcode::AllToAll);
              setTile(word, 0, c.getInput(), c.getInputTile());
              setTile(word, 3, c.getOutput(), c.getOutputTile());
              word.group = groupIndex(c.getGroups());
              word.imm[0] = int64_t(c.getSplitDim());
              word.imm[1] = int64_t(c.getConcatDim());
              setSync(word, c);
              return success();
            })
            .Case<SendOp>([&](SendOp c) {
              opcode(Opcode::Send);
              setTile(word, 0, c.getInput(), c.getInputTile());
              word.flags |= kFlagPeer;
              word.rc = reg(c.getPeer());
              word.imm[1] = int64_t(c.getChannel());
              setSync(word, c);
              return success();
            })
            .Case<RecvOp>([&](RecvOp c) {
              opcode(Opcode::Recv);
              setTile(word, 3, c.getOutput(), c.getOutputTile());
              word.flags |= kFlagPeer;
              word.rc = reg(c.getPeer());
              word.imm[1] = int64_t(c.getChannel());
              setSync(word, c);
              return success();
            })
            .Case<BarrierOp>([&](BarrierOp c) {
              opcode(Opcode::Barrier);
              word.group = groupIndex(c.getGroups());
              setSync(word, c);
              return success();
            })
            .Default([&](Operation *other) {
              return other->emitError("'")
                     << other->getName() << "' has no encoding";
            });
    if (failed(result))
      return failure();
    if (tiles.size() > kNoTile)
      return op->emitError("more than ")
             << kNoTile << " distinct tile descriptors in one program";
    if (groups.size() > 0xFFFF)
      return op->emitError("more than 65535 distinct replica-group lists in "
                           "one program");
    return word;
  }

  func::FuncOp func;
  std::vector<Slot> slots;
  /// Slot of every op (LOOP/IF for loop and if ops; the end op's slot).
  DenseMap<Operation *, uint32_t> index;
  /// ENDLOOP of a loop op, ENDIF of an if op.
  DenseMap<Operation *, uint32_t> closer;
  /// ELSE of an if op with a non-empty else region.
  DenseMap<Operation *, uint32_t> elseSlot;
  DenseMap<Value, unsigned> registers;
  DenseMap<Attribute, uint16_t> tileIndices;
  DenseMap<Attribute, uint16_t> groupIndices;
  std::vector<TileAttr> tiles;
  std::vector<ArrayAttr> groups;
};

} // namespace

FailureOr<ProgramImage> mlir::nova::binary::encodeProgram(func::FuncOp func) {
  return ProgramEncoder(func).run();
}
