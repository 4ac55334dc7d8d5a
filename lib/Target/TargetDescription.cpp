//===- TargetDescription.cpp - load #nova.target from json ------*- C++ -*-===//
#include "nova/Target/TargetDescription.h"
#include "nova/Dialect/Nova/IR/ActivationEngine.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::nova;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<std::string>
mlir::nova::findTargetFile(llvm::StringRef nameOrPath) {
  if (llvm::sys::fs::is_regular_file(nameOrPath))
    return nameOrPath.str();
  llvm::SmallVector<std::string> dirs;
  // Installed layout: site-packages/nova/bin/nova-opt, site-packages/nova/targets.
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  if (!exe.empty()) {
    llvm::SmallString<256> dir(llvm::sys::path::parent_path(
        llvm::sys::path::parent_path(exe)));
    llvm::sys::path::append(dir, "targets");
    dirs.push_back(dir.str().str());
  }
  dirs.push_back(NOVA_SOURCE_TARGETS_DIR);
  for (const std::string &dir : dirs) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, nameOrPath + ".json");
    if (llvm::sys::fs::is_regular_file(path))
      return path.str().str();
  }
  return makeError("cannot find target '" + nameOrPath + "' (looked in " +
                   llvm::join(dirs, ", ") + ")");
}

llvm::Expected<TargetAttr> mlir::nova::loadTarget(MLIRContext *context,
                                                  llvm::StringRef path,
                                                  int64_t chips) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("cannot read target file '" + path +
                     "': " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return makeError("target file '" + path +
                     "' is not valid JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *object = json->getAsObject();
  if (!object)
    return makeError("target file '" + path + "' must hold a JSON object");

  // Every key is known and typed (python/nova/sim/target_schema.py holds the
  // same table with ranges; the simulator checks those).
  static constexpr llvm::StringLiteral kKeyList[] = {
      "name",        "description", "clock_mhz",  "matrix_rows",
      "matrix_cols", "vector_lanes", "sram_bytes", "sram_gbps",
      "acc_bytes",   "hbm_bytes",   "hbm_gbps",   "dma_engines",
      "chips",       "topology",    "link_gbps",  "link_latency_ns",
      "chips_per_node", "nics_per_node", "nic_gbps", "nic_latency_ns",
      "activation", "timing"};
  llvm::ArrayRef<llvm::StringLiteral> kKeys(kKeyList);
  for (const auto &entry : *object)
    if (!llvm::is_contained(kKeys, llvm::StringRef(entry.first).str()))
      return makeError("target file '" + path + "': unknown key '" +
                       llvm::StringRef(entry.first) + "' (known: " +
                       llvm::join(kKeys, ", ") + ")");

  auto kindName = [](const llvm::json::Value &value) -> std::string {
    switch (value.kind()) {
    case llvm::json::Value::Null:
      return "null";
    case llvm::json::Value::Boolean:
      return "a bool";
    case llvm::json::Value::Number:
      return "the number " + llvm::formatv("{0}", value).str();
    case llvm::json::Value::String:
      return "a string";
    case llvm::json::Value::Array:
      return "an array";
    case llvm::json::Value::Object:
      return "an object";
    }
    return "a value";
  };
  llvm::Error error = llvm::Error::success();
  auto fail = [&](const llvm::Twine &message) {
    if (!error)
      error = makeError("target file '" + path + "': " + message);
  };
  auto integer = [&](llvm::StringRef key) -> int64_t {
    const llvm::json::Value *value = object->get(key);
    if (!value) {
      fail("missing key '" + key + "' (an integer)");
      return 0;
    }
    if (value->kind() == llvm::json::Value::Boolean ||
        !value->getAsInteger()) {
      fail("key '" + key + "' must be an integer, got " + kindName(*value));
      return 0;
    }
    return *value->getAsInteger();
  };
  // An optional key: `absent` when left out (the attribute's default).
  auto optionalInteger = [&](llvm::StringRef key, int64_t absent) -> int64_t {
    if (!object->get(key))
      return absent;
    return integer(key);
  };
  auto string = [&](llvm::StringRef key) -> llvm::StringRef {
    const llvm::json::Value *value = object->get(key);
    if (!value) {
      fail("missing key '" + key + "' (a string)");
      return "";
    }
    if (!value->getAsString()) {
      fail("key '" + key + "' must be a string, got " + kindName(*value));
      return "";
    }
    return *value->getAsString();
  };

  llvm::StringRef name = string("name");
  if (const llvm::json::Value *description = object->get("description"))
    if (!description->getAsString())
      fail("key 'description' must be a string, got " +
           kindName(*description));
  int64_t clock = integer("clock_mhz"), rows = integer("matrix_rows"),
          cols = integer("matrix_cols"), lanes = integer("vector_lanes"),
          sram = integer("sram_bytes"), sramBw = integer("sram_gbps"),
          acc = integer("acc_bytes"), hbm = integer("hbm_bytes"),
          hbmBw = integer("hbm_gbps"), dma = integer("dma_engines"),
          fileChips = integer("chips"), linkBw = integer("link_gbps"),
          latency = integer("link_latency_ns");
  // Several nodes (absent: one node).
  int64_t chipsPerNode = optionalInteger("chips_per_node", 0),
          nicsPerNode = optionalInteger("nics_per_node", 0),
          nicBw = optionalInteger("nic_gbps", 0),
          nicLatency = optionalInteger("nic_latency_ns", -1);
  for (auto [key, value] : {std::pair<llvm::StringRef, int64_t>{"chips_per_node", chipsPerNode},
                            {"nics_per_node", nicsPerNode},
                            {"nic_gbps", nicBw}})
    if (object->get(key) && value <= 0)
      fail("key '" + key + "' must be positive, got " + llvm::Twine(value));
  if (object->get("nic_latency_ns") && nicLatency < 0)
    fail("key 'nic_latency_ns' must not be negative, got " +
         llvm::Twine(nicLatency));
  llvm::StringRef topologyName = string("topology");

  // The timing constants: an object of numbers, bools and strings (their
  // names, types and ranges are checked by the simulator's schema).
  Builder builder(context);
  SmallVector<NamedAttribute> timing;
  const llvm::json::Value *timingValue = object->get("timing");
  if (!timingValue) {
    fail("missing key 'timing' (an object of timing constants)");
  } else if (const llvm::json::Object *entries = timingValue->getAsObject()) {
    for (const auto &entry : *entries) {
      llvm::StringRef key = entry.first;
      const llvm::json::Value &value = entry.second;
      if (std::optional<bool> b = value.getAsBoolean())
        timing.push_back(builder.getNamedAttr(key, builder.getBoolAttr(*b)));
      else if (value.kind() == llvm::json::Value::Number &&
               value.getAsInteger())
        timing.push_back(builder.getNamedAttr(
            key, builder.getI64IntegerAttr(*value.getAsInteger())));
      else if (std::optional<double> d = value.getAsNumber())
        timing.push_back(builder.getNamedAttr(key, builder.getF64FloatAttr(*d)));
      else if (std::optional<llvm::StringRef> str = value.getAsString())
        timing.push_back(builder.getNamedAttr(key, builder.getStringAttr(*str)));
      else
        fail("timing key '" + key + "' must be a number, bool or string, got " +
             kindName(value));
    }
  } else {
    fail("key 'timing' must be an object, got " + kindName(*timingValue));
  }
  // The activation engine (optional): carried as the dictionary `activation`
  // inside the timing dictionary (nova/Dialect/Nova/IR/ActivationEngine.h);
  // the attribute's verifier checks its keys.
  if (const llvm::json::Value *activationValue = object->get(kActivationKey)) {
    const llvm::json::Object *entries = activationValue->getAsObject();
    if (!entries) {
      fail("key 'activation' must be an object, got " + kindName(*activationValue));
    } else {
      SmallVector<NamedAttribute> block;
      for (const auto &entry : *entries) {
        llvm::StringRef key = entry.first;
        const llvm::json::Value &value = entry.second;
        if (value.kind() == llvm::json::Value::Number && value.getAsInteger())
          block.push_back(builder.getNamedAttr(
              key, builder.getI64IntegerAttr(*value.getAsInteger())));
        else if (std::optional<double> d = value.getAsNumber();
                 d && value.kind() == llvm::json::Value::Number)
          block.push_back(builder.getNamedAttr(key, builder.getF64FloatAttr(*d)));
        else
          fail("activation key '" + key + "' must be a number, got " +
               kindName(value));
      }
      timing.push_back(builder.getNamedAttr(kActivationKey,
                                            builder.getDictionaryAttr(block)));
    }
  }
  if (error)
    return std::move(error);
  std::optional<Topology> topology = symbolizeTopology(topologyName);
  // One chip of a larger system (chips=1, as the nova device compiles its ops)
  // uses no links, whatever the system's topology.
  bool lone = chips == 1 && fileChips > 1;
  if (!topology)
    return makeError("target file '" + path + "': unknown topology '" +
                     topologyName + "' (expected switch, ring, torus2d or pcie)");

  std::string message;
  auto emitError = [&]() {
    return mlir::emitError(UnknownLoc::get(context));
  };
  // Capture the verifier's message instead of printing it.
  ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  TargetAttr attr = TargetAttr::getChecked(
      emitError, context, name, clock, rows, cols, lanes, sram, sramBw, acc,
      hbm, hbmBw, dma, chips > 0 ? chips : fileChips, lone ? Topology::Switch : *topology, linkBw,
      latency, chipsPerNode, nicsPerNode, nicBw, nicLatency,
      builder.getDictionaryAttr(timing));
  if (!attr)
    return makeError("target file '" + path + "': " + message);
  return attr;
}
