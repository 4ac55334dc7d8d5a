//===- Passes.td - nova dialect transformation passes ------*- tablegen -*-===//
#ifndef NOVA_DIALECT_NOVA_TRANSFORMS_PASSES_TD
#define NOVA_DIALECT_NOVA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def NovaAttachTarget : Pass<"nova-attach-target", "::mlir::ModuleOp"> {
  let summary = "attach a #nova.target hardware description to the module";
  let description = [{
    Reads a target description (`targets/<name>.json`, or a path to such a
    file) and attaches it to the module as the `nova.target` attribute, which
    the tiling, memory planning and op verifiers read. The simulator loads the
    same file, so the hardware is described exactly once.

    Before:
    ```mlir
    module {}
    ```
    After `--nova-attach-target="target=nova-t1 chips=4"`:
    ```mlir
    module attributes {nova.target = #nova.target<name = "nova-t1", clock_mhz = 1400,
        matrix_rows = 128, matrix_cols = 128, ..., chips = 4, topology = switch, ...>} {}
    ```
    A name is looked up in the `targets/` folder next to the tools (installed
    package) or in the source tree the tools were built from.
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect"];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"nova-t1\"",
           "target name (a file in targets/) or path to a target .json">,
    Option<"chips", "chips", "int64_t", /*default=*/"0",
           "number of chips in the system; 0 keeps the file's value">,
  ];
}

def NovaTile : Pass<"nova-tile", "::mlir::func::FuncOp"> {
  let summary = "tile linalg ops to the target's matrix unit and SRAM";
  let description = [{
    Tiles every linalg op with upstream TilingInterface tiling (`scf.for`
    loops) and tile sizes derived from the module's `#nova.target`:

    * contractions (matmul, batch_matmul, any op with contraction dims): batch
      dims by 1, the innermost N by the matrix unit's columns, M by up to
      `max-rows` rows limited by the accumulator; K stays whole while the
      operand strips fit the SRAM budget, else it is tiled by multiples of the
      matrix unit's rows;
    * an elementwise consumer of a contraction is tiled together with it:
      the contraction and its zero fill are fused into the consumer's loop
      (tile-and-fuse), so the epilogue (bias, GELU, residual) reads the
      contraction's tile from on-chip memory;
    * other ops: outer parallel dims by 1, the two innermost parallel dims by
      at most `max-rows` x `max-cols`; reduction dims stay whole.

    Every tile's operands (and the body temporaries of a generic), double
    buffered, must fit `sram_bytes`; tiles shrink until they do, and an op
    whose smallest tile cannot fit is an error naming the op and the numbers.

    Before:
    ```mlir
    %0 = linalg.matmul ins(%a, %b : tensor<256x768xf32>, tensor<768x3072xf32>)
                       outs(%fill : tensor<256x3072xf32>) -> tensor<256x3072xf32>
    %1 = linalg.generic {...} ins(%0, %bias ...) outs(...) { ... math.erf ... }
    ```
    After:
    ```mlir
    %r = scf.for %i = %c0 to %c256 step %c256 iter_args(%o = %init) {
      %r2 = scf.for %j = %c0 to %c3072 step %c128 iter_args(%o2 = %o) {
        %f = linalg.fill ... -> tensor<256x128xf32>
        %m = linalg.matmul ins(... tensor<256x768xf32>, tensor<768x128xf32>) outs(%f ...)
        %e = linalg.generic {...} ins(%m, ...) { ... math.erf ... }
        %ins = tensor.insert_slice %e into %o2[%i, %j] [256, 128] [1, 1]
        scf.yield %ins
      }
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::affine::AffineDialect"];
  let options = [
    Option<"maxRows", "max-rows", "int64_t", /*default=*/"512",
           "largest number of rows (M, or the second-innermost parallel dim) in a tile">,
    Option<"maxCols", "max-cols", "int64_t", /*default=*/"512",
           "largest innermost parallel tile size of a non-contraction op">,
  ];
  let statistics = [
    Statistic<"numTiled", "tiled-ops", "Number of linalg ops tiled">,
    Statistic<"numFused", "fused-producers", "Number of producers fused into a consumer's tile loop">,
    Statistic<"peakTileBytes", "peak-tile-bytes", "Largest double-buffered SRAM footprint of one tile">,
  ];
}

def NovaBufferize : Pass<"nova-bufferize", "::mlir::ModuleOp"> {
  let summary = "one-shot bufferize with HBM and SRAM memory spaces";
  let description = [{
    Runs upstream One-Shot Bufferize over the whole module (function
    boundaries included, identity layouts) after choosing a memory level for
    every buffer: tensors created inside a tile loop (after folding
    `extract_slice(tensor.empty)` into a tile-sized `tensor.empty`) become
    `bufferization.alloc_tensor` in `#nova.memory_space<sram>`; function
    arguments, results and everything else default to
    `#nova.memory_space<hbm>`.

    Before:
    ```mlir
    func.func @f(%a: tensor<128x768xf32>) -> tensor<128x768xf32> {
      scf.for ... {
        %e = tensor.empty() : tensor<128x128xf32>
        %f = linalg.fill ins(%c0 : f32) outs(%e : tensor<128x128xf32>) -> tensor<128x128xf32>
    ```
    After:
    ```mlir
    func.func @f(%a: memref<128x768xf32, #nova.memory_space<hbm>>) -> memref<128x768xf32, #nova.memory_space<hbm>> {
      scf.for ... {
        %e = memref.alloc() : memref<128x128xf32, #nova.memory_space<sram>>
        linalg.fill ins(%c0 : f32) outs(%e : memref<128x128xf32, #nova.memory_space<sram>>)
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::nova::NovaDialect"];
  let statistics = [
    Statistic<"numSramTensors", "sram-tensors", "Tensors placed in sram">,
    Statistic<"numAllocs", "allocs", "Buffers allocated by bufferization">,
    Statistic<"numCopies", "copies", "Buffer copies inserted by bufferization">,
  ];
}

#endif // NOVA_DIALECT_NOVA_TRANSFORMS_PASSES_TD
