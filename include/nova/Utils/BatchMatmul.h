//===- BatchMatmul.h - batch matmul maps and groups -------------*- C++ -*-===//
//
// nova-expand-batch-dims (partition) and its inverse nova-collapse-batch-dims
// (normalize) move between
//   linalg.batch_matmul on [B*H, M, K] x [B*H, K, N] (collapsed batch)
// and
//   linalg.generic on [B, H, M, K] x [B, H, K, N] (one loop per batch dim);
// both build and recognise the generic form through these.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_UTILS_BATCHMATMUL_H
#define NOVA_UTILS_BATCHMATMUL_H

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AffineMap.h"

namespace mlir::nova {

/// `(b..., m, n, k) -> (b..., m, k), (b..., k, n), (b..., m, n)`.
SmallVector<AffineMap> contractionMaps(MLIRContext *ctx, int64_t batchDims);

/// [[0, ..., batchDims - 1], [batchDims], [batchDims + 1]].
SmallVector<ReassociationIndices> batchGroups(int64_t batchDims);

} // namespace mlir::nova

#endif // NOVA_UTILS_BATCHMATMUL_H
