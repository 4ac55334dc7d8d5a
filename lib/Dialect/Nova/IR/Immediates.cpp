//===- Immediates.cpp - constant operands of vector instructions ----------===//
#include "nova/Dialect/Nova/IR/Immediates.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/bit.h"

using namespace mlir;
using namespace mlir::nova;

ParseResult nova::parseImmediate(OpAsmParser &parser, Attribute &attr) {
  // Hex literals are f64 bits (how the printer writes inf and NaN), as they
  // were for the former F64Attr; integers are always printed in decimal.
  // The current token's text, read a character at a time (the source buffer
  // is null-terminated).
  SMLoc loc = parser.getCurrentLocation();
  const char *p = loc.getPointer();
  if (*p == '-')
    ++p;
  bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
  Builder &b = parser.getBuilder();
  if (parser.parseAttribute(attr, hex ? b.getF64Type() : Type()))
    return failure();
  if (auto i = dyn_cast<IntegerAttr>(attr); i && i.getType().isSignlessInteger(64))
    return success();
  if (auto f = dyn_cast<FloatAttr>(attr); f && f.getType().isF64())
    return success();
  return parser.emitError(loc)
         << "expected an immediate: a float literal (f64) or an integer (i64)";
}

void nova::printImmediate(OpAsmPrinter &printer, Operation *, Attribute attr) {
  printer.printAttributeWithoutType(attr);
}

LogicalResult nova::verifyImmediate(Operation *op, StringRef role,
                                    Attribute attr, Type elt, StringRef tile) {
  if (takesIntegerImmediate(elt)) {
    auto i = dyn_cast<IntegerAttr>(attr);
    if (i && i.getType().isSignlessInteger(64))
      return success();
    return op->emitOpError() << role << " must be an i64 integer for the "
                             << elt << " " << tile << ", got " << attr;
  }
  auto f = dyn_cast<FloatAttr>(attr);
  if (f && f.getType().isF64())
    return success();
  return op->emitOpError() << role << " must be an f64 float for the " << elt
                           << " " << tile << ", got " << attr;
}

int64_t nova::immediateBits(Attribute attr) {
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getValue().getSExtValue();
  return llvm::bit_cast<int64_t>(cast<FloatAttr>(attr).getValueAsDouble());
}
