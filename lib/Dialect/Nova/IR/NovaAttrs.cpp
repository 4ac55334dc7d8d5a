//===- NovaAttrs.cpp - nova dialect attributes ------------------*- C++ -*-===//
#include "nova/Dialect/Nova/IR/NovaDialect.h"
#include "nova/Dialect/Nova/IR/ActivationEngine.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::nova;

#include "nova/Dialect/Nova/IR/NovaEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "nova/Dialect/Nova/IR/NovaAttrs.cpp.inc"

/// The keys of several nodes (python/nova/binary/target_schema.py checks the
/// same rules): all absent (one node), or `chips_per_node` with the network's
/// `nic_gbps` and `nic_latency_ns` (and optionally `nics_per_node`).
static LogicalResult verifyNodes(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t chips, Topology topology,
                                 int64_t chipsPerNode, int64_t nicsPerNode,
                                 int64_t nicGbps, int64_t nicLatencyNs) {
  if (chipsPerNode < 0)
    return emitError() << "target field 'chips_per_node' must be positive, got "
                       << chipsPerNode;
  if (chipsPerNode == 0) {
    // The network joins nodes: without nodes its keys would go unused.
    std::pair<StringRef, bool> given[] = {{"nics_per_node", nicsPerNode != 0},
                                          {"nic_gbps", nicGbps != 0},
                                          {"nic_latency_ns", nicLatencyNs != -1}};
    for (auto [field, isSet] : given)
      if (isSet)
        return emitError() << "target field '" << field
                           << "' needs chips_per_node (the network joins nodes)";
    return success();
  }
  if (nicGbps <= 0)
    return emitError() << "target field 'nic_gbps' must be positive when "
                          "chips_per_node is set, got "
                       << nicGbps;
  if (nicLatencyNs < 0)
    return emitError() << "target field 'nic_latency_ns' must be given (>= 0) "
                          "when chips_per_node is set, got "
                       << nicLatencyNs;
  if (nicsPerNode < 0 || (nicsPerNode > 0 && chipsPerNode % nicsPerNode != 0))
    return emitError() << "target field 'nics_per_node' must divide "
                          "chips_per_node ("
                       << chipsPerNode << "), got " << nicsPerNode;
  if (chips > chipsPerNode && chips % chipsPerNode != 0)
    return emitError() << "target field 'chips' must be a multiple of "
                          "chips_per_node ("
                       << chipsPerNode << ") or at most it, got " << chips;
  if (topology == Topology::Ring && std::min(chips, chipsPerNode) < 2)
    return emitError() << "a ring needs at least 2 chips per node, got "
                       << std::min(chips, chipsPerNode);
  return success();
}

/// The activation engine's block (docs/isa.md 2.7; target_schema.py checks
/// the same keys): exactly lanes >= 1 and three cycle numbers >= 0.
static LogicalResult
verifyActivation(function_ref<InFlightDiagnostic()> emitError, Attribute value) {
  auto block = dyn_cast<DictionaryAttr>(value);
  if (!block)
    return emitError() << "target key 'activation' must be a dictionary, got "
                       << value;
  for (NamedAttribute entry : block)
    if (!llvm::is_contained(kActivationKeys, entry.getName().strref()))
      return emitError() << "target activation key '" << entry.getName().str()
                         << "' is unknown (known: lanes, overhead_cycles, "
                            "elementwise_factor, transcendental_factor)";
  for (StringRef key : kActivationKeys) {
    std::optional<double> number = activationNumber(block, key);
    if (!number)
      return emitError() << "target activation key '" << key
                         << "' must be given as a number";
    if (key == "lanes" ? *number < 1 : *number < 0)
      return emitError() << "target activation key '" << key << "' must be "
                         << (key == "lanes" ? ">= 1" : ">= 0") << ", got "
                         << *number;
  }
  return success();
}

LogicalResult
TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                   StringRef name, int64_t clockMhz, int64_t matrixRows,
                   int64_t matrixCols, int64_t vectorLanes, int64_t sramBytes,
                   int64_t sramGbps, int64_t accBytes, int64_t hbmBytes,
                   int64_t hbmGbps, int64_t dmaEngines, int64_t chips,
                   Topology topology, int64_t linkGbps, int64_t linkLatencyNs,
                   int64_t chipsPerNode, int64_t nicsPerNode, int64_t nicGbps,
                   int64_t nicLatencyNs, DictionaryAttr timing) {
  if (name.empty())
    return emitError() << "target name must not be empty";
  std::pair<StringRef, int64_t> positive[] = {
      {"clock_mhz", clockMhz},   {"matrix_rows", matrixRows},
      {"matrix_cols", matrixCols}, {"vector_lanes", vectorLanes},
      {"sram_bytes", sramBytes}, {"sram_gbps", sramGbps},
      {"acc_bytes", accBytes},   {"hbm_bytes", hbmBytes},
      {"hbm_gbps", hbmGbps},     {"dma_engines", dmaEngines},
      {"chips", chips},          {"link_gbps", linkGbps}};
  for (auto [field, value] : positive)
    if (value <= 0)
      return emitError() << "target field '" << field
                         << "' must be positive, got " << value;
  if (linkLatencyNs < 0)
    return emitError() << "target field 'link_latency_ns' must not be "
                          "negative, got "
                       << linkLatencyNs;
  if (accBytes > sramBytes)
    return emitError() << "accumulator (" << accBytes
                       << " bytes) must not be larger than sram ("
                       << sramBytes << " bytes)";
  if (topology == Topology::Ring && chips < 2)
    return emitError() << "a ring needs at least 2 chips, got " << chips;
  if (failed(verifyNodes(emitError, chips, topology, chipsPerNode, nicsPerNode,
                         nicGbps, nicLatencyNs)))
    return failure();
  // The simulator checks each timing constant's type and range against its
  // schema; here only that every value is a plain scalar.
  if (timing)
    for (NamedAttribute entry : timing) {
      if (entry.getName() == kActivationKey) {
        if (failed(verifyActivation(emitError, entry.getValue())))
          return failure();
        continue;
      }
      if (!isa<IntegerAttr, FloatAttr, StringAttr>(entry.getValue()))
        return emitError() << "target timing key '" << entry.getName().str()
                           << "' must be a number, bool or string, got "
                           << entry.getValue();
    }
  return success();
}

void NovaDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "nova/Dialect/Nova/IR/NovaAttrs.cpp.inc"
      >();
}
