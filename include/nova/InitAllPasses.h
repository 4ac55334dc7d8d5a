//===- InitAllPasses.h - register Nova's passes -----------------*- C++ -*-===//
#ifndef NOVA_INITALLPASSES_H
#define NOVA_INITALLPASSES_H

#include "nova/Conversion/Passes.h"
#include "nova/Input/Passes.h"
#include "nova/Normalize/Passes.h"
#include "nova/Partition/Passes.h"
#include "nova/Pipelines/Pipelines.h"
#include "nova/Schedule/Passes.h"
#include "nova/Tile/Passes.h"

namespace nova {
inline void registerAllPasses() {
  mlir::nova::registerNovaInputPasses();
  mlir::nova::registerNovaNormalizePasses();
  mlir::nova::registerNovaPartitionPasses();
  mlir::nova::registerNovaTilePasses();
  mlir::nova::registerNovaSchedulePasses();
  mlir::nova::registerNovaConversionPasses();
  mlir::nova::registerNovaPipelines();
}
} // namespace nova

#endif // NOVA_INITALLPASSES_H
