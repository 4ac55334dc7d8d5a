//===- ProgramEncoder.h - one func.func to instruction words ----*- C++ -*-===//
#ifndef NOVA_LIB_TARGET_BINARY_PROGRAMENCODER_H
#define NOVA_LIB_TARGET_BINARY_PROGRAMENCODER_H

#include "nova/Dialect/NovaISA/IR/NovaISAOps.h"
#include "nova/Target/Binary/BinaryFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include <string>
#include <vector>

namespace mlir::nova::binary {

/// One 64-byte instruction word, field by field (docs/isa.md 3.1).
struct Word {
  uint8_t opcode = 0, engine = 0, kind = 0, flags = 0, queue = 0;
  uint8_t rd = 0, ra = 0, rb = 0, rc = 0, rdst = 0;
  uint16_t tiles[4] = {kNoTile, kNoTile, kNoTile, kNoTile};
  uint16_t group = 0;
  uint32_t target = 0;
  uint64_t wait = 0, signal = 0;
  int64_t imm[3] = {0, 0, 0};

  /// Appends the little-endian 64 bytes of the word to `out`.
  void appendTo(std::string &out) const;
};

/// The encoded code and tables of one program (one function).
struct ProgramImage {
  std::vector<Word> code;
  /// The op each word came from (ENDLOOP/ELSE/ENDIF: the end op; the final
  /// HALT: func.return).
  std::vector<Operation *> origins;
  std::vector<nova_isa::TileAttr> tiles;
  std::vector<ArrayAttr> groups;
};

/// Allocates registers and encodes `func`; emits a diagnostic and fails on
/// an op that is not an instruction or on register pressure above 256.
FailureOr<ProgramImage> encodeProgram(func::FuncOp func);

/// The text of a location for the debug section ("file:line:col" when a file
/// location is found), or "" for an unknown location.
std::string renderLocation(Location loc);

} // namespace mlir::nova::binary

#endif // NOVA_LIB_TARGET_BINARY_PROGRAMENCODER_H
