//===- EnginePlacement.h - vector or activation engine -----------*- C++ -*-===//
//
// Internal to convert-nova-to-isa: on a target with an activation engine,
// moves single-input elementwise instructions from the vector engine to it,
// before the synchronisation step orders the engines (docs/isa.md 2.7).
//
//===----------------------------------------------------------------------===//
#ifndef LIB_CONVERSION_NOVATONOVAISA_ENGINEPLACEMENT_H
#define LIB_CONVERSION_NOVATONOVAISA_ENGINEPLACEMENT_H

#include "nova/Conversion/NovaToNovaISA/NovaToNovaISA.h"
#include "nova/Dialect/Nova/IR/ActivationEngine.h"

#include "mlir/IR/Block.h"

namespace mlir::nova::isa_lowering {

/// The vector engine's cost constants (the target's `vector_lanes` and
/// `timing.vector_*`), in cycles.
struct VectorCosts {
  int64_t lanes = 1;
  double overhead = 0, elementwise = 1, transcendental = 1, transpose = 1;
};

/// The vector costs of `target` (constants its timing lacks count 1 cycle
/// per lane-row and no overhead: only the ratio of the engines matters).
VectorCosts vectorCostsOf(TargetAttr target);

/// Places the instructions of `body` (lowered, not yet synchronised): every
/// transcendental `vunary` / `vscalar` goes to the activation engine; every
/// other `vunary`, `vscalar` and `vcopy` goes to the engine whose load so
/// far, in program order (instructions inside loops with immediate bounds
/// weighted by their trip counts), ends lower with it. Returns how many
/// instructions it placed on the activation engine.
int64_t placeOnActivationEngine(Block &body, const VectorCosts &vector,
                                const ActivationEngine &activation);

} // namespace mlir::nova::isa_lowering

#endif // LIB_CONVERSION_NOVATONOVAISA_ENGINEPLACEMENT_H
