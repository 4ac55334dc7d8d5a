//===- NovaISAInterfaces.td - nova_isa op interfaces -------*- tablegen -*-===//
#ifndef NOVA_DIALECT_NOVAISA_IR_NOVAISAINTERFACES_TD
#define NOVA_DIALECT_NOVAISA_IR_NOVAISAINTERFACES_TD

include "mlir/IR/OpBase.td"

def NovaISA_InstructionOpInterface : OpInterface<"InstructionOpInterface"> {
  let description = [{
    A machine instruction of the Nova ISA: it names the engine that executes
    it, which must be one of the engines its opcode allows.
  }];
  let cppNamespace = "::mlir::nova_isa";
  let methods = [
    InterfaceMethod<"the engine that executes this instruction",
      "::mlir::nova_isa::Engine", "getEngine">,
    StaticInterfaceMethod<"the engines this instruction may run on",
      "::llvm::ArrayRef<::mlir::nova_isa::Engine>", "getAllowedEngines">,
  ];
  let verify = [{ return ::mlir::nova_isa::verifyInstruction($_op); }];
}

#endif // NOVA_DIALECT_NOVAISA_IR_NOVAISAINTERFACES_TD
