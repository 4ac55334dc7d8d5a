//===- Patterns.h - linalg -> nova pattern groups ---------------*- C++ -*-===//
#ifndef NOVA_LIB_CONVERSION_LINALGTONOVA_PATTERNS_H
#define NOVA_LIB_CONVERSION_LINALGTONOVA_PATTERNS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "nova/Dialect/Nova/IR/NovaDialect.h"

namespace mlir::nova::lowering {
void populateAttentionToNovaPatterns(RewritePatternSet &patterns,
                                     TargetAttr target);
void populateAttentionBackwardToNovaPatterns(RewritePatternSet &patterns,
                                             TargetAttr target);
void populateScatterToNovaPatterns(RewritePatternSet &patterns,
                                   TargetAttr target);
void populateMatmulToNovaPatterns(RewritePatternSet &patterns,
                                  TargetAttr target);
void populateGenericToNovaPatterns(RewritePatternSet &patterns);
void populateNamedOpsToNovaPatterns(RewritePatternSet &patterns);

/// Why a linalg.generic has no nova lowering ("" if it has one).
std::string whyGenericNotLowerable(Operation *op);
/// Why a 2-D linalg.matmul has no nova lowering ("" if it has one): the
/// lowering takes C[m, n] with A as A[m, k] or A[k, m] and B as B[k, n] or
/// B[n, k].
std::string whyMatmulNotLowerable(linalg::MatmulOp op);
} // namespace mlir::nova::lowering

#endif // NOVA_LIB_CONVERSION_LINALGTONOVA_PATTERNS_H
