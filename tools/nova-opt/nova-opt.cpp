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
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  nova::registerAllDialects(registry);
  nova::registerAllExtensions(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Nova optimizer driver\n", registry));
}
