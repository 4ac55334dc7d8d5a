//===- ElementTypes.h - element types tiles may hold ------------*- C++ -*-===//
//
// The one list of element types the accelerator stores and computes on
// (docs/isa.md 1.3): floats f32/bf16/f16, integers i64/i32/i8 and i1 (bool, one
// byte per element). Every layer (nova ops, nova_isa tiles, the encoder) asks
// here instead of repeating the list.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_DIALECT_NOVA_IR_ELEMENTTYPES_H
#define NOVA_DIALECT_NOVA_IR_ELEMENTTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include <optional>

namespace mlir::nova {

inline bool isTileFloatType(Type t) { return t.isF32() || t.isBF16() || t.isF16(); }

inline bool isTileIntegerType(Type t) {
  return t.isSignlessInteger(64) || t.isSignlessInteger(32) ||
         t.isSignlessInteger(8) || t.isSignlessInteger(1);
}

inline bool isTileElementType(Type t) {
  return isTileFloatType(t) || isTileIntegerType(t);
}

/// Bytes per element in memory (i1 takes a whole byte).
inline int64_t tileElementBytes(Type t) {
  if (t.isSignlessInteger(1))
    return 1;
  return t.getIntOrFloatBitWidth() / 8;
}

/// The tile-descriptor element code (docs/isa.md 3.5).
inline std::optional<uint8_t> tileElementCode(Type t) {
  if (t.isF32()) return 0;
  if (t.isBF16()) return 1;
  if (t.isF16()) return 2;
  if (t.isSignlessInteger(64)) return 3;
  if (t.isSignlessInteger(32)) return 4;
  if (t.isSignlessInteger(8)) return 5;
  if (t.isSignlessInteger(1)) return 6;
  return std::nullopt;
}

} // namespace mlir::nova

#endif // NOVA_DIALECT_NOVA_IR_ELEMENTTYPES_H
