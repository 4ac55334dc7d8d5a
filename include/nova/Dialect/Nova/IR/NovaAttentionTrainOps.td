//===- NovaAttentionTrainOps.td - attention for training -----*- tablegen -*-===//
//
// The fused attention ops of a training step: the forward that also writes
// the log-sum-exp, and the backward that recomputes the probabilities from
// it. Generated apart from NovaOps.td (mlir-tblgen's op filter), into
// NovaAttentionTrainOps.{h,cpp}.inc.
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_DIALECT_NOVA_IR_NOVAATTENTIONTRAINOPS_TD
#define NOVA_DIALECT_NOVA_IR_NOVAATTENTIONTRAINOPS_TD

include "nova/Dialect/Nova/IR/NovaOps.td"

// A dropout keep mask [B * H, Tq, Tk]: one byte per element, true = kept.
def Nova_ShapedKeepMask : AnyTypeOf<[StaticShapeMemRefOf<[I1]>, StaticShapeTensorOf<[I1]>],
                                    "i1 tensor or buffer">;

def Nova_AttentionLseOp : Nova_Op<"attention_lse", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "nova.attention that also writes each query row's log-sum-exp";
  let description = [{
    `nova.attention` (same operands, layouts and lowering) with a second
    destination `lse` (f32 `[B * H, Tq]`, batches flattened as the rank-3
    form numbers them): `lse[b, i] = log sum_j exp(scale * q_i k_j)` over the
    keys query `i` sees, i.e. the running maximum plus the log of the running
    sum the kernel already keeps. A training step's forward: its backward
    (`nova.attention_backward`) recomputes the probabilities from `lse`, so
    that no score matrix is kept between them.

    With `dropout(%keep)` (i1 `[B * H, Tq, Tk]`, true where a probability is
    kept) the output is `(P * keep * keep_scale) V` (attention dropout,
    `keep_scale = 1 / (1 - p)`); `lse` stays that of the undropped P, whose
    row sums the matrix unit takes (the ones row of `[V 1]^T` against the
    undropped P, then `V^T` against the dropped P: two matmuls per key
    block, no row sum on the vector unit).

    ```mlir
    %o, %l = nova.attention_lse ins(%q, %k, %v : tensor<4x256x64xf32>, tensor<4x256x64xf32>, tensor<4x256x64xf32>)
                                outs(%o0, %l0 : tensor<4x256x64xf32>, tensor<4x256xf32>) scale 1.250000e-01 key_rows causal
                                -> tensor<4x256x64xf32>, tensor<4x256xf32>
    ```
  }];
  let arguments = (ins Nova_ShapedF32OrBF16:$query,
                       Nova_ShapedF32OrBF16:$keys,
                       Nova_ShapedF32OrBF16:$value,
                       Arg<Nova_ShapedF32, "", [MemWrite]>:$out,
                       Arg<Nova_ShapedF32, "", [MemWrite]>:$lse,
                       F64Attr:$scale,
                       UnitAttr:$key_rows,
                       UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$keep_scale,
                       Optional<Nova_ShapedKeepMask>:$keep);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `ins` `(` $query `,` $keys `,` $value `:` type($query) `,` type($keys) `,` type($value) `)`
    `outs` `(` $out `,` $lse `:` type($out) `,` type($lse) `)` `scale` $scale
    (`key_rows` $key_rows^)? (`causal` $causal^)?
    (`dropout` `(` $keep^ `:` type($keep) `)` `keep_scale` $keep_scale)? attr-dict (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(), 3, 2);
    }
  }];
}

def Nova_AttentionBackwardOp : Nova_Op<"attention_backward", [
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "gradients of fused scaled dot-product attention (flash attention backward)";
  let description = [{
    The gradients of `out = softmax(scale * Q K^T + mask) V` with respect to
    `query` `[B, Tq, D]`, `keys` `[B, Tk, D]` (one key per row) and `value`
    `[B, Tk, Dv]`, given the forward's `out` `[B, Tq, Dv]`, the gradient
    `grad_out` `[B, Tq, Dv]` and `lse` `[B, Tq]` (as `nova.attention_lse`
    writes it). Batch and heads are folded into `B`. `query`, `keys` and
    `value` are all f32 or all bf16 (then every matmul runs at the bf16
    rate: P and dS are rounded to bf16 on chip); `out` and `grad_out` are
    f32 or that type; `lse` and the gradients are f32. With `causal`
    (`Tq == Tk`) query row `i` sees keys `0..i` only.

    The probabilities never exist in memory: `convert-linalg-to-nova`
    lowers the op to a loop over batches that keeps one batch's operands in
    SRAM and, for every key block `j` and every query block `i` that sees
    it, recomputes `P = exp(S - lse)` from `S = scale Q_i K_j^T`, and
    accumulates `dV_j += P^T dO_i`, `dK_j += scale dS^T Q_i` and
    `dQ_i += scale dS K_j` (with `dS = P (dO_i V_j^T - rowsum(dO_i out_i))`)
    in the accumulator.

    With `dropout(%keep)` (the forward's mask and `keep_scale`) the forward
    was `(P * keep * keep_scale) V`: `dV` accumulates the dropped P,
    `dP` is `keep * keep_scale * dO V^T`, and `delta = rowsum(dO * out)`
    still equals `rowsum(P * dP)`.

    Destination style: on tensors it returns the updated `grad_query`,
    `grad_keys` and `grad_value`; on buffers it writes them and has no
    result.

    ```mlir
    %dq, %dk, %dv = nova.attention_backward
        ins(%q, %k, %v, %o, %do, %lse : tensor<4x256x64xf32>, tensor<4x256x64xf32>, tensor<4x256x64xf32>,
                                        tensor<4x256x64xf32>, tensor<4x256x64xf32>, tensor<4x256xf32>)
        outs(%dq0, %dk0, %dv0 : tensor<4x256x64xf32>, tensor<4x256x64xf32>, tensor<4x256x64xf32>)
        scale 1.250000e-01 causal -> tensor<4x256x64xf32>, tensor<4x256x64xf32>, tensor<4x256x64xf32>
    ```
  }];
  let arguments = (ins Nova_ShapedF32OrBF16:$query,
                       Nova_ShapedF32OrBF16:$keys,
                       Nova_ShapedF32OrBF16:$value,
                       Nova_ShapedF32OrBF16:$out,
                       Nova_ShapedF32OrBF16:$grad_out,
                       Nova_ShapedF32:$lse,
                       Arg<Nova_ShapedF32, "", [MemWrite]>:$grad_query,
                       Arg<Nova_ShapedF32, "", [MemWrite]>:$grad_keys,
                       Arg<Nova_ShapedF32, "", [MemWrite]>:$grad_value,
                       F64Attr:$scale,
                       UnitAttr:$causal,
                       OptionalAttr<F64Attr>:$keep_scale,
                       Optional<Nova_ShapedKeepMask>:$keep);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `ins` `(` $query `,` $keys `,` $value `,` $out `,` $grad_out `,` $lse `:`
      type($query) `,` type($keys) `,` type($value) `,` type($out) `,` type($grad_out) `,` type($lse) `)`
    `outs` `(` $grad_query `,` $grad_keys `,` $grad_value `:`
      type($grad_query) `,` type($grad_keys) `,` type($grad_value) `)`
    `scale` $scale (`causal` $causal^)?
    (`dropout` `(` $keep^ `:` type($keep) `)` `keep_scale` $keep_scale)? attr-dict (`->` type($result)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(), 6, 3);
    }
  }];
}

#endif // NOVA_DIALECT_NOVA_IR_NOVAATTENTIONTRAINOPS_TD
