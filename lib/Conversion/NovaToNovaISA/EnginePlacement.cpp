//===- EnginePlacement.cpp - vector or activation engine ------------------===//
//
// A greedy list balance of the two elementwise engines along program order.
// The split follows Trainium's NeuronCore: its activation (scalar) engine
// computes `func(x * scale + bias)` on one input tile, with transcendental
// functions in hardware, while tensor-tensor arithmetic, reductions,
// transposes, scans and sorts belong to the vector engine. Nova's
// single-input elementwise instructions (`vunary`, `vscalar`, `vcopy`) may
// therefore run on either; the rest stay on vector.
//
//===----------------------------------------------------------------------===//
#include "EnginePlacement.h"

#include "nova/Dialect/NovaISA/IR/NovaISAOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::nova;
using namespace mlir::nova::isa_lowering;
using nova_isa::Engine;

namespace {

/// The kinds charged `*_transcendental_factor` (docs/isa.md 2.4).
bool isTranscendental(ElementwiseKind kind) {
  switch (kind) {
  case ElementwiseKind::Exp:
  case ElementwiseKind::Log:
  case ElementwiseKind::Sqrt:
  case ElementwiseKind::Rsqrt:
  case ElementwiseKind::Recip:
  case ElementwiseKind::Tanh:
  case ElementwiseKind::Erf:
  case ElementwiseKind::Sigmoid:
  case ElementwiseKind::Pow:
  case ElementwiseKind::Div:
  case ElementwiseKind::Sin:
  case ElementwiseKind::Cos:
  case ElementwiseKind::Log1p:
  case ElementwiseKind::Rem:
  case ElementwiseKind::FloorDiv:
    return true;
  default:
    return false;
  }
}

int64_t elements(nova_isa::TileAttr tile) {
  int64_t n = 1;
  for (int64_t d : tile.getShape())
    n *= d;
  return n;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Cycles of a vector-engine instruction on the vector engine, as the
/// simulator charges them (0 for instructions of other engines).
double vectorCycles(Operation *op, const VectorCosts &c) {
  auto cost = [&](nova_isa::TileAttr tile, double factor) {
    return c.overhead + double(ceilDiv(elements(tile), c.lanes)) * factor;
  };
  return llvm::TypeSwitch<Operation *, double>(op)
      .Case([&](nova_isa::VUnaryOp v) {
        return cost(v.getOutputTile(), isTranscendental(v.getKind())
                                           ? c.transcendental
                                           : c.elementwise);
      })
      .Case([&](nova_isa::VBinaryOp v) {
        return cost(v.getOutputTile(), isTranscendental(v.getKind())
                                           ? c.transcendental
                                           : c.elementwise);
      })
      .Case([&](nova_isa::VScalarOp v) {
        return cost(v.getOutputTile(), isTranscendental(v.getKind())
                                           ? c.transcendental
                                           : c.elementwise);
      })
      .Case([&](nova_isa::VFusedOp v) {
        // Two pipelined stages: the rate of the slower one.
        bool slow = isTranscendental(v.getKind0()) ||
                    isTranscendental(v.getKind1());
        return cost(v.getOutputTile(),
                    slow ? c.transcendental : c.elementwise);
      })
      .Case([&](nova_isa::VSelectOp v) {
        return cost(v.getOutputTile(), c.elementwise);
      })
      .Case([&](nova_isa::VReduceOp v) {
        return cost(v.getInputTile(), c.elementwise);
      })
      .Case([&](nova_isa::VTransposeOp v) {
        return cost(v.getOutputTile(), c.transpose);
      })
      .Case([&](nova_isa::VFillOp v) {
        return cost(v.getOutputTile(), c.elementwise);
      })
      .Case([&](nova_isa::VCopyOp v) {
        return cost(v.getOutputTile(), c.elementwise);
      })
      .Case([&](nova_isa::VIotaOp v) {
        return cost(v.getOutputTile(), c.elementwise);
      })
      .Case([&](nova_isa::VAssertOp v) {
        return cost(v.getConditionTile(), c.elementwise);
      })
      .Default([](Operation *) { return 0.0; });
}

/// A candidate for the activation engine: its output tile and whether its
/// kind is transcendental.
std::optional<std::pair<nova_isa::TileAttr, bool>> candidate(Operation *op) {
  using Result = std::optional<std::pair<nova_isa::TileAttr, bool>>;
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case([](nova_isa::VUnaryOp v) -> Result {
        return std::make_pair(v.getOutputTile(), isTranscendental(v.getKind()));
      })
      .Case([](nova_isa::VScalarOp v) -> Result {
        return std::make_pair(v.getOutputTile(), isTranscendental(v.getKind()));
      })
      .Case([](nova_isa::VCopyOp v) -> Result {
        return std::make_pair(v.getOutputTile(), false);
      })
      .Default([](Operation *) -> Result { return std::nullopt; });
}

void setEngine(Operation *op, Engine engine) {
  op->setAttr("engine", nova_isa::EngineAttr::get(op->getContext(), engine));
}

struct Balance {
  const VectorCosts &vector;
  const ActivationEngine &activation;
  double vectorLoad = 0, activationLoad = 0;
  int64_t placed = 0;

  double activationCycles(nova_isa::TileAttr tile, bool transcendental) const {
    return activation.overheadCycles +
           double(ceilDiv(elements(tile), activation.lanes)) *
               (transcendental ? activation.transcendentalFactor
                               : activation.elementwiseFactor);
  }

  void block(Block &body, double weight) {
    for (Operation &op : body) {
      if (auto loop = dyn_cast<nova_isa::LoopOp>(&op)) {
        double trips = 1;
        if (loop.getLowerImm() && loop.getUpperImm() && loop.getStepImm())
          trips = std::max<int64_t>(
              0, ceilDiv(int64_t(*loop.getUpperImm()) - int64_t(*loop.getLowerImm()),
                         int64_t(*loop.getStepImm())));
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            block(inner, weight * trips);
        continue;
      }
      if (op.getNumRegions() > 0) { // if / else: both count, as either may run
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            block(inner, weight);
        continue;
      }
      auto instr = dyn_cast<nova_isa::InstructionOpInterface>(&op);
      if (!instr || instr.getEngine() != Engine::Vector || isa<nova_isa::NopOp>(op))
        continue;
      double onVector = weight * vectorCycles(&op, vector);
      auto elementwise = candidate(&op);
      if (!elementwise) {
        vectorLoad += onVector;
        continue;
      }
      auto [tile, transcendental] = *elementwise;
      double onActivation = weight * activationCycles(tile, transcendental);
      if (transcendental ||
          activationLoad + onActivation < vectorLoad + onVector) {
        setEngine(&op, Engine::Activation);
        activationLoad += onActivation;
        ++placed;
      } else {
        vectorLoad += onVector;
      }
    }
  }
};

double timingNumber(DictionaryAttr timing, StringRef key, double absent) {
  if (!timing)
    return absent;
  if (auto i = dyn_cast_or_null<IntegerAttr>(timing.get(key)))
    return double(i.getInt());
  if (auto f = dyn_cast_or_null<FloatAttr>(timing.get(key)))
    return f.getValueAsDouble();
  return absent;
}

} // namespace

VectorCosts mlir::nova::isa_lowering::vectorCostsOf(TargetAttr target) {
  VectorCosts c;
  DictionaryAttr t = target.getTiming();
  c.lanes = std::max<int64_t>(1, target.getVectorLanes());
  c.overhead = timingNumber(t, "vector_overhead_cycles", 0);
  c.elementwise = timingNumber(t, "vector_elementwise_factor", 1);
  c.transcendental = timingNumber(t, "vector_transcendental_factor", 1);
  c.transpose = timingNumber(t, "vector_transpose_factor", 1);
  return c;
}

int64_t mlir::nova::isa_lowering::placeOnActivationEngine(
    Block &body, const VectorCosts &vector, const ActivationEngine &activation) {
  Balance balance{vector, activation};
  balance.block(body, 1.0);
  return balance.placed;
}
