//===- TensorBytes.h - bytes a tensor occupies ------------------*- C++ -*-===//
//
// How many bytes a statically shaped tensor's buffer holds (elements under a
// byte, i1, take a whole one), the size the all-reduce bucketing and
// splitting passes compare against their byte limits.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_TRANSFORMS_TENSORBYTES_H
#define NOVA_TRANSFORMS_TENSORBYTES_H

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

namespace mlir::nova {

inline int64_t tensorBytes(RankedTensorType type) {
  return type.getNumElements() *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

} // namespace mlir::nova

#endif // NOVA_TRANSFORMS_TENSORBYTES_H
