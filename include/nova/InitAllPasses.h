//===- InitAllPasses.h - register Nova's passes -----------------*- C++ -*-===//
#ifndef NOVA_INITALLPASSES_H
#define NOVA_INITALLPASSES_H

#include "nova/Conversion/Passes.h"
#include "nova/Dialect/Nova/Transforms/Passes.h"
#include "nova/Pipelines/Pipelines.h"
#include "nova/Transforms/Passes.h"

namespace nova {
inline void registerAllPasses() {
  mlir::nova::registerNovaPasses();
  mlir::nova::registerNovaConversionPasses();
  mlir::nova::registerNovaLinalgPasses();
  mlir::nova::registerNovaLinalgNormalizePipeline();
  mlir::nova::registerNovaPipelines();
}
} // namespace nova

#endif // NOVA_INITALLPASSES_H
