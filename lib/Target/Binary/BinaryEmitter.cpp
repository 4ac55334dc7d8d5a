//===- BinaryEmitter.cpp - nova_isa module to .nova binary ------*- C++ -*-===//
//
// Frames the programs of a module into the file of docs/binary-format.md:
// header, target JSON, section table, per-program CODE/TILES/GROUPS/DEBUG
// sections, the IO and CONSTANTS sections, and the CRC-32 trailer.
//
//===----------------------------------------------------------------------===//
#include "nova/Dialect/Nova/IR/ElementTypes.h"
#include "nova/Target/Binary/BinaryEmitter.h"

#include "ProgramEncoder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"
#include "nova/Dialect/Nova/IR/ActivationEngine.h"
#include "nova/Dialect/NovaISA/IR/NovaISADialect.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <map>

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::binary;

namespace {

using ChipMask = std::array<uint64_t, 4>;

//===----------------------------------------------------------------------===//
// Little-endian byte buffer
//===----------------------------------------------------------------------===//

struct Buffer {
  std::string bytes;

  void u8(uint8_t v) { bytes.push_back(char(v)); }
  void u16(uint16_t v) {
    char b[2];
    llvm::support::endian::write16le(b, v);
    bytes.append(b, 2);
  }
  void u32(uint32_t v) {
    char b[4];
    llvm::support::endian::write32le(b, v);
    bytes.append(b, 4);
  }
  void u64(uint64_t v) {
    char b[8];
    llvm::support::endian::write64le(b, v);
    bytes.append(b, 8);
  }
  void raw(StringRef s) { bytes.append(s.data(), s.size()); }
  void zeros(size_t n) { bytes.append(n, '\0'); }
  void alignTo(uint64_t a) {
    zeros((a - bytes.size() % a) % a);
  }
  void put32(size_t at, uint32_t v) {
    llvm::support::endian::write32le(&bytes[at], v);
  }
  void put64(size_t at, uint64_t v) {
    llvm::support::endian::write64le(&bytes[at], v);
  }
  size_t size() const { return bytes.size(); }
};

/// Strings of a section, deduplicated, stored after its fixed part.
struct StringTable {
  std::string data;
  llvm::StringMap<uint32_t> offsets;

  /// Offset of `s` inside the table.
  uint32_t add(StringRef s) {
    auto [it, inserted] = offsets.try_emplace(s, data.size());
    if (inserted)
      data.append(s.data(), s.size());
    return it->second;
  }
};

struct Section {
  SectionType type;
  ChipMask chips;
  std::string bytes;
};

//===----------------------------------------------------------------------===//
// Program tables
//===----------------------------------------------------------------------===//

std::string encodeCode(const ProgramImage &image) {
  std::string out;
  out.reserve(image.code.size() * kWordBytes);
  for (const Word &word : image.code)
    word.appendTo(out);
  return out;
}

uint8_t tileDType(Type type) {
  // The tile verifier admits only types that have a code.
  return *nova::tileElementCode(type);
}

std::string encodeTiles(const ProgramImage &image) {
  Buffer b;
  for (nova_isa::TileAttr tile : image.tiles) {
    b.u8(uint8_t(tile.getMemorySpace()));
    b.u8(tileDType(tile.getElementType()));
    b.u8(uint8_t(tile.getRank()));
    b.u8(0);
    b.u32(0);
    for (unsigned i = 0; i < 4; ++i)
      b.u32(i < tile.getShape().size() ? uint32_t(tile.getShape()[i]) : 1);
    for (unsigned i = 0; i < 4; ++i)
      b.u32(i < tile.getStrides().size() ? uint32_t(tile.getStrides()[i]) : 0);
    b.u64(0);
  }
  return b.bytes;
}

std::string encodeGroups(const ProgramImage &image) {
  Buffer b;
  b.u32(image.groups.size());
  size_t offsets = b.size();
  b.zeros(4 * image.groups.size());
  for (auto [g, list] : llvm::enumerate(image.groups)) {
    b.put32(offsets + 4 * g, b.size());
    auto first = cast<DenseI64ArrayAttr>(list[0]);
    b.u16(list.size());
    b.u16(first.size());
    b.u32(0);
    for (Attribute group : list)
      for (int64_t chip : cast<DenseI64ArrayAttr>(group).asArrayRef())
        b.u32(uint32_t(chip));
  }
  return b.bytes;
}

/// The DEBUG section of a program, or "" when no instruction has a location.
std::string encodeDebug(const ProgramImage &image) {
  std::vector<std::pair<uint32_t, std::string>> entries;
  for (auto [index, op] : llvm::enumerate(image.origins)) {
    std::string text = renderLocation(op->getLoc());
    // An assertion's fault message travels with its location (isa.md 2.6).
    if (auto check = dyn_cast<nova_isa::VAssertOp>(op))
      text = (text.empty() ? "" : text + ": ") + check.getMessage().str();
    if (!text.empty())
      entries.emplace_back(index, std::move(text));
  }
  if (entries.empty())
    return "";
  Buffer b;
  StringTable strings;
  uint32_t stringBase = 8 + kDebugEntryBytes * entries.size();
  b.u32(entries.size());
  b.u32(0);
  for (auto &[index, text] : entries) {
    b.u32(index);
    b.u32(0);
    b.u32(stringBase + strings.add(text));
    b.u32(text.size());
  }
  b.raw(strings.data);
  return b.bytes;
}

//===----------------------------------------------------------------------===//
// IO and constants
//===----------------------------------------------------------------------===//

struct ElementInfo {
  uint8_t code;
  unsigned bytes;
};

std::optional<ElementInfo> ioElement(Type type) {
  if (type.isF32())
    return ElementInfo{uint8_t(IODType::F32), 4};
  if (type.isBF16())
    return ElementInfo{uint8_t(IODType::BF16), 2};
  if (type.isF16())
    return ElementInfo{uint8_t(IODType::F16), 2};
  if (type.isF64())
    return ElementInfo{uint8_t(IODType::F64), 8};
  if (auto integer = dyn_cast<IntegerType>(type)) {
    switch (integer.getWidth()) {
    case 64: return ElementInfo{uint8_t(IODType::I64), 8};
    case 32: return ElementInfo{uint8_t(IODType::I32), 4};
    case 16: return ElementInfo{uint8_t(IODType::I16), 2};
    case 8: return ElementInfo{uint8_t(IODType::I8), 1};
    case 1: return ElementInfo{uint8_t(IODType::I1), 1};
    default: break;
    }
  }
  return std::nullopt;
}

/// One argument's IO table entry, checked against the target.
struct IOEntry {
  uint32_t index;
  uint8_t role, dtype, rank;
  /// Bit 0: an output written in place over the input at its address.
  uint8_t flags = 0;
  std::string name;
  uint64_t address, byteSize;
  SmallVector<int64_t> shape;

  bool operator==(const IOEntry &o) const {
    return index == o.index && role == o.role && dtype == o.dtype &&
           flags == o.flags &&
           name == o.name && address == o.address && shape == o.shape;
  }
};

FailureOr<std::vector<IOEntry>> collectIO(func::FuncOp func,
                                          TargetAttr target) {
  std::vector<IOEntry> entries;
  llvm::StringSet<> names;
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto fail = [&]() {
      return func.emitOpError("argument ") << i << " ";
    };
    if (isa<IndexType>(arg.getType()))
      return fail() << "is an index value: a program starts with no register "
                       "set; materialise it with nova_isa.li";
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type)
      return fail() << "must be a memref in hbm, got " << arg.getType();
    if (getMemorySpace(type) != MemorySpace::HBM)
      return fail() << "must live in hbm";
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return fail() << "must have a static shape and an identity layout";
    // A stack of other arguments (nova-roll-layers) is no entry of its
    // own: its members are, at their slots inside it (checked below).
    if (func.getArgAttr(i, NovaDialect::StackOfAttrHelper::getNameStr()))
      continue;
    if (type.getRank() > int64_t(kMaxIORank))
      return fail() << "has rank " << type.getRank() << ", more than "
                    << kMaxIORank;
    std::optional<ElementInfo> element = ioElement(type.getElementType());
    if (!element)
      return fail() << "has an element type the runtime cannot bind: "
                    << type.getElementType();
    auto address = func.getArgAttrOfType<IntegerAttr>(i,
        NovaDialect::AddressAttrHelper::getNameStr());
    if (!address || address.getInt() < 0)
      return fail() << "needs a non-negative i64 'nova.address'";
    auto role = func.getArgAttrOfType<StringAttr>(i, NovaDialect::RoleAttrHelper::getNameStr());
    if (!role || (role.getValue() != "input" && role.getValue() != "output"))
      return fail() << "needs 'nova.role' = \"input\" or \"output\"";
    IOEntry entry;
    entry.index = i;
    entry.role = role.getValue() == "input" ? 0 : 1;
    entry.dtype = element->code;
    entry.rank = type.getRank();
    if (auto name = func.getArgAttrOfType<StringAttr>(i, NovaDialect::NameAttrHelper::getNameStr()))
      entry.name = name.getValue().str();
    else
      entry.name = ("arg" + llvm::Twine(i)).str();
    if (entry.name.empty())
      return fail() << "has an empty 'nova.name'";
    if (!names.insert(entry.name).second)
      return fail() << "repeats the name '" << entry.name << "'";
    entry.address = address.getInt();
    entry.byteSize = uint64_t(type.getNumElements()) * element->bytes;
    entry.shape.assign(type.getShape().begin(), type.getShape().end());
    if (entry.address + entry.byteSize > uint64_t(target.getHbmBytes()))
      return fail() << "ends at HBM byte " << entry.address + entry.byteSize
                    << ", beyond hbm_bytes = " << target.getHbmBytes();
    if (auto input = func.getArgAttrOfType<IntegerAttr>(i,
        NovaDialect::AliasesAttrHelper::getNameStr())) {
      const IOEntry *donor = nullptr;
      for (const IOEntry &e : entries)
        if (int64_t(e.index) == input.getInt())
          donor = &e;
      if (entry.role != 1 || !donor || donor->role != 0 ||
          donor->address != entry.address || donor->dtype != entry.dtype ||
          donor->shape != entry.shape)
        return fail() << "has 'nova.aliases' = " << input.getInt()
                      << " but is not an output at the address, dtype and "
                         "shape of an earlier input";
      entry.flags = 1;
    }
    entries.push_back(std::move(entry));
  }
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto members = func.getArgAttrOfType<DenseI64ArrayAttr>(i,
        NovaDialect::StackOfAttrHelper::getNameStr());
    if (!members)
      continue;
    auto fail = [&]() {
      return func.emitOpError("argument ") << i << " ";
    };
    auto address = func.getArgAttrOfType<IntegerAttr>(i,
        NovaDialect::AddressAttrHelper::getNameStr());
    auto type = cast<MemRefType>(arg.getType());
    if (!address || type.getRank() < 1 ||
        type.getDimSize(0) != int64_t(members.size()))
      return fail() << "stacks " << members.size()
                    << " arguments but has no 'nova.address' or a first "
                       "dimension of another size";
    uint64_t slotBytes =
        uint64_t(type.getNumElements() / type.getDimSize(0)) *
        ((type.getElementTypeBitWidth() + 7) / 8);
    for (auto [k, m] : llvm::enumerate(members.asArrayRef())) {
      const IOEntry *member = nullptr;
      for (const IOEntry &e : entries)
        if (int64_t(e.index) == m)
          member = &e;
      if (!member || member->role != 0 || member->byteSize != slotBytes ||
          member->address != uint64_t(address.getInt()) + k * slotBytes)
        return fail() << "stacks argument " << m << " at slot " << k
                      << ", which is not an input lying at that slot";
    }
  }
  if (func.getNumResults() != 0)
    return func.emitOpError("must not return values: outputs are memref "
                            "arguments with nova.role = \"output\"");
  return entries;
}

std::string encodeIO(const std::vector<IOEntry> &entries) {
  Buffer b;
  StringTable strings;
  uint32_t stringBase = 8 + kIOEntryBytes * entries.size();
  b.u32(entries.size());
  b.u32(0);
  for (const IOEntry &e : entries) {
    b.u32(e.index);
    b.u8(e.role);
    b.u8(e.dtype);
    b.u8(e.rank);
    b.u8(e.flags);
    b.u32(stringBase + strings.add(e.name));
    b.u32(e.name.size());
    b.u64(e.address);
    b.u64(e.byteSize);
    for (unsigned d = 0; d < kMaxIORank; ++d)
      b.u64(d < e.shape.size() ? uint64_t(e.shape[d]) : 0);
  }
  b.raw(strings.data);
  return b.bytes;
}

/// The dense row-major bytes of a global's initial value.
FailureOr<std::string> constantBytes(memref::GlobalOp global) {
  auto type = global.getType();
  std::optional<ElementInfo> element = ioElement(type.getElementType());
  Attribute init = global.getInitialValue().value_or(Attribute());
  if (!init)
    return global.emitOpError("needs a dense initial value to be placed in HBM");
  if (!element || !type.hasStaticShape())
    return global.emitOpError("must have a static shape and a supported "
                              "element type to be placed in HBM");
  uint64_t expected = uint64_t(type.getNumElements()) * element->bytes;
  std::string out;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(init)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return global.emitOpError("has a dense_resource without data");
    ArrayRef<char> data = blob->getData();
    out.assign(data.begin(), data.end());
  } else if (auto dense = dyn_cast<DenseElementsAttr>(init)) {
    out.reserve(expected);
    auto put = [&](const APInt &bits) {
      unsigned n = element->bytes;
      uint64_t v = bits.getZExtValue();
      for (unsigned k = 0; k < n; ++k)
        out.push_back(char((v >> (8 * k)) & 0xFF));
    };
    if (isa<FloatType>(type.getElementType())) {
      for (APFloat value : dense.getValues<APFloat>())
        put(value.bitcastToAPInt());
    } else {
      for (APInt value : dense.getValues<APInt>())
        put(value);
    }
  } else {
    return global.emitOpError("has an initial value that is neither dense "
                              "nor dense_resource");
  }
  if (out.size() != expected)
    return global.emitOpError("initial value has ")
           << out.size() << " bytes, expected " << expected;
  return out;
}

FailureOr<std::string> encodeConstants(ArrayRef<memref::GlobalOp> globals,
                                       TargetAttr target) {
  std::vector<std::string> blobs;
  for (memref::GlobalOp global : globals) {
    FailureOr<std::string> bytes = constantBytes(global);
    if (failed(bytes))
      return failure();
    auto address = global->getAttrOfType<IntegerAttr>(NovaDialect::AddressAttrHelper::getNameStr());
    if (uint64_t(address.getInt()) + bytes->size() >
        uint64_t(target.getHbmBytes()))
      return global.emitOpError("ends at HBM byte ")
             << address.getInt() + bytes->size()
             << ", beyond hbm_bytes = " << target.getHbmBytes();
    blobs.push_back(std::move(*bytes));
  }
  Buffer b;
  b.u32(globals.size());
  b.u32(0);
  size_t entries = b.size();
  b.zeros(kConstantEntryBytes * globals.size());
  std::vector<uint64_t> dataOffsets;
  for (const std::string &blob : blobs) {
    b.alignTo(kAlignment);
    dataOffsets.push_back(b.size());
    b.raw(blob);
  }
  for (auto [i, globalOp] : llvm::enumerate(globals)) {
    memref::GlobalOp global = globalOp;
    size_t at = entries + kConstantEntryBytes * i;
    StringRef name = global.getSymName();
    b.put64(at, global->getAttrOfType<IntegerAttr>(
        NovaDialect::AddressAttrHelper::getNameStr()).getInt());
    b.put64(at + 8, dataOffsets[i]);
    b.put64(at + 16, blobs[i].size());
    b.put32(at + 24, b.size());
    b.put32(at + 28, name.size());
    b.raw(name);
  }
  return b.bytes;
}

//===----------------------------------------------------------------------===//
// Target JSON and header
//===----------------------------------------------------------------------===//

std::string targetJson(TargetAttr t) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "{\"name\":\"";
  llvm::printEscapedString(t.getName(), os);
  os << "\"";
  auto field = [&](StringRef key, int64_t value) {
    os << ",\"" << key << "\":" << value;
  };
  field("clock_mhz", t.getClockMhz());
  field("matrix_rows", t.getMatrixRows());
  field("matrix_cols", t.getMatrixCols());
  field("vector_lanes", t.getVectorLanes());
  field("sram_bytes", t.getSramBytes());
  field("sram_gbps", t.getSramGbps());
  field("acc_bytes", t.getAccBytes());
  field("hbm_bytes", t.getHbmBytes());
  field("hbm_gbps", t.getHbmGbps());
  field("dma_engines", t.getDmaEngines());
  field("chips", t.getChips());
  os << ",\"topology\":\"" << stringifyTopology(t.getTopology()) << "\"";
  field("link_gbps", t.getLinkGbps());
  field("link_latency_ns", t.getLinkLatencyNs());
  // Several nodes: only when set, so one-node binaries are unchanged.
  if (t.getChipsPerNode() > 0) {
    field("chips_per_node", t.getChipsPerNode());
    if (t.getNicsPerNode() > 0)
      field("nics_per_node", t.getNicsPerNode());
    field("nic_gbps", t.getNicGbps());
    field("nic_latency_ns", t.getNicLatencyNs());
  }
  // The simulator's timing constants, as the target file gave them (a module
  // without them yields a binary the simulator refuses, naming the key).
  if (DictionaryAttr timing = t.getTiming()) {
    llvm::json::Object object;
    auto scalar = [](llvm::json::Object &into, NamedAttribute entry) {
      Attribute value = entry.getValue();
      if (auto b = dyn_cast<BoolAttr>(value))
        into[entry.getName().str()] = b.getValue();
      else if (auto i = dyn_cast<IntegerAttr>(value))
        into[entry.getName().str()] = i.getInt();
      else if (auto f = dyn_cast<FloatAttr>(value))
        into[entry.getName().str()] = f.getValueAsDouble();
      else if (auto s = dyn_cast<StringAttr>(value))
        into[entry.getName().str()] = s.getValue().str();
    };
    // The activation engine's block is a key of the target, not a timing
    // constant (nova/Dialect/Nova/IR/ActivationEngine.h).
    if (DictionaryAttr block = getActivationBlock(t)) {
      llvm::json::Object activation;
      for (NamedAttribute entry : block)
        scalar(activation, entry);
      os << ",\"activation\":" << llvm::json::Value(std::move(activation));
    }
    for (NamedAttribute entry : timing) {
      if (entry.getName() != kActivationKey)
        scalar(object, entry);
    }
    os << ",\"timing\":" << llvm::json::Value(std::move(object));
  }
  os << "}";
  return out;
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

struct Program {
  func::FuncOp func;
  ChipMask chips{};
  ProgramImage image;
};

struct ModuleImage {
  TargetAttr target;
  std::vector<Program> programs;
  std::vector<IOEntry> io;
  std::string constants;
};

FailureOr<ModuleImage> encodeModule(ModuleOp module) {
  ModuleImage result;
  result.target = module->getAttrOfType<TargetAttr>(NovaDialect::getTargetAttrName());
  if (!result.target)
    return module.emitError("module needs a 'nova.target' attribute to be "
                            "encoded (it gives the target description)");
  TargetAttr target = result.target;
  int64_t chips = target.getChips();
  if (chips < 1 || chips > int64_t(kMaxChips))
    return module.emitError("the binary format supports 1..")
           << kMaxChips << " chips, target has " << chips;
  if (target.getName().size() >= kTargetNameBytes)
    return module.emitError("target name '")
           << target.getName() << "' is longer than "
           << kTargetNameBytes - 1 << " bytes";

  std::vector<func::FuncOp> funcs;
  std::vector<memref::GlobalOp> globals;
  for (Operation &op : module.getBody()->getOperations()) {
    if (auto func = dyn_cast<func::FuncOp>(op)) {
      if (!func.isDeclaration())
        funcs.push_back(func);
      continue;
    }
    if (auto global = dyn_cast<memref::GlobalOp>(op)) {
      if (!global->getAttrOfType<IntegerAttr>(NovaDialect::AddressAttrHelper::getNameStr()))
        return global.emitOpError("needs an i64 'nova.address' (its HBM "
                                  "byte offset) to be placed in the binary");
      globals.push_back(global);
      continue;
    }
    return op.emitError("'") << op.getName()
                             << "' cannot be encoded at module level";
  }
  if (funcs.empty())
    return module.emitError("module has no program function to encode");

  ChipMask covered{};
  for (func::FuncOp func : funcs) {
    Program program;
    program.func = func;
    auto chipList = func->getAttrOfType<DenseI64ArrayAttr>(
        NovaDialect::ChipsAttrHelper::getNameStr());
    if (!chipList) {
      if (funcs.size() > 1)
        return func.emitOpError("needs 'nova.chips' when the module holds "
                                "several programs");
      for (int64_t c = 0; c < chips; ++c)
        program.chips[c / 64] |= uint64_t(1) << (c % 64);
    } else {
      if (chipList.empty())
        return func.emitOpError("has an empty 'nova.chips'");
      for (int64_t c : chipList.asArrayRef()) {
        if (c < 0 || c >= chips)
          return func.emitOpError("chip ")
                 << c << " in 'nova.chips' is out of range [0, " << chips
                 << ")";
        uint64_t bit = uint64_t(1) << (c % 64);
        if (covered[c / 64] & bit)
          return func.emitOpError("chip ")
                 << c << " already runs another program";
        program.chips[c / 64] |= bit;
      }
    }
    for (int w = 0; w < 4; ++w)
      covered[w] |= program.chips[w];

    FailureOr<std::vector<IOEntry>> io = collectIO(func, target);
    if (failed(io))
      return failure();
    if (result.programs.empty())
      result.io = std::move(*io);
    else if (*io != result.io)
      return func.emitOpError("must declare the same arguments as @")
             << result.programs.front().func.getSymName()
             << " (the IO table describes them once)";

    FailureOr<ProgramImage> image = encodeProgram(func);
    if (failed(image))
      return failure();
    program.image = std::move(*image);
    result.programs.push_back(std::move(program));
  }
  for (int64_t c = 0; c < chips; ++c)
    if (!(covered[c / 64] & (uint64_t(1) << (c % 64))))
      return module.emitError("chip ") << c << " runs no program";

  if (!globals.empty()) {
    FailureOr<std::string> constants = encodeConstants(globals, target);
    if (failed(constants))
      return failure();
    result.constants = std::move(*constants);
  }
  return result;
}

/// The lowest ISA version that expresses the module: 5 only when it holds a
/// VFUSED, 4 only when a NOP names a dma queue other than 0, 3 only when some
/// instruction runs on the activation engine, so programs without them
/// encode exactly as before (docs/isa.md 4).
uint16_t isaVersionOf(const ModuleImage &image) {
  uint16_t version = kIsaVersionBase;
  for (const Program &program : image.programs)
    for (const auto &word : program.image.code) {
      if (word.opcode == uint8_t(Opcode::VFused))
        return kIsaVersion;
      if (word.opcode == uint8_t(Opcode::Nop) && word.engine == kEngineDma &&
          word.queue != 0)
        version = kIsaVersionQueuedNop;
      if (word.engine == kEngineActivation)
        version = std::max(version, kIsaVersionActivation);
    }
  return version;
}

std::string frame(const ModuleImage &image) {
  std::vector<Section> sections;
  uint16_t isaVersion = isaVersionOf(image);
  for (const Program &program : image.programs) {
    sections.push_back(
        {SectionType::Code, program.chips, encodeCode(program.image)});
    sections.push_back(
        {SectionType::Tiles, program.chips, encodeTiles(program.image)});
    sections.push_back(
        {SectionType::Groups, program.chips, encodeGroups(program.image)});
    std::string debug = encodeDebug(program.image);
    if (!debug.empty())
      sections.push_back({SectionType::Debug, program.chips, std::move(debug)});
  }
  sections.push_back({SectionType::IO, ChipMask{}, encodeIO(image.io)});
  if (!image.constants.empty())
    sections.push_back({SectionType::Constants, ChipMask{}, image.constants});

  TargetAttr target = image.target;
  std::string json = targetJson(target);
  Buffer b;
  b.raw(StringRef(kMagic, 4));
  b.u16(kFormatVersion);
  b.u16(isaVersion);
  b.u32(0);
  b.u32(sections.size());
  b.u64(0); // file_size, patched below
  b.u64(kHeaderBytes);
  b.u64(json.size());
  b.u64(0); // section_table_offset, patched below
  b.u32(target.getChips());
  b.u32(0);
  std::string name = target.getName().str();
  name.resize(kTargetNameBytes, '\0');
  b.raw(name);
  b.zeros(kHeaderBytes - b.size());

  b.raw(json);
  b.alignTo(kAlignment);
  b.put64(40, b.size());
  size_t table = b.size();
  b.zeros(kSectionEntryBytes * sections.size());
  for (auto [i, section] : llvm::enumerate(sections)) {
    b.alignTo(kAlignment);
    size_t at = table + kSectionEntryBytes * i;
    b.put32(at, uint32_t(section.type));
    b.put64(at + 8, b.size());
    b.put64(at + 16, section.bytes.size());
    for (int w = 0; w < 4; ++w)
      b.put64(at + 32 + 8 * w, section.chips[w]);
    b.raw(section.bytes);
  }
  b.alignTo(kAlignment);
  b.put64(16, b.size() + kTrailerBytes);
  b.raw(StringRef(kTrailerTag, 4));
  uint32_t crc = llvm::crc32(ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(b.bytes.data()), b.size()));
  b.u32(crc);
  return b.bytes;
}

void registerDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, func::FuncDialect,
                  memref::MemRefDialect, nova::NovaDialect,
                  nova_isa::NovaISADialect>();
}

} // namespace

LogicalResult mlir::nova::translateToNovaBinary(ModuleOp module,
                                                raw_ostream &os) {
  FailureOr<ModuleImage> image = encodeModule(module);
  if (failed(image))
    return failure();
  std::string bytes = frame(*image);
  os.write(bytes.data(), bytes.size());
  return success();
}

LogicalResult mlir::nova::translateToNovaBinaryText(ModuleOp module,
                                                    raw_ostream &os) {
  FailureOr<ModuleImage> image = encodeModule(module);
  if (failed(image))
    return failure();
  os << "// target " << image->target.getName() << ", "
     << image->target.getChips() << " chips, format " << kFormatVersion
     << ", isa " << isaVersionOf(*image) << "\n";
  for (const Program &program : image->programs) {
    func::FuncOp func = program.func;
    os << "program @" << func.getSymName() << " chips [";
    bool first = true;
    for (unsigned c = 0; c < kMaxChips; ++c)
      if (program.chips[c / 64] & (uint64_t(1) << (c % 64))) {
        os << (first ? "" : ", ") << c;
        first = false;
      }
    os << "]\n";
    for (auto [i, word] : llvm::enumerate(program.image.code)) {
      std::string bytes;
      word.appendTo(bytes);
      os << llvm::format("%6u: ", unsigned(i));
      for (unsigned k = 0; k < kWordBytes; ++k)
        os << llvm::format("%02x", uint8_t(bytes[k]))
           << ((k % 8 == 7 && k != kWordBytes - 1) ? " " : "");
      Operation *origin = program.image.origins[i];
      os << "  " << origin->getName();
      std::string loc = renderLocation(origin->getLoc());
      if (!loc.empty())
        os << "  @ " << loc;
      os << "\n";
    }
    for (auto [i, tile] : llvm::enumerate(program.image.tiles))
      os << "  tile " << i << " = " << Attribute(tile) << "\n";
    for (auto [i, groups] : llvm::enumerate(program.image.groups))
      os << "  group " << i << " = " << Attribute(groups) << "\n";
  }
  for (const IOEntry &e : image->io)
    os << "io " << e.index << " " << (e.role ? "output" : "input") << " '"
       << e.name << "' @" << e.address << " " << e.byteSize << " bytes"
       << (e.flags & 1 ? " (in place over an input)" : "") << "\n";
  return success();
}

void mlir::nova::registerToNovaBinaryTranslations() {
  TranslateFromMLIRRegistration binary(
      "nova-to-binary", "encode nova_isa programs into a .nova binary",
      [](Operation *op, raw_ostream &os) {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return LogicalResult(op->emitError("expected a builtin.module"));
        return translateToNovaBinary(module, os);
      },
      registerDialects);
  TranslateFromMLIRRegistration text(
      "nova-to-binary-text",
      "print the encoded words of nova_isa programs (human-readable)",
      [](Operation *op, raw_ostream &os) {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return LogicalResult(op->emitError("expected a builtin.module"));
        return translateToNovaBinaryText(module, os);
      },
      registerDialects);
}
