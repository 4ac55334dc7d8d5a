//===- NovaAttrs.td - nova dialect attributes and enums ----*- tablegen -*-===//
#ifndef NOVA_DIALECT_NOVA_IR_NOVAATTRS_TD
#define NOVA_DIALECT_NOVA_IR_NOVAATTRS_TD

include "nova/Dialect/Nova/IR/NovaDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Nova_MemorySpace : I32EnumAttr<"MemorySpace", "memory level of a buffer", [
    I32EnumAttrCase<"HBM", 0, "hbm">,
    I32EnumAttrCase<"SRAM", 1, "sram">,
    I32EnumAttrCase<"ACC", 2, "acc">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::nova";
}

def Nova_Topology : I32EnumAttr<"Topology", "interconnect topology", [
    I32EnumAttrCase<"Switch", 0, "switch">,
    I32EnumAttrCase<"Ring", 1, "ring">,
    I32EnumAttrCase<"Torus2D", 2, "torus2d">,
    I32EnumAttrCase<"PCIe", 3, "pcie">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::nova";
}

def Nova_ElementwiseKind : I32EnumAttr<"ElementwiseKind",
    "operation of a vector elementwise op", [
    // Unary.
    I32EnumAttrCase<"Copy", 0, "copy">,
    I32EnumAttrCase<"Neg", 1, "neg">,
    I32EnumAttrCase<"Abs", 2, "abs">,
    I32EnumAttrCase<"Exp", 3, "exp">,
    I32EnumAttrCase<"Log", 4, "log">,
    I32EnumAttrCase<"Sqrt", 5, "sqrt">,
    I32EnumAttrCase<"Rsqrt", 6, "rsqrt">,
    I32EnumAttrCase<"Recip", 7, "recip">,
    I32EnumAttrCase<"Tanh", 8, "tanh">,
    I32EnumAttrCase<"Erf", 9, "erf">,
    I32EnumAttrCase<"Sigmoid", 10, "sigmoid">,
    I32EnumAttrCase<"Relu", 11, "relu">,
    I32EnumAttrCase<"Floor", 12, "floor">,
    I32EnumAttrCase<"Ceil", 13, "ceil">,
    I32EnumAttrCase<"Round", 14, "round">,
    I32EnumAttrCase<"Trunc", 15, "trunc">,
    I32EnumAttrCase<"Sin", 16, "sin">,
    I32EnumAttrCase<"Cos", 17, "cos">,
    I32EnumAttrCase<"Log1p", 18, "log1p">,
    I32EnumAttrCase<"Not", 19, "not">,
    // Binary.
    I32EnumAttrCase<"Add", 32, "add">,
    I32EnumAttrCase<"Sub", 33, "sub">,
    I32EnumAttrCase<"Mul", 34, "mul">,
    I32EnumAttrCase<"Div", 35, "div">,
    I32EnumAttrCase<"Max", 36, "max">,
    I32EnumAttrCase<"Min", 37, "min">,
    I32EnumAttrCase<"Pow", 38, "pow">,
    I32EnumAttrCase<"CmpEq", 39, "cmp_eq">,
    I32EnumAttrCase<"CmpNe", 40, "cmp_ne">,
    I32EnumAttrCase<"CmpLt", 41, "cmp_lt">,
    I32EnumAttrCase<"CmpLe", 42, "cmp_le">,
    I32EnumAttrCase<"CmpGt", 43, "cmp_gt">,
    I32EnumAttrCase<"CmpGe", 44, "cmp_ge">,
    I32EnumAttrCase<"Rem", 45, "rem">,
    I32EnumAttrCase<"FloorDiv", 46, "floordiv">,
    I32EnumAttrCase<"And", 47, "and">,
    I32EnumAttrCase<"Or", 48, "or">,
    I32EnumAttrCase<"Xor", 49, "xor">,
    I32EnumAttrCase<"Shl", 50, "shl">,
    I32EnumAttrCase<"Shr", 51, "shr">,
    I32EnumAttrCase<"ShrU", 52, "shru">,
    // Ternary.
    I32EnumAttrCase<"Select", 64, "select">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::nova";
}

def Nova_ReductionKind : I32EnumAttr<"ReductionKind",
    "combiner of a reduction or reducing collective", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">,
    I32EnumAttrCase<"Avg", 3, "avg">,
    I32EnumAttrCase<"Prod", 4, "prod">,
    I32EnumAttrCase<"ArgMax", 5, "argmax">,
    I32EnumAttrCase<"ArgMin", 6, "argmin">]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::nova";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Nova_MemorySpaceAttr : EnumAttr<Nova_Dialect, Nova_MemorySpace, "memory_space"> {
  let summary = "memory level of a buffer, usable as a memref memory space";
  let description = [{
    `hbm` is the chip's large off-chip memory, `sram` its software-managed
    scratchpad and `acc` the matrix unit's accumulator (partial-sum) buffer.

    ```mlir
    memref<128x512xf32, #nova.memory_space<sram>>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

def Nova_TopologyAttr : EnumAttr<Nova_Dialect, Nova_Topology, "topology"> {
  let assemblyFormat = "`<` $value `>`";
}

def Nova_ElementwiseKindAttr
    : EnumAttr<Nova_Dialect, Nova_ElementwiseKind, "elementwise_kind"> {
  let assemblyFormat = "`<` $value `>`";
}

def Nova_ReductionKindAttr
    : EnumAttr<Nova_Dialect, Nova_ReductionKind, "reduction_kind"> {
  let assemblyFormat = "`<` $value `>`";
}

def Nova_TargetAttr : Nova_Attr<"Target", "target"> {
  let summary = "hardware description of a Nova system";
  let description = [{
    The single description of the simulated hardware that the compiler's cost
    model and the simulator both read (the simulator loads the same fields from
    `targets/<name>.json`). Bandwidths are in GB/s (10^9 bytes per second),
    sizes in bytes, latency in nanoseconds.

    The matrix unit is a `matrix_rows` x `matrix_cols` systolic array holding a
    stationary [K, N] tile (K <= matrix_rows, N <= matrix_cols) through which
    rows of the other operand stream. The vector unit processes `vector_lanes`
    elements per cycle. `chips` chips are joined by `topology` links of
    `link_gbps` per direction and `link_latency_ns` latency.

    Several nodes: with `chips_per_node` set (0: absent, all chips on one
    node), chip `c` sits on node `c / chips_per_node` and `topology`/`link_*`
    describe the links inside one node. Each node has `nics_per_node` NICs
    (0: one per chip; chips map to NICs rail-style, local chip `l` to NIC
    `l / (chips_per_node / nics_per_node)`) of `nic_gbps` per direction and
    `nic_latency_ns` latency through one full-bisection network switch
    (`nic_latency_ns` -1: absent). Every one of these is left out when absent,
    so a one-node target prints as before.

    `timing` holds the simulator's timing constants (the `"timing"` object of
    the target file, docs/isa.md "Timing constants"): names to integers,
    floats, bools or strings. The compiler carries it into the binary's
    target description; it is optional here so that hand-written modules can
    omit it (the simulator then refuses such a binary).

    ```mlir
    module attributes {nova.target = #nova.target<name = "nova-t1",
        clock_mhz = 1400, matrix_rows = 128, matrix_cols = 128,
        vector_lanes = 128, sram_bytes = 25165824, sram_gbps = 4000,
        acc_bytes = 2097152, hbm_bytes = 34359738368, hbm_gbps = 820,
        dma_engines = 16, chips = 8, topology = switch, link_gbps = 450,
        link_latency_ns = 1000>} {}
    ```
  }];
  let parameters = (ins
    StringRefParameter<"target name">:$name,
    "int64_t":$clock_mhz,
    "int64_t":$matrix_rows,
    "int64_t":$matrix_cols,
    "int64_t":$vector_lanes,
    "int64_t":$sram_bytes,
    "int64_t":$sram_gbps,
    "int64_t":$acc_bytes,
    "int64_t":$hbm_bytes,
    "int64_t":$hbm_gbps,
    "int64_t":$dma_engines,
    "int64_t":$chips,
    EnumParameter<Nova_Topology>:$topology,
    "int64_t":$link_gbps,
    "int64_t":$link_latency_ns,
    DefaultValuedParameter<"int64_t", "0">:$chips_per_node,
    DefaultValuedParameter<"int64_t", "0">:$nics_per_node,
    DefaultValuedParameter<"int64_t", "0">:$nic_gbps,
    DefaultValuedParameter<"int64_t", "-1">:$nic_latency_ns,
    OptionalParameter<"DictionaryAttr">:$timing);
  let builders = [
    AttrBuilder<(ins "StringRef":$name, "int64_t":$clock_mhz,
        "int64_t":$matrix_rows, "int64_t":$matrix_cols,
        "int64_t":$vector_lanes, "int64_t":$sram_bytes, "int64_t":$sram_gbps,
        "int64_t":$acc_bytes, "int64_t":$hbm_bytes, "int64_t":$hbm_gbps,
        "int64_t":$dma_engines, "int64_t":$chips, "Topology":$topology,
        "int64_t":$link_gbps, "int64_t":$link_latency_ns), [{
      return $_get($_ctxt, name, clock_mhz, matrix_rows, matrix_cols,
                   vector_lanes, sram_bytes, sram_gbps, acc_bytes, hbm_bytes,
                   hbm_gbps, dma_engines, chips, topology, link_gbps,
                   link_latency_ns, /*chips_per_node=*/0, /*nics_per_node=*/0,
                   /*nic_gbps=*/0, /*nic_latency_ns=*/-1, DictionaryAttr());
    }]>
  ];
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

// An immediate (fill value, scalar operand): f64 for a float tile, the exact
// i64 for an integer or i1 tile (include/nova/Dialect/Nova/IR/Immediates.h).
def Nova_ImmediateAttr : AnyAttrOf<[F64Attr, I64Attr]>;

#endif // NOVA_DIALECT_NOVA_IR_NOVAATTRS_TD
