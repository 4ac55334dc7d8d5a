//===- nova-translate.cpp - Nova's mlir-translate ---------------*- C++ -*-===//
//
// Upstream translations plus Nova's:
//   --nova-to-binary       nova_isa module -> .nova binary (docs/binary-format.md)
//   --nova-to-binary-text  the same encoding as a human-readable listing
//
//===----------------------------------------------------------------------===//
#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "nova/Target/Binary/BinaryEmitter.h"

int main(int argc, char **argv) {
  mlir::registerAllTranslations();
  mlir::nova::registerToNovaBinaryTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Nova translation driver\n"));
}
