//===- NovaISAOps.td - nova_isa instructions ---------------*- tablegen -*-===//
#ifndef NOVA_DIALECT_NOVAISA_IR_NOVAISAOPS_TD
#define NOVA_DIALECT_NOVAISA_IR_NOVAISAOPS_TD

include "nova/Dialect/NovaISA/IR/NovaISADialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def NovaISA_NopOp : NovaISA_Op<"nop"> {
  let summary = "placeholder";
  let assemblyFormat = "attr-dict";
}

#endif // NOVA_DIALECT_NOVAISA_IR_NOVAISAOPS_TD
