//===- nova-translate.cpp - Nova's mlir-translate ---------------*- C++ -*-===//
//
// Upstream translations plus Nova's (the binary emitter registers here).
//
//===----------------------------------------------------------------------===//
#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::registerAllTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Nova translation driver\n"));
}
