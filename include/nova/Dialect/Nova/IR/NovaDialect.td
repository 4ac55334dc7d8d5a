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
