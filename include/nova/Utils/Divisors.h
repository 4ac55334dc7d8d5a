//===- Divisors.h - tile sizes that divide a dimension ----------*- C++ -*-===//
//
// Tiles, matrix-unit chunks and attention blocks divide their dimension
// exactly (no partial tiles): the largest divisor within a hardware limit.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_TRANSFORMS_DIVISORS_H
#define NOVA_TRANSFORMS_DIVISORS_H

#include <algorithm>
#include <cstdint>

namespace mlir::nova {

/// The largest divisor of `n` that is at most `limit` (1 when none is > 1).
inline int64_t largestDivisorAtMost(int64_t n, int64_t limit) {
  for (int64_t d = std::min(n, limit); d > 1; --d)
    if (n % d == 0)
      return d;
  return 1;
}

} // namespace mlir::nova

#endif // NOVA_TRANSFORMS_DIVISORS_H
