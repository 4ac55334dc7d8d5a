//===- Passes.td - Nova conversion passes ------------------*- tablegen -*-===//
#ifndef NOVA_CONVERSION_PASSES_TD
#define NOVA_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLinalgToNova : Pass<"convert-linalg-to-nova", "::mlir::func::FuncOp"> {
  let summary = "lower tiled, bufferized linalg ops to nova tile ops with DMA";
  let description = [{
    Every linalg op (after `nova-tile` and `nova-bufferize`, so on memref
    tiles) becomes `nova` compute on on-chip buffers:

    * operands in HBM are copied into fresh SRAM tiles with
      `nova.dma_start` + `nova.wait`, and HBM outputs are computed in SRAM
      and written back the same way; operands already in SRAM (the fused
      temporaries of a tile loop) are used in place;
    * `linalg.matmul` / `batch_matmul` run on the matrix unit into an
      accumulator tile, split along K into chunks of the matrix unit's rows
      (an `scf.for` of `nova.matmul ... accumulate`), then drained into the
      destination (`copy` after a zero fill, `add` otherwise);
    * an elementwise `linalg.generic` becomes one `nova.elementwise` per
      body op, broadcasting operands through unit dimensions; a reduction
      generic becomes the elementwise part plus `nova.reduce` along each
      reduced dimension;
    * `linalg.fill`, `linalg.transpose`, `linalg.copy` and `memref.copy`
      become `nova.fill`, `nova.transpose` and DMA.

    An op that has no nova lowering is an error at its location (the
    PyTorch source line that torch-mlir recorded).

    Before:
    ```mlir
    linalg.matmul ins(%a, %b : memref<128x768xf32, #nova.memory_space<hbm>>, ...)
                  outs(%c : memref<128x128xf32, #nova.memory_space<sram>>)
    ```
    After:
    ```mlir
    %sa = memref.alloc() : memref<128x768xf32, #nova.memory_space<sram>>
    %t = nova.dma_start %a, %sa : ... -> memref<128x768xf32, #nova.memory_space<sram>>
    nova.wait %t
    ...
    nova.fill 0.0 outs(%acc : memref<128x128xf32, #nova.memory_space<acc>>)
    scf.for %k = %c0 to %c768 step %c128 {
      nova.matmul ins(%ak, %bk : ...) outs(%acc : ...) accumulate
    }
    nova.elementwise <copy> ins(%acc : ...) outs(%c : ...)
    ```
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
  let statistics = [
    Statistic<"numConverted", "converted-ops", "linalg and copy ops lowered to nova">,
    Statistic<"numDmas", "dmas", "DMA transfers created">,
    Statistic<"numMatmuls", "matmuls", "nova.matmul ops created">,
  ];
}

#endif // NOVA_CONVERSION_PASSES_TD
