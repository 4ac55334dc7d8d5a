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

#endif // NOVA_DIALECT_NOVA_TRANSFORMS_PASSES_TD
