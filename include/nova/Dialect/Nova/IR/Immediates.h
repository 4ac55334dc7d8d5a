//===- Immediates.h - constant operands of vector instructions --*- C++ -*-===//
//
// Shared by `nova` (fill, elementwise scalar) and `nova_isa` (vfill, vscalar):
// an immediate is an f64 FloatAttr for a float tile and the exact i64
// IntegerAttr for an integer or i1 tile (docs/isa.md: VFILL / VSCALAR carry
// f64 bits or an i64). An i64 held in an f64 would lose every bit below 2^53.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_DIALECT_NOVA_IR_IMMEDIATES_H
#define NOVA_DIALECT_NOVA_IR_IMMEDIATES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

namespace mlir::nova {

/// True if element type `elt` takes its immediates as integers.
inline bool takesIntegerImmediate(Type elt) { return isa<IntegerType>(elt); }

/// Parses a float literal (decimal or hex bits, as f64) or a decimal integer
/// (as i64).
ParseResult parseImmediate(OpAsmParser &parser, Attribute &attr);

/// Prints `attr` without its type: `5.000000e-01`, `-7046029254386353131`.
void printImmediate(OpAsmPrinter &printer, Operation *op, Attribute attr);

/// Checks that `attr` is the immediate form for element type `elt`; `role`
/// names the attribute and `tile` the tile whose type decides it.
LogicalResult verifyImmediate(Operation *op, StringRef role, Attribute attr,
                              Type elt, StringRef tile);

/// The 64-bit word that carries `attr`: the i64 value, or the f64's bits.
int64_t immediateBits(Attribute attr);

} // namespace mlir::nova

#endif // NOVA_DIALECT_NOVA_IR_IMMEDIATES_H
