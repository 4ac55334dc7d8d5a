//===- BinaryEmitter.h - nova_isa module to .nova binary --------*- C++ -*-===//
//
// Encodes a module of nova_isa programs into the file format of
// docs/binary-format.md; registered in nova-translate as --nova-to-binary
// and --nova-to-binary-text.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_TARGET_BINARY_BINARYEMITTER_H
#define NOVA_TARGET_BINARY_BINARYEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::nova {

/// Writes the .nova binary of `module` to `os`; failures are reported as
/// diagnostics at the offending op.
LogicalResult translateToNovaBinary(ModuleOp module, raw_ostream &os);

/// Writes a human-readable listing of the encoded words of `module` (not a
/// stable format).
LogicalResult translateToNovaBinaryText(ModuleOp module, raw_ostream &os);

/// Registers --nova-to-binary and --nova-to-binary-text.
void registerToNovaBinaryTranslations();

} // namespace mlir::nova

#endif // NOVA_TARGET_BINARY_BINARYEMITTER_H
