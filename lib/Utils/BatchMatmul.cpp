//===- BatchMatmul.cpp - batch matmul maps and groups -----------*- C++ -*-===//
#include "nova/Utils/BatchMatmul.h"

using namespace mlir;

SmallVector<AffineMap> nova::contractionMaps(MLIRContext *ctx,
                                             int64_t batchDims) {
  int64_t loops = batchDims + 3;
  SmallVector<AffineExpr> batch;
  for (int64_t d = 0; d < batchDims; ++d)
    batch.push_back(getAffineDimExpr(d, ctx));
  AffineExpr m = getAffineDimExpr(batchDims, ctx);
  AffineExpr n = getAffineDimExpr(batchDims + 1, ctx);
  AffineExpr k = getAffineDimExpr(batchDims + 2, ctx);
  auto map = [&](AffineExpr a, AffineExpr b) {
    SmallVector<AffineExpr> results(batch);
    results.append({a, b});
    return AffineMap::get(loops, 0, results, ctx);
  };
  return {map(m, k), map(k, n), map(m, n)};
}

SmallVector<ReassociationIndices> nova::batchGroups(int64_t batchDims) {
  ReassociationIndices batch;
  for (int64_t d = 0; d < batchDims; ++d)
    batch.push_back(d);
  return {batch, {batchDims}, {batchDims + 1}};
}
