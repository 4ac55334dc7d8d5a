//===- NovaISADialect.td - the nova_isa instruction dialect -*- tablegen -*-===//
#ifndef NOVA_DIALECT_NOVAISA_IR_NOVAISADIALECT_TD
#define NOVA_DIALECT_NOVAISA_IR_NOVAISADIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def NovaISA_Dialect : Dialect {
  let name = "nova_isa";
  let cppNamespace = "::mlir::nova_isa";
  let summary = "Instructions of the simulated Nova ISA, one op per instruction";
  let description = [{
    Every op of `nova_isa` is one machine instruction of the Nova ISA
    specified in `docs/isa.md`, carrying the engine that executes it.
  }];
  let dependentDialects = ["::mlir::nova::NovaDialect"];
  let useDefaultAttributePrinterParser = 1;
}

class NovaISA_Op<string mnemonic, list<Trait> traits = []>
    : Op<NovaISA_Dialect, mnemonic, traits>;

class NovaISA_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<NovaISA_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // NOVA_DIALECT_NOVAISA_IR_NOVAISADIALECT_TD
