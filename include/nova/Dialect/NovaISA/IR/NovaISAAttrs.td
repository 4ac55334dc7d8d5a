//===- NovaISAAttrs.td - nova_isa enums and attributes -----*- tablegen -*-===//
#ifndef NOVA_DIALECT_NOVAISA_IR_NOVAISAATTRS_TD
#define NOVA_DIALECT_NOVAISA_IR_NOVAISAATTRS_TD

include "nova/Dialect/NovaISA/IR/NovaISADialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonAttrConstraints.td"

//===----------------------------------------------------------------------===//
// Enums (codes are the encoding of docs/isa.md)
//===----------------------------------------------------------------------===//

def NovaISA_Engine : I32EnumAttr<"Engine", "engine that executes an instruction", [
    I32EnumAttrCase<"Matrix", 0, "matrix">,
    I32EnumAttrCase<"Vector", 1, "vector">,
    I32EnumAttrCase<"Scalar", 2, "scalar">,
    I32EnumAttrCase<"DMA", 3, "dma">,
    I32EnumAttrCase<"Collective", 4, "collective">,
    // The activation engine of a target with an `activation` block (ISA v3).
    I32EnumAttrCase<"Activation", 5, "activation">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::nova_isa";
}

def NovaISA_SaluKind : I32EnumAttr<"SaluKind", "scalar ALU operation", [
    I32EnumAttrCase<"Add", 0, "add">,
    I32EnumAttrCase<"Sub", 1, "sub">,
    I32EnumAttrCase<"Mul", 2, "mul">,
    I32EnumAttrCase<"Div", 3, "div">,
    I32EnumAttrCase<"Rem", 4, "rem">,
    I32EnumAttrCase<"Min", 5, "min">,
    I32EnumAttrCase<"Max", 6, "max">,
    I32EnumAttrCase<"Eq", 7, "eq">,
    I32EnumAttrCase<"Ne", 8, "ne">,
    I32EnumAttrCase<"Lt", 9, "lt">,
    I32EnumAttrCase<"Le", 10, "le">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::nova_isa";
}

def NovaISA_EngineAttr : EnumAttr<NovaISA_Dialect, NovaISA_Engine, "engine"> {
  let summary = "engine that executes an instruction";
  let assemblyFormat = "`<` $value `>`";
}

def NovaISA_SaluKindAttr : EnumAttr<NovaISA_Dialect, NovaISA_SaluKind, "salu_kind"> {
  let summary = "operation of a scalar ALU instruction";
  let assemblyFormat = "`<` $value `>`";
}

// The nova dialect's enum attributes, referred to by their C++ classes (their
// ODS records would make -gen-enum-decls emit nova's enums a second time).
class NovaISA_NovaEnumAttr<string attrClass, string enumClass, string desc>
    : Attr<CPred<"::llvm::isa<" # attrClass # ">($_self)">, desc> {
  let storageType = attrClass;
  let returnType = enumClass;
  let convertFromStorage = "$_self.getValue()";
  let constBuilderCall = attrClass # "::get($_builder.getContext(), $0)";
}
def NovaISA_ElementwiseKindAttr : NovaISA_NovaEnumAttr<
    "::mlir::nova::ElementwiseKindAttr", "::mlir::nova::ElementwiseKind",
    "nova elementwise kind">;
def NovaISA_ReductionKindAttr : NovaISA_NovaEnumAttr<
    "::mlir::nova::ReductionKindAttr", "::mlir::nova::ReductionKind",
    "nova reduction kind">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def NovaISA_TileAttr : NovaISA_Attr<"Tile", "tile"> {
  let summary = "static descriptor of a tile operand";
  let description = [{
    Memory space, element type, sizes and element strides of a tile; the
    address comes from a scalar register. Element `(i0, .., in-1)` lives at
    byte `addr + elt_bytes * sum(i_k * stride_k)`. Rank 1 to 4, positive
    sizes, non-negative strides, element type f32, bf16 or f16.

    ```mlir
    #nova_isa.tile<sram, f32, [128, 64], [64, 1]>
    ```
  }];
  let parameters = (ins
    "::mlir::nova::MemorySpace":$memorySpace,
    "::mlir::Type":$elementType,
    ArrayRefParameter<"int64_t", "sizes">:$shape,
    ArrayRefParameter<"int64_t", "element strides">:$strides);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
    /// Bytes per element: 4 for f32, 2 for bf16 and f16.
    int64_t getElementBytes() const;
    int64_t getNumElements() const;
    /// Bytes from the first to one past the last element addressed.
    int64_t getExtentBytes() const;
  }];
}

// A list of semaphore ids, encoded as a 64-bit mask.
def NovaISA_SemaphoreIdsInRange : AttrConstraint<
    CPred<"::llvm::all_of(::llvm::cast<::mlir::DenseI64ArrayAttr>($_self)"
          ".asArrayRef(), [](int64_t id) { return id >= 0 && id < 64; })">,
    "whose values are semaphore ids in [0, 63]">;
def NovaISA_SemaphoreList : ConfinedAttr<DenseI64ArrayAttr, [
    NovaISA_SemaphoreIdsInRange, DenseArrayStrictlySorted<DenseI64ArrayAttr>]>;

// Replica groups, written `[[0, 1], [2, 3]]` as in the nova dialect.
def NovaISA_ReplicaGroupsAttr
    : TypedArrayAttrBase<DenseI64ArrayAttr, "list of replica groups">;

// An immediate of vfill / vscalar: f64 for a float tile, the exact i64 for
// an integer or i1 tile (include/nova/Dialect/Nova/IR/Immediates.h).
def NovaISA_ImmediateAttr : AnyAttrOf<[F64Attr, I64Attr]>;

#endif // NOVA_DIALECT_NOVAISA_IR_NOVAISAATTRS_TD
