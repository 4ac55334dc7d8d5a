//===- LinalgToNova.h - linalg on memref tiles to nova ----------*- C++ -*-===//
//
// Patterns that lower bufferized linalg tiles to nova compute ops with DMA.
// The pass (convert-linalg-to-nova) applies them; the patterns live in topic
// files (matmul, generic, named ops) behind this one entry point.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_CONVERSION_LINALGTONOVA_LINALGTONOVA_H
#define NOVA_CONVERSION_LINALGTONOVA_LINALGTONOVA_H

#include "mlir/IR/PatternMatch.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"

namespace mlir::nova {

/// Adds the linalg -> nova lowering patterns for `target`.
void populateLinalgToNovaPatterns(RewritePatternSet &patterns,
                                  TargetAttr target);

/// Why `op` has no nova lowering, or an empty string if it has one.
std::string whyNotLowerableToNova(Operation *op);

} // namespace mlir::nova

#endif // NOVA_CONVERSION_LINALGTONOVA_LINALGTONOVA_H
