//===- TargetDescription.h - load #nova.target from json --------*- C++ -*-===//
//
// Target descriptions live as data in targets/<name>.json, read by both the
// compiler (into a #nova.target attribute) and the Python simulator.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_TARGET_TARGETDESCRIPTION_H
#define NOVA_TARGET_TARGETDESCRIPTION_H

#include "nova/Dialect/Nova/IR/NovaDialect.h"
#include "llvm/Support/Error.h"

namespace mlir::nova {

/// Finds a target file: `nameOrPath` itself if it names a file, otherwise
/// `<name>.json` in the targets folder of the installed package or of the
/// source tree Nova was built from.
llvm::Expected<std::string> findTargetFile(llvm::StringRef nameOrPath);

/// Parses a target description and builds the (verified) attribute;
/// `chips` > 0 overrides the file's chip count.
llvm::Expected<TargetAttr> loadTarget(MLIRContext *context,
                                      llvm::StringRef path, int64_t chips = 0);

} // namespace mlir::nova

#endif // NOVA_TARGET_TARGETDESCRIPTION_H
