//===- ActivationEngine.h - a target's activation engine --------*- C++ -*-===//
//
// A target may describe an activation engine beside the vector engine (the
// `activation` block of its JSON file, docs/isa.md 2.7). The `#nova.target`
// attribute carries that block as the dictionary `activation` inside its
// `timing` dictionary, so that targets without one print and encode exactly
// as before.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_DIALECT_NOVA_IR_ACTIVATIONENGINE_H
#define NOVA_DIALECT_NOVA_IR_ACTIVATIONENGINE_H

#include "nova/Dialect/Nova/IR/NovaDialect.h"

#include <optional>

namespace mlir::nova {

/// The key of the activation block inside a target's `timing` dictionary.
inline constexpr llvm::StringLiteral kActivationKey = "activation";

/// The numbers of an activation engine: lanes and per-class cycle factors
/// (cost of an instruction = overhead + ceil(elements / lanes) * factor).
struct ActivationEngine {
  int64_t lanes = 0;
  double overheadCycles = 0, elementwiseFactor = 0, transcendentalFactor = 0;
};

/// The keys of the block, in the order of ActivationEngine's fields.
inline constexpr llvm::StringLiteral kActivationKeys[] = {
    "lanes", "overhead_cycles", "elementwise_factor", "transcendental_factor"};

inline std::optional<double> activationNumber(DictionaryAttr block,
                                              llvm::StringRef key) {
  Attribute value = block.get(key);
  if (auto i = dyn_cast_or_null<IntegerAttr>(value))
    if (!i.getType().isInteger(1))
      return double(i.getInt());
  if (auto f = dyn_cast_or_null<FloatAttr>(value))
    return f.getValueAsDouble();
  return std::nullopt;
}

/// The activation block of `target`'s timing dictionary, if it has one (the
/// target attribute's verifier has checked its keys).
inline DictionaryAttr getActivationBlock(TargetAttr target) {
  if (!target || !target.getTiming())
    return {};
  return dyn_cast_or_null<DictionaryAttr>(target.getTiming().get(kActivationKey));
}

/// The activation engine `target` describes, or std::nullopt.
inline std::optional<ActivationEngine> getActivationEngine(TargetAttr target) {
  DictionaryAttr block = getActivationBlock(target);
  if (!block)
    return std::nullopt;
  ActivationEngine engine;
  engine.lanes = int64_t(activationNumber(block, "lanes").value_or(0));
  engine.overheadCycles = activationNumber(block, "overhead_cycles").value_or(0);
  engine.elementwiseFactor =
      activationNumber(block, "elementwise_factor").value_or(0);
  engine.transcendentalFactor =
      activationNumber(block, "transcendental_factor").value_or(0);
  return engine;
}

inline bool hasActivationEngine(TargetAttr target) {
  return bool(getActivationBlock(target));
}

} // namespace mlir::nova

#endif // NOVA_DIALECT_NOVA_IR_ACTIVATIONENGINE_H
