//===- BinaryFormat.h - constants of the .nova file format ------*- C++ -*-===//
//
// The numbers of docs/binary-format.md (format version 1) and of the
// instruction encoding of docs/isa.md section 3 (ISA versions 2, 3 and 4).
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_TARGET_BINARY_BINARYFORMAT_H
#define NOVA_TARGET_BINARY_BINARYFORMAT_H

#include <cstdint>

namespace mlir::nova::binary {

constexpr char kMagic[4] = {'N', 'O', 'V', 'A'};
constexpr char kTrailerTag[4] = {'N', 'C', 'R', 'C'};
constexpr uint16_t kFormatVersion = 1;
/// ISA version 3 = version 2 plus the activation engine (engine code 5);
/// version 4 = version 3 plus the `queue` byte of a NOP on dma; version 5 =
/// version 4 plus VFUSED. An encoder writes the lowest version that expresses
/// the program: 5 only for a VFUSED, else 4 only for a NOP on a dma queue
/// other than 0, else 3 only for the activation engine, else 2.
constexpr uint16_t kIsaVersion = 5;
constexpr uint16_t kIsaVersionQueuedNop = 4;
constexpr uint16_t kIsaVersionActivation = 3;
constexpr uint16_t kIsaVersionBase = 2;
/// Engine byte of an instruction on the activation engine (docs/isa.md 3.1).
constexpr uint8_t kEngineActivation = 5;
/// Engine byte of a DMA instruction (docs/isa.md 3.1).
constexpr uint8_t kEngineDma = 3;
constexpr uint64_t kHeaderBytes = 128;
constexpr uint64_t kSectionEntryBytes = 64;
constexpr uint64_t kTrailerBytes = 8;
constexpr uint64_t kAlignment = 64;
constexpr uint64_t kTargetNameBytes = 32;
constexpr unsigned kMaxChips = 256;

constexpr uint64_t kWordBytes = 64;
constexpr uint64_t kTileEntryBytes = 48;
constexpr uint64_t kIOEntryBytes = 96;
constexpr uint64_t kConstantEntryBytes = 32;
constexpr uint64_t kDebugEntryBytes = 16;
constexpr unsigned kMaxIORank = 8;
constexpr uint16_t kNoTile = 0xFFFF;
constexpr unsigned kNumRegisters = 256;

enum class SectionType : uint32_t {
  Code = 1,
  Tiles = 2,
  Groups = 3,
  IO = 4,
  Constants = 5,
  Debug = 6,
};

enum class Opcode : uint8_t {
  Nop = 0x00,
  Halt = 0x01,
  Li = 0x10,
  Salu = 0x11,
  ChipId = 0x12,
  SemWait = 0x13,
  SemSignal = 0x14,
  Loop = 0x18,
  EndLoop = 0x19,
  If = 0x1A,
  Else = 0x1B,
  EndIf = 0x1C,
  DmaCopy = 0x20,
  DmaGather = 0x21,
  DmaScatter = 0x22,
  Matmul = 0x30,
  VUnary = 0x40,
  VBinary = 0x41,
  VScalar = 0x42,
  VSelect = 0x43,
  VReduce = 0x44,
  VTranspose = 0x45,
  VFill = 0x46,
  VCopy = 0x47,
  VIota = 0x48,
  VAssert = 0x49,
  VScan = 0x4A,
  VSort = 0x4B,
  VFused = 0x4C,
  AllReduce = 0x50,
  AllGather = 0x51,
  ReduceScatter = 0x52,
  AllToAll = 0x53,
  Send = 0x54,
  Recv = 0x55,
  Barrier = 0x56,
};

/// Flag bits of the instruction word (docs/isa.md 3.3).
enum Flag : uint8_t {
  kFlagLbReg = 1 << 0,
  kFlagUbReg = 1 << 1,
  kFlagStepReg = 1 << 2,
  kFlagPeer = 1 << 3,
  kFlagScalarReg = 1 << 4,
  kFlagAccumulate = 1 << 5,
  kFlagDescending = 1 << 6,
};

/// I/O element types (docs/binary-format.md 4.4).
enum class IODType : uint8_t {
  F32 = 0, BF16 = 1, F16 = 2, F64 = 3, I64 = 4, I32 = 5, I16 = 6, I8 = 7,
  I1 = 8,
};

} // namespace mlir::nova::binary

#endif // NOVA_TARGET_BINARY_BINARYFORMAT_H
