//===- TargetDescription.cpp - load #nova.target from json ------*- C++ -*-===//
#include "nova/Target/TargetDescription.h"

#include "mlir/IR/Diagnostics.h"
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

  llvm::Error error = llvm::Error::success();
  auto integer = [&](llvm::StringRef key) -> int64_t {
    if (std::optional<int64_t> value = object->getInteger(key))
      return *value;
    if (!error)
      error = makeError("target file '" + path +
                        "': missing integer field '" + key + "'");
    return 0;
  };
  auto string = [&](llvm::StringRef key) -> llvm::StringRef {
    if (std::optional<llvm::StringRef> value = object->getString(key))
      return *value;
    if (!error)
      error = makeError("target file '" + path + "': missing string field '" +
                        key + "'");
    return "";
  };

  llvm::StringRef name = string("name");
  int64_t clock = integer("clock_mhz"), rows = integer("matrix_rows"),
          cols = integer("matrix_cols"), lanes = integer("vector_lanes"),
          sram = integer("sram_bytes"), sramBw = integer("sram_gbps"),
          acc = integer("acc_bytes"), hbm = integer("hbm_bytes"),
          hbmBw = integer("hbm_gbps"), dma = integer("dma_engines"),
          fileChips = integer("chips"), linkBw = integer("link_gbps"),
          latency = integer("link_latency_ns");
  llvm::StringRef topologyName = string("topology");
  if (error)
    return std::move(error);
  std::optional<Topology> topology = symbolizeTopology(topologyName);
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
      hbm, hbmBw, dma, chips > 0 ? chips : fileChips, *topology, linkBw,
      latency);
  if (!attr)
    return makeError("target file '" + path + "': " + message);
  return attr;
}
