//===- nova-opt.cpp - Nova's mlir-opt ---------------------------*- C++ -*-===//
//
// Every upstream dialect, pass and extension, plus Nova's.
//
//===----------------------------------------------------------------------===//
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "nova/InitAllDialects.h"
#include "nova/InitAllExtensions.h"
#include "nova/InitAllPasses.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  nova::registerAllPasses();

  mlir::DialectRegistry registry;
  // Nova's extensions first: the first attachment of an interface wins, and
  // Nova's convolution sharding model replaces upstream's (which
  // registerAllDialects attaches).
  nova::registerAllExtensions(registry);
  mlir::registerAllDialects(registry);
  nova::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Nova optimizer driver\n", registry));
}
