//===- NovaISADialect.cpp - nova_isa dialect and attributes -----*- C++ -*-===//
#include "nova/Dialect/Nova/IR/ElementTypes.h"
#include "nova/Dialect/NovaISA/IR/NovaISADialect.h"
#include "nova/Dialect/NovaISA/IR/NovaISAOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::nova_isa;

#include "nova/Dialect/NovaISA/IR/NovaISADialect.cpp.inc"
#include "nova/Dialect/NovaISA/IR/NovaISAEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "nova/Dialect/NovaISA/IR/NovaISAAttrs.cpp.inc"

void NovaISADialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "nova/Dialect/NovaISA/IR/NovaISAOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "nova/Dialect/NovaISA/IR/NovaISAAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// TileAttr
//===----------------------------------------------------------------------===//

LogicalResult TileAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               nova::MemorySpace memorySpace, Type elementType,
                               ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> strides) {
  if (shape.empty() || shape.size() > 4)
    return emitError() << "tile rank must be 1 to 4, got " << shape.size();
  if (strides.size() != shape.size())
    return emitError() << "tile has " << shape.size() << " sizes but "
                       << strides.size() << " strides";
  for (auto [dim, size] : llvm::enumerate(shape))
    if (size <= 0)
      return emitError() << "tile sizes must be positive, got " << size
                         << " in dimension " << dim;
  for (auto [dim, stride] : llvm::enumerate(strides))
    if (stride < 0)
      return emitError() << "tile strides must be non-negative, got "
                         << stride << " in dimension " << dim;
  if (!nova::isTileElementType(elementType))
    return emitError() << "tile element type must be f32, bf16, f16, i64, "
                          "i32, i8 or i1, got "
                       << elementType;
  return success();
}

int64_t TileAttr::getElementBytes() const {
  return nova::tileElementBytes(getElementType());
}

int64_t TileAttr::getNumElements() const {
  int64_t count = 1;
  for (int64_t size : getShape())
    count *= size;
  return count;
}

int64_t TileAttr::getExtentBytes() const {
  int64_t lastElement = 0;
  for (auto [size, stride] : llvm::zip_equal(getShape(), getStrides()))
    lastElement += (size - 1) * stride;
  return (lastElement + 1) * getElementBytes();
}

static ParseResult parseIntList(AsmParser &parser,
                                SmallVectorImpl<int64_t> &values) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        return parser.parseInteger(values.emplace_back());
      });
}

/// `<` space `,` element-type `,` `[` sizes `]` `,` `[` strides `]` `>`
Attribute TileAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef spaceName;
  Type elementType;
  SmallVector<int64_t> shape, strides;
  if (parser.parseLess() || parser.parseKeyword(&spaceName))
    return {};
  std::optional<nova::MemorySpace> space = nova::symbolizeMemorySpace(spaceName);
  if (!space) {
    parser.emitError(loc) << "unknown memory space '" << spaceName
                          << "', expected hbm, sram or acc";
    return {};
  }
  if (parser.parseComma() || parser.parseType(elementType) ||
      parser.parseComma() || parseIntList(parser, shape) ||
      parser.parseComma() || parseIntList(parser, strides) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<TileAttr>(loc, parser.getContext(), *space,
                                     elementType, shape, strides);
}

void TileAttr::print(AsmPrinter &printer) const {
  printer << "<" << nova::stringifyMemorySpace(getMemorySpace()) << ", "
          << getElementType() << ", [";
  llvm::interleaveComma(getShape(), printer);
  printer << "], [";
  llvm::interleaveComma(getStrides(), printer);
  printer << "]>";
}
