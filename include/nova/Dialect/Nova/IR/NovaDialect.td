//===- NovaDialect.td - the nova tile-level dialect --------*- tablegen -*-===//
#ifndef NOVA_DIALECT_NOVA_IR_NOVADIALECT_TD
#define NOVA_DIALECT_NOVA_IR_NOVADIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Nova_Dialect : Dialect {
  let name = "nova";
  let cppNamespace = "::mlir::nova";
  let summary = "Tile-level dialect of the Nova accelerator";
  let description = [{
    The `nova` dialect models one Nova chip at the granularity of tiles:
    compute ops (matrix multiply-accumulate, vector elementwise, reductions,
    transposes) read and write buffers in on-chip SRAM or in the matrix unit's
    accumulator, asynchronous DMA moves tiles between HBM and SRAM or to a peer
    chip, and collectives exchange buffers between chips. Buffers are memrefs
    whose memory space is a `#nova.memory_space<...>` attribute.

    A module may carry the hardware description as `nova.target`; op verifiers
    then also check tile sizes, peers and replica groups against it.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  // The discardable attributes Nova's passes put on ops, functions and
  // function arguments, named once here: code reads a name as
  // `NovaDialect::AddressAttrHelper::getNameStr()` ("nova.address"), never
  // as a string literal. verifyOperationAttribute checks those on ops.
  //   address          buffer / global: its byte address (nova-plan-memory)
  //   role             argument: "input" or "output" (nova-plan-memory)
  //   aliasing_output  input: the result index it is donated to
  //                    (nova-alias-outputs)
  //   aliases          out-param: the input whose buffer it shares
  //   stack_of         stacked argument (nova-roll-layers): the arguments it
  //                    stacks, which lie inside it, one after the other
  //   layers           loop over identical layers (nova-roll-layers)
  //   chips            function: the chips that run it (one program per
  //                    pipeline stage)
  //   name             argument: the user's name for it
  //   sram_peak, acc_peak, hbm_peak  function: bytes used at the peak
  let discardableAttrs = (ins
    "::mlir::IntegerAttr":$address,
    "::mlir::StringAttr":$role,
    "::mlir::IntegerAttr":$aliasing_output,
    "::mlir::IntegerAttr":$aliases,
    "::mlir::DenseI64ArrayAttr":$stack_of,
    "::mlir::UnitAttr":$layers,
    "::mlir::DenseI64ArrayAttr":$chips,
    "::mlir::StringAttr":$name,
    "::mlir::IntegerAttr":$sram_peak,
    "::mlir::IntegerAttr":$acc_peak,
    "::mlir::IntegerAttr":$hbm_peak
  );
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();

    /// Name of the module attribute that holds the #nova.target.
    static constexpr ::llvm::StringLiteral getTargetAttrName() {
      return ::llvm::StringLiteral("nova.target");
    }
  }];
}

class Nova_Op<string mnemonic, list<Trait> traits = []>
    : Op<Nova_Dialect, mnemonic, traits>;

class Nova_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Nova_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class Nova_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Nova_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

#endif // NOVA_DIALECT_NOVA_IR_NOVADIALECT_TD
