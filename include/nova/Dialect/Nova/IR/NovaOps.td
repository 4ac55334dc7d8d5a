//===- NovaOps.td - nova dialect operations ----------------*- tablegen -*-===//
#ifndef NOVA_DIALECT_NOVA_IR_NOVAOPS_TD
#define NOVA_DIALECT_NOVA_IR_NOVAOPS_TD

include "nova/Dialect/Nova/IR/NovaDialect.td"
include "nova/Dialect/Nova/IR/NovaAttrs.td"
include "nova/Dialect/Nova/IR/NovaTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Dialect/Shard/Interfaces/ShardingInterface.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"

// Replica groups: a list of equally sized groups of chip ids, written
// `[[0, 1], [2, 3]]`; every chip of the system is in exactly one group.
def Nova_ReplicaGroupsAttr
    : TypedArrayAttrBase<DenseI64ArrayAttr, "list of replica groups">;

class Nova_BufferOf<list<Type> types>
    : StaticShapeMemRefOf<types>;
def Nova_FloatBuffer : Nova_BufferOf<[F32, BF16, F16]>;
// Collectives move floats and sum integers (a data-parallel loss's label count).
def Nova_CollectiveBuffer : Nova_BufferOf<[F32, BF16, F16, I64, I32]>;
// Every element type a tile may hold (nova/Dialect/Nova/IR/ElementTypes.h).
def Nova_TileBuffer : Nova_BufferOf<[F32, BF16, F16, I64, I32, I8, I1]>;
def Nova_IndexBuffer : Nova_BufferOf<[I64, I32]>;
defvar Nova_AnyBuffer = AnyStaticShapeMemRef;
// A statically shaped f32 tensor or buffer (the fused ops' operands).
def Nova_ShapedF32 : AnyTypeOf<[StaticShapeMemRefOf<[F32]>, StaticShapeTensorOf<[F32]>],
                               "static f32 tensor or memref", "::mlir::ShapedType">;
def Nova_ShapedF32OrBF16 : AnyTypeOf<[StaticShapeMemRefOf<[F32, BF16]>,
                                      StaticShapeTensorOf<[F32, BF16]>],
                                     "static f32 or bf16 tensor or memref",
                                     "::mlir::ShapedType">;

//===----------------------------------------------------------------------===//
// Data movement and synchronisation
//===----------------------------------------------------------------------===//

def Nova_DmaStartOp : Nova_Op<"dma_start"> {
  let summary = "start an asynchronous copy between memory levels or chips";
  let description = [{
    Copies `source` to `target` on a DMA engine and returns a token that
    `nova.wait` consumes. Both buffers have the same shape and element type and
    live in `hbm` or `sram` (the accumulator is drained by the vector unit, not
    by DMA). With `peer`, `target` is an HBM buffer of chip `peer`.

    ```mlir
    %t = nova.dma_start %a, %b : memref<64x128xf32, #nova.memory_space<hbm>> -> memref<64x128xf32, #nova.memory_space<sram>>
    %u = nova.dma_start %c, %d peer 3 : memref<64xf32, #nova.memory_space<hbm>> -> memref<64xf32, #nova.memory_space<hbm>>
    ```
  }];
  let arguments = (ins Arg<Nova_AnyBuffer, "copied buffer", [MemRead]>:$source,
                       Arg<Nova_AnyBuffer, "destination", [MemWrite]>:$target,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$peer);
  let results = (outs Nova_TokenType:$token);
  let assemblyFormat = [{
    $source `,` $target (`peer` $peer^)? attr-dict `:` type($source) `->` type($target)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$source, "::mlir::Value":$target,
                   CArg<"::mlir::IntegerAttr", "{}">:$peer), [{
      build($_builder, $_state, TokenType::get($_builder.getContext()),
            source, target, peer);
    }]>];
  let hasVerifier = 1;
}

def Nova_ChipIdOp : Nova_Op<"chip_id", [Pure]> {
  let summary = "this chip's id, for the chip-dependent addressing of SPMD programs";
  let description = [{
    Every chip runs the same SPMD program; a value that differs per chip
    (which slice of a replicated tensor this chip keeps) is computed from
    its id. Lowers to the scalar `CHIP_ID` instruction.

    ```mlir
    %id = nova.chip_id
    ```
  }];
  let results = (outs Index:$id);
  let assemblyFormat = "attr-dict";
}

def Nova_WaitOp : Nova_Op<"wait"> {
  let summary = "block until asynchronous operations complete";
  let description = [{
    ```mlir
    nova.wait %t0, %t1
    ```
  }];
  let arguments = (ins Variadic<Nova_TokenType>:$tokens);
  let assemblyFormat = "$tokens attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compute on tiles
//===----------------------------------------------------------------------===//

def Nova_MatmulOp : Nova_Op<"matmul"> {
  let summary = "matrix multiply-accumulate on the matrix unit";
  let description = [{
    `acc = lhs * rhs`, or `acc += lhs * rhs` with `accumulate`. `lhs` [M, K]
    and `rhs` [K, N] are SRAM tiles of one float type; `acc` [M, N] is an f32
    tile of the accumulator. With a target attached, K must not exceed the
    matrix unit's rows, N its columns, and the tile must fit the accumulator.

    ```mlir
    nova.matmul ins(%a, %b : memref<64x128xbf16, #nova.memory_space<sram>>, memref<128x128xbf16, #nova.memory_space<sram>>)
                outs(%c : memref<64x128xf32, #nova.memory_space<acc>>) accumulate
    ```
  }];
  let arguments = (ins Arg<Nova_FloatBuffer, "", [MemRead]>:$lhs,
                       Arg<Nova_FloatBuffer, "", [MemRead]>:$rhs,
                       Arg<Nova_FloatBuffer, "", [MemRead, MemWrite]>:$acc,
                       UnitAttr:$accumulate);
  let assemblyFormat = [{
    `ins` `(` $lhs `,` $rhs `:` type($lhs) `,` type($rhs) `)`
    `outs` `(` $acc `:` type($acc) `)` (`accumulate` $accumulate^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Nova_ElementwiseOp : Nova_Op<"elementwise"> {
  let summary = "vector elementwise operation with broadcasting";
  let description = [{
    Applies `kind` element by element. Unary kinds take one input, binary
    kinds two inputs or one input and a `scalar` right operand, `select` takes
    (condition, true value, false value) where a non-zero condition selects
    the true value. Comparisons produce 1 or 0, in the inputs' type or as i1.
    Inputs have the output's rank and broadcast along dimensions of size 1.
    All operands share one element type, except that float types mix (each
    read as f32, the f32 result rounded to the output's type: an f32 op
    writing bf16 stores what the op and a rounding `copy` stored), `copy`
    converts, a comparison may write i1 and `select`'s condition may have
    any type.
    Integer tiles compute with the integer semantics of docs/isa.md 2.6; the
    scalar has the inputs' kind of type: an f64 for float inputs, the exact
    i64 for integer and i1 inputs (verified).
    Inputs live in SRAM or the accumulator, the output in SRAM or (to
    rescale a matmul result in place) the accumulator.

    ```mlir
    nova.elementwise <add> ins(%x, %bias : memref<64x128xf32, #nova.memory_space<acc>>, memref<1x128xf32, #nova.memory_space<sram>>)
                           outs(%y : memref<64x128xf32, #nova.memory_space<sram>>)
    nova.elementwise <mul> scalar(5.000000e-01) ins(%y : memref<64x128xf32, #nova.memory_space<sram>>)
                           outs(%y : memref<64x128xf32, #nova.memory_space<sram>>)
    ```
  }];
  let arguments = (ins Nova_ElementwiseKindAttr:$kind,
                       Arg<Variadic<Nova_TileBuffer>, "", [MemRead]>:$inputs,
                       Arg<Nova_TileBuffer, "", [MemWrite]>:$output,
                       OptionalAttr<Nova_ImmediateAttr>:$scalar);
  let assemblyFormat = [{
    $kind (`scalar` `(` custom<Immediate>($scalar)^ `)`)? `ins` `(` $inputs `:` type($inputs) `)`
    `outs` `(` $output `:` type($output) `)` attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of buffer inputs `kind` takes without a scalar operand.
    static unsigned getArity(ElementwiseKind kind);
  }];
}

def Nova_ElementwisePairOp : Nova_Op<"elementwise_pair"> {
  let summary = "two binary elementwise stages in one vector pass";
  let description = [{
    `output = kind1(kind0(x, a), b)`, with `x` the first input, and `a`, `b`
    each the next input or an immediate (`scalar(...)` after its kind). The
    intermediate is rounded to the inputs' type: the result is that of two
    `nova.elementwise` ops through a buffer of the inputs' type. Inputs are
    float buffers of one element type, the output any float type; kinds `add sub mul div max min`; `x` has the
    output's shape, `a` and `b` broadcast; at most two operands are read at
    the full rate (docs/isa.md, VFUSED). Formed by `nova-fuse-vector-pairs`.

    ```mlir
    nova.elementwise_pair <sub> then <mul> ins(%x, %mean, %rstd : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x1xf32, #nova.memory_space<sram>>, memref<64x1xf32, #nova.memory_space<sram>>)
                          outs(%y : memref<64x128xf32, #nova.memory_space<sram>>)
    nova.elementwise_pair <mul> scalar(5.000000e-01) then <add> ins(%x, %z : memref<64x128xf32, #nova.memory_space<sram>>, memref<64x128xf32, #nova.memory_space<sram>>)
                          outs(%y : memref<64x128xf32, #nova.memory_space<sram>>)
    ```
  }];
  let arguments = (ins Nova_ElementwiseKindAttr:$kind0,
                       Nova_ElementwiseKindAttr:$kind1,
                       Arg<Variadic<Nova_TileBuffer>, "", [MemRead]>:$inputs,
                       Arg<Nova_TileBuffer, "", [MemWrite]>:$output,
                       OptionalAttr<Nova_ImmediateAttr>:$a_scalar,
                       OptionalAttr<Nova_ImmediateAttr>:$b_scalar);
  let assemblyFormat = [{
    $kind0 (`scalar` `(` custom<Immediate>($a_scalar)^ `)`)? `then` $kind1
    (`scalar` `(` custom<Immediate>($b_scalar)^ `)`)? `ins` `(` $inputs `:` type($inputs) `)`
    `outs` `(` $output `:` type($output) `)` attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The first stage's other operand: an input, or null with `a_scalar`.
    ::mlir::Value getA() { return getAScalarAttr() ? ::mlir::Value() : getInputs()[1]; }
    /// The second stage's other operand: an input, or null with `b_scalar`.
    ::mlir::Value getB() {
      return getBScalarAttr() ? ::mlir::Value() : getInputs().back();
    }
  }];
}

def Nova_ReduceOp : Nova_Op<"reduce"> {
  let summary = "reduce a tile along one dimension on the vector unit";
  let description = [{
    Combines the elements of `input` along `dim` with `kind` (`avg` is the
    mean; `argmax` / `argmin` write the position of the first maximum /
    minimum along `dim` into an i64 or i32 output). The output keeps the reduced dimension with size 1, so that it
    broadcasts back in a following `nova.elementwise`. Input and output
    share one element type, except that float types mix (a bf16 input is
    read as f32, reduced in f32 and rounded to the output's type).

    ```mlir
    nova.reduce <max> ins(%x : memref<64x128xf32, #nova.memory_space<sram>>)
                      outs(%m : memref<64x1xf32, #nova.memory_space<sram>>) dim 1
    ```
  }];
  let arguments = (ins Nova_ReductionKindAttr:$kind,
                       Arg<Nova_TileBuffer, "", [MemRead]>:$input,
                       Arg<Nova_TileBuffer, "", [MemWrite]>:$output,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let assemblyFormat = [{
    $kind `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    `dim` $dim attr-dict
  }];
  let hasVerifier = 1;
}

def Nova_TransposeOp : Nova_Op<"transpose"> {
  let summary = "permute the dimensions of a tile";
  let description = [{
    `output[i_perm[0], ..., i_perm[n-1]] = input[i_0, ..., i_n-1]`, that is
    `output` dimension `d` is `input` dimension `permutation[d]`.

    ```mlir
    nova.transpose ins(%x : memref<64x128xf32, #nova.memory_space<sram>>)
                   outs(%y : memref<128x64xf32, #nova.memory_space<sram>>) permutation = [1, 0]
    ```
  }];
  let arguments = (ins Arg<Nova_TileBuffer, "", [MemRead]>:$input,
                       Arg<Nova_TileBuffer, "", [MemWrite]>:$output,
                       DenseI64ArrayAttr:$permutation);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    `permutation` `=` $permutation attr-dict
  }];
  let hasVerifier = 1;
}

def Nova_FillOp : Nova_Op<"fill"> {
  let summary = "fill a tile with a constant";
  let description = [{
    ```mlir
    nova.fill 0.000000e+00 outs(%acc : memref<64x128xf32, #nova.memory_space<acc>>)
    nova.fill 0 value(%i) outs(%t : memref<1x1xi64, #nova.memory_space<sram>>)
    ```
    With `value`, the tile is filled with that index value (a loop induction
    variable entering tile arithmetic) instead of the attribute. The
    attribute is an f64 for a float tile and the exact i64 for an integer or
    i1 tile (verified): `nova.fill -7046029254386353131 outs(%t : memref<8xi64, ...>)`.
  }];
  let arguments = (ins Nova_ImmediateAttr:$value,
                       Arg<Nova_TileBuffer, "", [MemWrite]>:$output,
                       Optional<Index>:$dynamic_value);
  let assemblyFormat = [{
    custom<Immediate>($value) (`value` `(` $dynamic_value^ `)`)? `outs` `(` $output `:` type($output) `)` attr-dict
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Attribute":$value, "::mlir::Value":$output), [{
      build($_builder, $_state, value, output, ::mlir::Value());
    }]>];
  let hasVerifier = 1;
}

def Nova_IotaOp : Nova_Op<"iota"> {
  let summary = "fill a tile with the position of each element along one dimension";
  let description = [{
    `output[i_0, .., i_n-1] = i_dim`: the local index that `linalg.index`
    reads, before the tile's offset is added.

    ```mlir
    nova.iota outs(%i : memref<16x64xi64, #nova.memory_space<sram>>) dim 1
    ```
  }];
  let arguments = (ins Arg<Nova_TileBuffer, "", [MemWrite]>:$output,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let assemblyFormat = "`outs` `(` $output `:` type($output) `)` `dim` $dim attr-dict";
  let hasVerifier = 1;
}

def Nova_AssertOp : Nova_Op<"assert"> {
  let summary = "fail the program when any element of a tile is zero";
  let description = [{
    The checked form of `cf.assert`: at run time, a zero element of `condition`
    stops the program with `message` and the op's source location.

    ```mlir
    nova.assert ins(%ok : memref<1x1xi1, #nova.memory_space<sram>>) "index out of range"
    ```
  }];
  // The write effect keeps the check alive: an op that only reads is
  // trivially dead to the canonicalizer.
  let arguments = (ins Arg<Nova_TileBuffer, "", [MemRead, MemWrite]>:$condition,
                       StrAttr:$message);
  let assemblyFormat = "`ins` `(` $condition `:` type($condition) `)` $message attr-dict";
  let hasVerifier = 1;
}

def Nova_GatherOp : Nova_Op<"gather"> {
  let summary = "indexed DMA: gather elements of a buffer by computed positions";
  let description = [{
    `target[e] = source.flat[indices[e]]` for every element `e` of `target`,
    where `source.flat` numbers the elements of `source` row-major. A position
    outside `[0, numel(source))` is a run-time fault. `indices` is an integer
    SRAM tile of `target`'s shape; `source` and `target` have one element type
    and live in `hbm` or `sram`. Returns a token like `nova.dma_start`.

    ```mlir
    %t = nova.gather %table[%pos] into %rows : memref<128x64xf32, #nova.memory_space<hbm>>, memref<16x64xi64, #nova.memory_space<sram>> -> memref<16x64xf32, #nova.memory_space<sram>>
    ```
  }];
  let arguments = (ins Arg<Nova_AnyBuffer, "gathered buffer", [MemRead]>:$source,
                       Arg<Nova_IndexBuffer, "positions", [MemRead]>:$indices,
                       Arg<Nova_AnyBuffer, "destination", [MemWrite]>:$target);
  let results = (outs Nova_TokenType:$token);
  let assemblyFormat = [{
    $source `[` $indices `]` `into` $target attr-dict `:` type($source) `,` type($indices) `->` type($target)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$source, "::mlir::Value":$indices,
                   "::mlir::Value":$target), [{
      build($_builder, $_state, TokenType::get($_builder.getContext()),
            source, indices, target);
    }]>];
  let hasVerifier = 1;
}

def Nova_ScatterOp : Nova_Op<"scatter"> {
  let summary = "indexed DMA: add elements into a buffer at computed positions";
  let description = [{
    `target.flat[indices[e]] += source[e]` for every element `e` of `source`
    in row-major order, where `target.flat` numbers the elements of `target`
    row-major: repeated positions add up. A position outside
    `[0, numel(target))` is a run-time fault. `indices` is an integer SRAM
    tile of `source`'s shape; `source` and `target` have one element type and
    live in `hbm` or `sram`. Each run of consecutive positions (a whole row of
    a table) moves as one burst. Returns a token like `nova.dma_start`.

    ```mlir
    %t = nova.scatter %rows[%pos] into %table accumulate : memref<16x64xf32, #nova.memory_space<hbm>>, memref<16x64xi64, #nova.memory_space<sram>> -> memref<128x64xf32, #nova.memory_space<hbm>>
    ```
  }];
  let arguments = (ins Arg<Nova_AnyBuffer, "scattered buffer", [MemRead]>:$source,
                       Arg<Nova_IndexBuffer, "positions", [MemRead]>:$indices,
                       Arg<Nova_AnyBuffer, "destination", [MemRead, MemWrite]>:$target);
  let results = (outs Nova_TokenType:$token);
  let assemblyFormat = [{
    $source `[` $indices `]` `into` $target `accumulate` attr-dict `:` type($source) `,` type($indices) `->` type($target)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$source, "::mlir::Value":$indices,
                   "::mlir::Value":$target), [{
      build($_builder, $_state, TokenType::get($_builder.getContext()),
            source, indices, target);
    }]>];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused operations
//===----------------------------------------------------------------------===//

def Nova_AttentionOp : Nova_Op<"attention", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "fused scaled dot-product attention (flash attention)";
  let description = [{
    `out[b] = softmax(scale * query[b] @ K[b]^T + mask) @ value[b]` for
    every batch `b` (batch and heads folded into one dimension): `query`
    `[B, Tq, D]`, `keys` `[B, D, Tk]` (the keys as columns, as the score
    matmul reads them) or, with `key_rows`, `[B, Tk, D]` (one key per row,
    as torch lays them out), `value` `[B, Tk, Dv]`, `out` `[B, Tq, Dv]`, all
    f32. Rank-4 operands are sequence-major, `[B, T, H, D]` (each row holds
    every head, as a projection writes them; keys with `key_rows`): batch
    `b * H + h` of the rank-3 form is head `h` of `b`, read and written in
    place with strides, so splitting the heads off costs no copy.
    `query`, `keys` and `value` are all f32 or all bf16 (then the score
    matmuls run at the bf16 rate; the softmax, P and P V stay f32); `out` is
    f32.
    With `causal` (which needs `Tq == Tk`), query row `i` sees keys `0..i`
    only. The score matrix never exists in memory: `nova-fuse-attention`
    forms this op from the unfused matmul-softmax-matmul chain, and
    `convert-linalg-to-nova` lowers it to a loop over query blocks that keeps
    a running row maximum and sum (online softmax), skips key blocks a causal
    mask hides entirely, and reads each batch's keys and values from HBM
    once.

    Destination style: on tensors it returns the updated `out`; on buffers it
    writes `out` and has no result.

    ```mlir
    %o = nova.attention ins(%q, %kt, %v : tensor<4x256x64xf32>, tensor<4x64x256xf32>, tensor<4x256x64xf32>)
                        outs(%init : tensor<4x256x64xf32>) scale 1.250000e-01 causal -> tensor<4x256x64xf32>
    ```
  }];
  let arguments = (ins Nova_ShapedF32OrBF16:$query,
                       Nova_ShapedF32OrBF16:$keys,
                       Nova_ShapedF32OrBF16:$value,
                       Arg<Nova_ShapedF32, "", [MemWrite]>:$out,
                       F64Attr:$scale,
                       UnitAttr:$key_rows,
                       UnitAttr:$causal);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `ins` `(` $query `,` $keys `,` $value `:` type($query) `,` type($keys) `,` type($value) `)`
    `outs` `(` $out `:` type($out) `)` `scale` $scale (`key_rows` $key_rows^)? (`causal` $causal^)? attr-dict (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getOutMutable(); }
  }];
}

def Nova_ScatterAddOp : Nova_Op<"scatter_add", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "add rows (or elements) into a table at computed positions";
  let description = [{
    `out.flat[positions[e]] += values[e]` for every element `e` of `values`,
    starting from `out`'s own contents: `index_put(base, [ids], values,
    accumulate=True)` of whole rows when `positions[m, j] = ids[m] * D + j`
    (the embedding's backward). Repeated positions add up, as torch's
    accumulating index_put does; a position outside `out` is a run-time
    fault. `values` and `positions` have one shape, of rank 2 (a block of
    rows); `values` and `out` one float element type.

    `nova-form-scatter` forms this op from the one-hot matmul the frontend
    writes an accumulating index_put as (`one_hot(ids) @ values + base`), and
    `convert-linalg-to-nova` lowers it to accumulating indexed DMAs
    (`nova.scatter`), a block of rows at a time: no matmul, no one-hot.

    Destination style: on tensors it returns the updated `out`; on buffers it
    updates `out` and has no result.

    ```mlir
    %g = nova.scatter_add ins(%v, %pos : tensor<6x16xf32>, tensor<6x16xi64>)
                          outs(%base : tensor<10x16xf32>) -> tensor<10x16xf32>
    ```
  }];
  let arguments = (ins Nova_ShapedF32OrBF16:$values,
                       AnyTypeOf<[StaticShapeMemRefOf<[I64, I32]>,
                                  StaticShapeTensorOf<[I64, I32]>]>:$positions,
                       Arg<Nova_ShapedF32OrBF16, "", [MemRead, MemWrite]>:$out);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `ins` `(` $values `,` $positions `:` type($values) `,` type($positions) `)`
    `outs` `(` $out `:` type($out) `)` attr-dict (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() { return getOutMutable(); }
  }];
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

class Nova_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Nova_Op<mnemonic, traits> {
  let results = (outs Nova_TokenType:$token);
  let hasVerifier = 1;
}

def Nova_AllReduceOp : Nova_CollectiveOp<"all_reduce"> {
  let summary = "reduce a buffer across each replica group";
  let description = [{
    Every chip of a group ends with the combination (`sum`, `max`, `min` or
    `avg`) of the group's `input` buffers in its `output`.

    ```mlir
    %t = nova.all_reduce <sum> ins(%x : memref<1024xf32, #nova.memory_space<hbm>>)
                               outs(%y : memref<1024xf32, #nova.memory_space<hbm>>) groups [[0, 1], [2, 3]]
    ```
  }];
  let arguments = (ins Nova_ReductionKindAttr:$kind,
                       Arg<Nova_CollectiveBuffer, "", [MemRead]>:$input,
                       Arg<Nova_CollectiveBuffer, "", [MemWrite]>:$output,
                       Nova_ReplicaGroupsAttr:$groups);
  let assemblyFormat = [{
    $kind `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    `groups` custom<ReplicaGroups>($groups) attr-dict
  }];
}

def Nova_AllGatherOp : Nova_CollectiveOp<"all_gather"> {
  let summary = "concatenate the buffers of each replica group along a dimension";
  let description = [{
    `output` is the concatenation along `dim` of the group's `input` buffers in
    group order, so its `dim` is the group size times the input's.

    ```mlir
    %t = nova.all_gather ins(%x : memref<16x64xf32, #nova.memory_space<hbm>>)
                         outs(%y : memref<64x64xf32, #nova.memory_space<hbm>>) dim 0 groups [[0, 1, 2, 3]]
    ```
  }];
  let arguments = (ins Arg<Nova_CollectiveBuffer, "", [MemRead]>:$input,
                       Arg<Nova_CollectiveBuffer, "", [MemWrite]>:$output,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       Nova_ReplicaGroupsAttr:$groups);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    `dim` $dim `groups` custom<ReplicaGroups>($groups) attr-dict
  }];
}

def Nova_ReduceScatterOp : Nova_CollectiveOp<"reduce_scatter"> {
  let summary = "reduce across each replica group and scatter the result";
  let description = [{
    The group's `input` buffers are combined with `kind`; chip `i` of the group
    receives the `i`-th of the equal slices of the result along `dim`.

    ```mlir
    %t = nova.reduce_scatter <sum> ins(%x : memref<64x64xf32, #nova.memory_space<hbm>>)
                                   outs(%y : memref<16x64xf32, #nova.memory_space<hbm>>) dim 0 groups [[0, 1, 2, 3]]
    ```
  }];
  let arguments = (ins Nova_ReductionKindAttr:$kind,
                       Arg<Nova_CollectiveBuffer, "", [MemRead]>:$input,
                       Arg<Nova_CollectiveBuffer, "", [MemWrite]>:$output,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                       Nova_ReplicaGroupsAttr:$groups);
  let assemblyFormat = [{
    $kind `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    `dim` $dim `groups` custom<ReplicaGroups>($groups) attr-dict
  }];
}

def Nova_AllToAllOp : Nova_CollectiveOp<"all_to_all"> {
  let summary = "exchange slices between all chips of each replica group";
  let description = [{
    `input` is split into group-size slices along `split_dim`; slice `j` goes
    to chip `j` of the group, which concatenates what it receives along
    `concat_dim` in group order.

    ```mlir
    %t = nova.all_to_all ins(%x : memref<8x16xf32, #nova.memory_space<hbm>>)
                         outs(%y : memref<4x32xf32, #nova.memory_space<hbm>>) split_dim 0 concat_dim 1 groups [[0, 1]]
    ```
  }];
  let arguments = (ins Arg<Nova_CollectiveBuffer, "", [MemRead]>:$input,
                       Arg<Nova_CollectiveBuffer, "", [MemWrite]>:$output,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$split_dim,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$concat_dim,
                       Nova_ReplicaGroupsAttr:$groups);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)` `outs` `(` $output `:` type($output) `)`
    `split_dim` $split_dim `concat_dim` $concat_dim `groups` custom<ReplicaGroups>($groups) attr-dict
  }];
}

def Nova_SendOp : Nova_CollectiveOp<"send"> {
  let summary = "send a buffer to a peer chip (pipeline stages)";
  let description = [{
    Matched with the `nova.recv` on chip `peer` that names this chip and the
    same `channel`; both buffers have the same shape and element type.

    ```mlir
    %t = nova.send ins(%act : memref<4x128xf32, #nova.memory_space<hbm>>) to 1 channel 0
    ```
  }];
  let arguments = (ins Arg<Nova_CollectiveBuffer, "", [MemRead]>:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$channel);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)` `to` $peer `channel` $channel attr-dict
  }];
}

def Nova_RecvOp : Nova_CollectiveOp<"recv"> {
  let summary = "receive a buffer from a peer chip (pipeline stages)";
  let description = [{
    ```mlir
    %t = nova.recv outs(%act : memref<4x128xf32, #nova.memory_space<hbm>>) from 0 channel 0
    ```
  }];
  let arguments = (ins Arg<Nova_CollectiveBuffer, "", [MemWrite]>:$output,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$peer,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$channel);
  let assemblyFormat = [{
    `outs` `(` $output `:` type($output) `)` `from` $peer `channel` $channel attr-dict
  }];
}

def Nova_BarrierOp : Nova_CollectiveOp<"barrier"> {
  let summary = "synchronise the chips of each replica group";
  let description = [{
    The token completes once every chip of the group has reached the barrier.

    ```mlir
    %t = nova.barrier groups [[0, 1, 2, 3]]
    ```
  }];
  let arguments = (ins Nova_ReplicaGroupsAttr:$groups);
  let assemblyFormat = "`groups` custom<ReplicaGroups>($groups) attr-dict";
}

//===----------------------------------------------------------------------===//
// Partitioning
//===----------------------------------------------------------------------===//

def Nova_ReshardOp : Nova_Op<"reshard", [AllTypesMatch<["source", "result"]>,
    DeclareOpInterfaceMethods<ShardingInterface,
        ["getLoopIteratorTypes", "getIndexingMaps", "partition"]>]> {
  let summary = "a change of sharding on an n-D grid, partitioned by Nova";
  let description = [{
    The identity on the whole tensor. `nova-materialize-reshards` puts one
    between a value's sharding and a user's different sharding on a grid of
    rank > 1 (MLIR 22's `shard-partition` reshards only on 1-D grids), and
    `shard-partition` turns it into collectives over single grid axes: an
    `all_reduce` over the partial axes the target drops, an `all_gather` for
    each split the target drops (last split axis first), then an `all_slice`
    for each split it adds. It exists only between those two passes.

    ```mlir
    %1 = shard.shard %0 to %from annotate_for_users : tensor<8x16xf32>
    %2 = nova.reshard %1 : tensor<8x16xf32>
    %3 = shard.shard %2 to %to : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$source);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$source attr-dict `:` type($result)";
}

#endif // NOVA_DIALECT_NOVA_IR_NOVAOPS_TD
