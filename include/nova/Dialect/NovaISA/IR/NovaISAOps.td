//===- NovaISAOps.td - nova_isa instructions ---------------*- tablegen -*-===//
//
// One op per instruction of the Nova ISA (docs/isa.md, version 2).
//
//===----------------------------------------------------------------------===//
#ifndef NOVA_DIALECT_NOVAISA_IR_NOVAISAOPS_TD
#define NOVA_DIALECT_NOVAISA_IR_NOVAISAOPS_TD

include "nova/Dialect/NovaISA/IR/NovaISADialect.td"
include "nova/Dialect/NovaISA/IR/NovaISAAttrs.td"
include "nova/Dialect/NovaISA/IR/NovaISAInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Declares the static list of engines an instruction may run on.
class NovaISA_AllowedEngines<list<string> engines> {
  code decl = [{
    static ::llvm::ArrayRef<::mlir::nova_isa::Engine> getAllowedEngines() {
      static constexpr ::mlir::nova_isa::Engine engines[] = {
        }] # !interleave(!foreach(e, engines, "::mlir::nova_isa::Engine::" # e), ", ") # [{
      };
      return engines;
    }
  }];
}

/// An instruction that may run on `engines` (names of Engine cases).
class NovaISA_Inst<string mnemonic, list<string> engines,
                   list<Trait> traits = []>
    : NovaISA_Op<mnemonic, !listconcat(traits, [NovaISA_InstructionOpInterface])> {
  let extraClassDeclaration = NovaISA_AllowedEngines<engines>.decl;
}

/// Engine, wait list and signal list of every non-scalar instruction.
defvar NovaISA_SyncArgs = (ins NovaISA_EngineAttr:$engine,
                               OptionalAttr<NovaISA_SemaphoreList>:$wait,
                               OptionalAttr<NovaISA_SemaphoreList>:$signal);
defvar NovaISA_SyncFormat =
    " `on` custom<EnumKeyword>($engine) (`wait` $wait^)? (`signal` $signal^)? attr-dict";
defvar NovaISA_ScalarFormat = " `on` custom<EnumKeyword>($engine) attr-dict";

//===----------------------------------------------------------------------===//
// Sequencer (scalar engine)
//===----------------------------------------------------------------------===//

def NovaISA_NopOp : NovaISA_Inst<"nop",
    ["Matrix", "Vector", "Scalar", "DMA", "Collective", "Activation"]> {
  let summary = "do nothing on an engine (NOP)";
  let description = [{
    Occupies one slot of `engine`'s queue; with `wait` and `signal` it is a
    synchronisation point local to that queue. On `dma`, `queue` selects the
    DMA queue (default 0; ISA version 4 for a nonzero one, docs/isa.md 4), so
    a loop can synchronise every DMA queue it uses.

    ```mlir
    nova_isa.nop on vector wait [0] signal [1]
    nova_isa.nop queue 2 on dma wait [3]
    ```
  }];
  let arguments = !con(
      (ins OptionalAttr<ConfinedAttr<I64Attr,
                                     [IntNonNegative, IntMaxValue<255>]>>:$queue),
      NovaISA_SyncArgs);
  let assemblyFormat = "(`queue` $queue^)? `on` custom<EnumKeyword>($engine) "
                       "(`wait` $wait^)? (`signal` $signal^)? attr-dict";
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::nova_isa::EngineAttr":$engine,
                   "::mlir::DenseI64ArrayAttr":$wait,
                   "::mlir::DenseI64ArrayAttr":$signal), [{
      build($_builder, $_state, /*queue=*/nullptr, engine, wait, signal);
    }]>
  ];
}

def NovaISA_HaltOp : NovaISA_Inst<"halt", ["Scalar"]> {
  let summary = "stop the sequencer (HALT)";
  let description = [{
    The chip finishes when every engine queue has drained.

    ```mlir
    nova_isa.halt on scalar
    ```
  }];
  let arguments = (ins NovaISA_EngineAttr:$engine);
  let assemblyFormat = NovaISA_ScalarFormat;
}

def NovaISA_LiOp : NovaISA_Inst<"li", ["Scalar"], [Pure]> {
  let summary = "load an immediate into a register (LI)";
  let description = [{
    ```mlir
    %r = nova_isa.li 4096 on scalar
    ```
  }];
  let arguments = (ins I64Attr:$value, NovaISA_EngineAttr:$engine);
  let results = (outs Index:$result);
  let assemblyFormat = !strconcat("$value",
      NovaISA_ScalarFormat);
}

def NovaISA_SaluOp : NovaISA_Inst<"salu", ["Scalar"], [Pure]> {
  let summary = "scalar ALU operation on two registers (SALU)";
  let description = [{
    `result = lhs <kind> rhs` on 64-bit integers; comparisons give 0 or 1.

    ```mlir
    %r = nova_isa.salu mul %i, %stride on scalar
    ```
  }];
  let arguments = (ins NovaISA_SaluKindAttr:$kind, Index:$lhs, Index:$rhs,
                       NovaISA_EngineAttr:$engine);
  let results = (outs Index:$result);
  let assemblyFormat = !strconcat("custom<EnumKeyword>($kind) $lhs `,` $rhs",
      NovaISA_ScalarFormat);
}

def NovaISA_ChipIdOp : NovaISA_Inst<"chip_id", ["Scalar"], [Pure]> {
  let summary = "read this chip's id (CHIP_ID)";
  let description = [{
    ```mlir
    %id = nova_isa.chip_id on scalar
    ```
  }];
  let arguments = (ins NovaISA_EngineAttr:$engine);
  let results = (outs Index:$result);
  let assemblyFormat = NovaISA_ScalarFormat;
}

def NovaISA_SemWaitOp : NovaISA_Inst<"sem_wait", ["Scalar"]> {
  let summary = "block the sequencer on semaphores (SEM_WAIT)";
  let description = [{
    Blocks until every listed semaphore is positive, then decrements each.

    ```mlir
    nova_isa.sem_wait [0, 2] on scalar
    ```
  }];
  let arguments = (ins NovaISA_SemaphoreList:$semaphores,
                       NovaISA_EngineAttr:$engine);
  let assemblyFormat = !strconcat("$semaphores",
      NovaISA_ScalarFormat);
  let hasVerifier = 1;
}

def NovaISA_SemSignalOp : NovaISA_Inst<"sem_signal", ["Scalar"]> {
  let summary = "increment semaphores from the sequencer (SEM_SIGNAL)";
  let description = [{
    ```mlir
    nova_isa.sem_signal [1] on scalar
    ```
  }];
  let arguments = (ins NovaISA_SemaphoreList:$semaphores,
                       NovaISA_EngineAttr:$engine);
  let assemblyFormat = !strconcat("$semaphores",
      NovaISA_ScalarFormat);
  let hasVerifier = 1;
}

def NovaISA_EndOp : NovaISA_Inst<"end", ["Scalar"],
    [Terminator, Pure, ParentOneOf<["LoopOp", "IfOp"]>]> {
  let summary = "end of a loop body or branch region (ENDLOOP, ELSE, ENDIF)";
  let description = [{
    Implicit terminator of `nova_isa.loop` and `nova_isa.if` regions; it is
    not printed in the custom form. It always runs on the sequencer, so it
    has no `engine` attribute.

    ```mlir
    nova_isa.end
    ```
  }];
  let assemblyFormat = "attr-dict";
  let extraClassDeclaration = NovaISA_AllowedEngines<["Scalar"]>.decl # [{
    ::mlir::nova_isa::Engine getEngine() {
      return ::mlir::nova_isa::Engine::Scalar;
    }
  }];
}

def NovaISA_LoopOp : NovaISA_Inst<"loop", ["Scalar"],
    [AttrSizedOperandSegments, SingleBlockImplicitTerminator<"EndOp">,
     RecursiveMemoryEffects]> {
  let summary = "counted loop (LOOP ... ENDLOOP)";
  let description = [{
    Runs the body for `iv` in `range(lower, upper, step)`; each bound is a
    register or an immediate, read once at loop entry. An immediate step
    must be positive; loops nest at most 8 deep.

    ```mlir
    nova_isa.loop %i = 0 to %n step 1 on scalar {
      %a = nova_isa.salu mul %i, %stride on scalar
    }
    ```
  }];
  let arguments = (ins Optional<Index>:$lower, Optional<Index>:$upper,
                       Optional<Index>:$step,
                       OptionalAttr<I64Attr>:$lower_imm,
                       OptionalAttr<I64Attr>:$upper_imm,
                       OptionalAttr<I64Attr>:$step_imm,
                       NovaISA_EngineAttr:$engine);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = NovaISA_AllowedEngines<["Scalar"]>.decl # [{
    /// The maximum loop nesting depth of the hardware loop stack.
    static constexpr int64_t kMaxDepth = 8;
    ::mlir::Value getInductionVar() { return getBody().front().getArgument(0); }
  }];
}

def NovaISA_IfOp : NovaISA_Inst<"if", ["Scalar"],
    [SingleBlockImplicitTerminator<"EndOp">, RecursiveMemoryEffects,
     NoRegionArguments]> {
  let summary = "branch on a register (IF ... ELSE ... ENDIF)";
  let description = [{
    Runs the then region when `condition` is non-zero, otherwise the
    optional else region.

    ```mlir
    %first = nova_isa.salu eq %id, %zero on scalar
    nova_isa.if %first on scalar {
      nova_isa.sem_signal [0] on scalar
    } else {
      nova_isa.sem_signal [1] on scalar
    }
    ```
  }];
  let arguments = (ins Index:$condition, NovaISA_EngineAttr:$engine);
  let regions = (region SizedRegion<1>:$thenRegion,
                        MaxSizedRegion<1>:$elseRegion);
  let assemblyFormat = [{
    $condition `on` custom<EnumKeyword>($engine) $thenRegion
    (`else` $elseRegion^)? attr-dict
  }];
}

//===----------------------------------------------------------------------===//
// DMA
//===----------------------------------------------------------------------===//

def NovaISA_DmaCopyOp : NovaISA_Inst<"dma_copy", ["DMA"]> {
  let summary = "copy a tile between HBM and SRAM or to a peer chip (DMA_COPY)";
  let description = [{
    Copies the source tile to the destination tile on DMA queue `queue`; with
    `peer`, the destination is in the HBM of the chip whose id is in the
    `peer` register.

    ```mlir
    nova_isa.dma_copy %src : #nova_isa.tile<hbm, f32, [64, 128], [512, 1]>
        -> %dst : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
        queue 1 on dma wait [0] signal [1]
    ```
  }];
  let arguments = !con((ins Index:$source, NovaISA_TileAttr:$source_tile,
                            Index:$target, NovaISA_TileAttr:$target_tile,
                            ConfinedAttr<I64Attr, [IntNonNegative, IntMaxValue<255>]>:$queue,
                            Optional<Index>:$peer),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($source, $source_tile) `->` "
      "custom<Tile>($target, $target_tile) `queue` $queue (`peer` $peer^)?",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix
//===----------------------------------------------------------------------===//

def NovaISA_MatmulOp : NovaISA_Inst<"matmul", ["Matrix"]> {
  let summary = "systolic matrix multiply into the accumulator (MATMUL)";
  let description = [{
    `acc = lhs @ rhs`, or `acc += lhs @ rhs` with `accumulate`; lhs [M, K] and
    rhs [K, N] in SRAM, acc [M, N] f32 in the accumulator.

    ```mlir
    nova_isa.matmul %a : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]>,
                    %b : #nova_isa.tile<sram, bf16, [128, 128], [128, 1]>
        -> %c : #nova_isa.tile<acc, f32, [64, 128], [128, 1]> accumulate
        on matrix wait [1] signal [2]
    ```
  }];
  let arguments = !con((ins Index:$lhs, NovaISA_TileAttr:$lhs_tile,
                            Index:$rhs, NovaISA_TileAttr:$rhs_tile,
                            Index:$acc, NovaISA_TileAttr:$acc_tile,
                            UnitAttr:$accumulate),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($lhs, $lhs_tile) `,` custom<Tile>($rhs, $rhs_tile)"
      " `->` custom<Tile>($acc, $acc_tile) (`accumulate` $accumulate^)?",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Vector
//===----------------------------------------------------------------------===//

def NovaISA_VUnaryOp : NovaISA_Inst<"vunary", ["Vector", "Activation"]> {
  let summary = "unary elementwise operation (VUNARY)";
  let description = [{
    Runs on the vector engine, or on the activation engine of a target that
    has one (as do `vscalar` and `vcopy`: the single-input elementwise
    instructions, docs/isa.md 2.7).

    ```mlir
    nova_isa.vunary exp %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
        -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
    ```
  }];
  let arguments = !con((ins NovaISA_ElementwiseKindAttr:$kind,
                            Index:$input, NovaISA_TileAttr:$input_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<EnumKeyword>($kind) custom<Tile>($input, $input_tile)"
      " `->` custom<Tile>($output, $output_tile)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VBinaryOp : NovaISA_Inst<"vbinary", ["Vector"]> {
  let summary = "binary elementwise operation with broadcasting (VBINARY)";
  let description = [{
    Inputs broadcast along their size-1 dimensions to the output's shape.

    ```mlir
    nova_isa.vbinary add %x : #nova_isa.tile<acc, f32, [64, 128], [128, 1]>,
                         %b : #nova_isa.tile<sram, f32, [1, 128], [128, 1]>
        -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
    ```
  }];
  let arguments = !con((ins NovaISA_ElementwiseKindAttr:$kind,
                            Index:$lhs, NovaISA_TileAttr:$lhs_tile,
                            Index:$rhs, NovaISA_TileAttr:$rhs_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<EnumKeyword>($kind) custom<Tile>($lhs, $lhs_tile) `,`"
      " custom<Tile>($rhs, $rhs_tile) `->` custom<Tile>($output, $output_tile)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VScalarOp : NovaISA_Inst<"vscalar", ["Vector", "Activation"]> {
  let summary = "binary elementwise operation with an immediate (VSCALAR)";
  let description = [{
    `output = kind(input, scalar)`; `scalar` is an f64 for a float input
    tile and the exact i64 for an integer or i1 input tile (verified).

    ```mlir
    nova_isa.vscalar mul %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, 5.000000e-01
        -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
    ```
  }];
  let arguments = !con((ins NovaISA_ElementwiseKindAttr:$kind,
                            Index:$input, NovaISA_TileAttr:$input_tile,
                            NovaISA_ImmediateAttr:$scalar,
                            Index:$output, NovaISA_TileAttr:$output_tile),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<EnumKeyword>($kind) custom<Tile>($input, $input_tile)"
      " `,` custom<Immediate>($scalar) `->` custom<Tile>($output, $output_tile)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VFusedOp : NovaISA_Inst<"vfused", ["Vector"], [AttrSizedOperandSegments]> {
  let summary = "two binary elementwise stages in one vector pass (VFUSED, ISA version 5)";
  let description = [{
    `output = kind1(kind0(input, a), b)`: `a` and `b` are each a tile or an
    f64 immediate. The intermediate is rounded to the output's element type,
    so the result is that of the two instructions through a tile of the
    output's type. Float tiles of one element type; kinds `add sub mul div
    max min`; `input` has the output's shape, `a` and `b` broadcast; at most
    two of `input`, `a`, `b` are read at the full rate (a tile whose last
    dimension is the output's and larger than 1): the third is a per-row
    scalar, a broadcast element or an immediate (verified).

    ```mlir
    nova_isa.vfused mul, add %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>,
                             %h : #nova_isa.tile<sram, f32, [1, 1], [1, 1]>,
                             %m : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
        -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
    nova_isa.vfused mul, add %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>, 5.000000e-01, 1.000000e+00
        -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
    ```
  }];
  let arguments = !con((ins NovaISA_ElementwiseKindAttr:$kind0,
                            NovaISA_ElementwiseKindAttr:$kind1,
                            Index:$input, NovaISA_TileAttr:$input_tile,
                            Optional<Index>:$a, OptionalAttr<NovaISA_TileAttr>:$a_tile,
                            OptionalAttr<NovaISA_ImmediateAttr>:$a_scalar,
                            Optional<Index>:$b, OptionalAttr<NovaISA_TileAttr>:$b_tile,
                            OptionalAttr<NovaISA_ImmediateAttr>:$b_scalar,
                            Index:$output, NovaISA_TileAttr:$output_tile),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<EnumKeyword>($kind0) `,` custom<EnumKeyword>($kind1)"
      " custom<Tile>($input, $input_tile) `,` custom<TileOrImmediate>($a, $a_tile, $a_scalar)"
      " `,` custom<TileOrImmediate>($b, $b_tile, $b_scalar) `->` custom<Tile>($output, $output_tile)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VSelectOp : NovaISA_Inst<"vselect", ["Vector"]> {
  let summary = "elementwise select with broadcasting (VSELECT)";
  let description = [{
    `output = where(condition != 0, true_value, false_value)`.

    ```mlir
    nova_isa.vselect %c : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>,
                     %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>,
                     %z : #nova_isa.tile<sram, f32, [1, 1], [1, 1]>
        -> %y : #nova_isa.tile<sram, f32, [64, 128], [128, 1]> on vector
    ```
  }];
  let arguments = !con((ins Index:$condition, NovaISA_TileAttr:$condition_tile,
                            Index:$true_value, NovaISA_TileAttr:$true_tile,
                            Index:$false_value, NovaISA_TileAttr:$false_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($condition, $condition_tile) `,`"
      " custom<Tile>($true_value, $true_tile) `,` custom<Tile>($false_value, $false_tile)"
      " `->` custom<Tile>($output, $output_tile)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VReduceOp : NovaISA_Inst<"vreduce", ["Vector"]> {
  let summary = "reduce a tile along one axis (VREDUCE)";
  let description = [{
    The output keeps the reduced axis with size 1.

    ```mlir
    nova_isa.vreduce max %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
        -> %m : #nova_isa.tile<sram, f32, [64, 1], [1, 1]> axis 1 on vector
    ```
  }];
  let arguments = !con((ins NovaISA_ReductionKindAttr:$kind,
                            Index:$input, NovaISA_TileAttr:$input_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile,
                            ConfinedAttr<I64Attr, [IntNonNegative]>:$axis),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<EnumKeyword>($kind) custom<Tile>($input, $input_tile)"
      " `->` custom<Tile>($output, $output_tile) `axis` $axis",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VTransposeOp : NovaISA_Inst<"vtranspose", ["Vector"]> {
  let summary = "permute the dimensions of a tile (VTRANSPOSE)";
  let description = [{
    Output dimension `d` is input dimension `perm[d]`.

    ```mlir
    nova_isa.vtranspose %x : #nova_isa.tile<sram, f32, [64, 128], [128, 1]>
        -> %y : #nova_isa.tile<sram, f32, [128, 64], [64, 1]> perm [1, 0] on vector
    ```
  }];
  let arguments = !con((ins Index:$input, NovaISA_TileAttr:$input_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile,
                            DenseI64ArrayAttr:$perm),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($input, $input_tile) `->` "
      "custom<Tile>($output, $output_tile) `perm` $perm",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VFillOp : NovaISA_Inst<"vfill", ["Vector"]> {
  let summary = "fill a tile with an immediate (VFILL)";
  let description = [{
    ```mlir
    nova_isa.vfill 0.000000e+00 -> %c : #nova_isa.tile<acc, f32, [64, 128], [128, 1]> on vector
    nova_isa.vfill 0 value(%i) -> %t : #nova_isa.tile<sram, i64, [1, 1], [1, 1]> on vector
    ```
    Integer and i1 tiles take the value as an exact i64 attribute, float
    tiles as an f64 (verified);
    with `value`, the tile is filled with that register instead.
  }];
  let arguments = !con((ins NovaISA_ImmediateAttr:$value,
                            Index:$output, NovaISA_TileAttr:$output_tile,
                            Optional<Index>:$value_reg),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Immediate>($value) (`value` `(` $value_reg^ `)`)? `->` custom<Tile>($output, $output_tile)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VCopyOp : NovaISA_Inst<"vcopy", ["Vector", "Activation"]> {
  let summary = "copy a tile, converting its element type (VCOPY)";
  let description = [{
    Drains the accumulator to SRAM or converts between float types.

    ```mlir
    nova_isa.vcopy %c : #nova_isa.tile<acc, f32, [64, 128], [128, 1]>
        -> %y : #nova_isa.tile<sram, bf16, [64, 128], [128, 1]> on vector
    ```
  }];
  let arguments = !con((ins Index:$input, NovaISA_TileAttr:$input_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($input, $input_tile) `->` "
      "custom<Tile>($output, $output_tile)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VIotaOp : NovaISA_Inst<"viota", ["Vector"]> {
  let summary = "write each element's position along an axis (VIOTA)";
  let description = [{
    ```mlir
    nova_isa.viota -> %y : #nova_isa.tile<sram, i64, [16, 64], [64, 1]> axis 1 on vector
    ```
  }];
  let arguments = !con((ins Index:$output, NovaISA_TileAttr:$output_tile,
                            ConfinedAttr<I64Attr, [IntNonNegative]>:$axis),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("`->` custom<Tile>($output, $output_tile) `axis` $axis",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_VAssertOp : NovaISA_Inst<"vassert", ["Vector"]> {
  let summary = "fault when any element of a tile is zero (VASSERT)";
  let description = [{
    The message travels in the binary's DEBUG section with the source
    location.

    ```mlir
    nova_isa.vassert %c : #nova_isa.tile<sram, i1, [1, 1], [1, 1]> "index out of range" on vector
    ```
  }];
  let arguments = !con((ins Index:$condition, NovaISA_TileAttr:$condition_tile,
                            StrAttr:$message),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($condition, $condition_tile) $message",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_DmaGatherOp : NovaISA_Inst<"dma_gather", ["DMA"]> {
  let summary = "gather elements by computed positions (DMA_GATHER)";
  let description = [{
    `dst[e] = src.flat[idx[e]]`; a position outside the source is a fault.

    ```mlir
    nova_isa.dma_gather %src : #nova_isa.tile<hbm, f32, [128, 64], [64, 1]>,
                        %idx : #nova_isa.tile<sram, i64, [16, 64], [64, 1]>
        -> %dst : #nova_isa.tile<sram, f32, [16, 64], [64, 1]> queue 0 on dma
    ```
  }];
  let arguments = !con((ins Index:$source, NovaISA_TileAttr:$source_tile,
                            Index:$indices, NovaISA_TileAttr:$indices_tile,
                            Index:$target, NovaISA_TileAttr:$target_tile,
                            ConfinedAttr<I64Attr, [IntNonNegative, IntMaxValue<255>]>:$queue),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($source, $source_tile) `,` custom<Tile>($indices, $indices_tile)"
      " `->` custom<Tile>($target, $target_tile) `queue` $queue",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_DmaScatterOp : NovaISA_Inst<"dma_scatter", ["DMA"]> {
  let summary = "scatter elements to computed positions (DMA_SCATTER)";
  let description = [{
    `dst.flat[idx[e]] = src[e]` for the elements `e` of `src` in row-major
    order (a later `e` wins), or with `accumulate` `dst.flat[idx[e]] +=
    src[e]` (repeated positions add up); a position outside the destination
    is a fault. Runs of consecutive positions move as one burst each.

    ```mlir
    nova_isa.dma_scatter %src : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]>,
                         %idx : #nova_isa.tile<sram, i64, [16, 64], [64, 1]>
        -> %dst : #nova_isa.tile<hbm, f32, [128, 64], [64, 1]> queue 0 accumulate on dma
    ```
  }];
  let arguments = !con((ins Index:$source, NovaISA_TileAttr:$source_tile,
                            Index:$indices, NovaISA_TileAttr:$indices_tile,
                            Index:$target, NovaISA_TileAttr:$target_tile,
                            ConfinedAttr<I64Attr, [IntNonNegative, IntMaxValue<255>]>:$queue,
                            UnitAttr:$accumulate),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($source, $source_tile) `,` custom<Tile>($indices, $indices_tile)"
      " `->` custom<Tile>($target, $target_tile) `queue` $queue (`accumulate` $accumulate^)?",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def NovaISA_AllReduceOp : NovaISA_Inst<"all_reduce", ["Collective"]> {
  let summary = "reduce a tile across each replica group (ALL_REDUCE)";
  let description = [{
    ```mlir
    nova_isa.all_reduce sum %x : #nova_isa.tile<hbm, f32, [1024], [1]>
        -> %y : #nova_isa.tile<hbm, f32, [1024], [1]> groups [[0, 1], [2, 3]] on collective
    ```
  }];
  let arguments = !con((ins NovaISA_ReductionKindAttr:$kind,
                            Index:$input, NovaISA_TileAttr:$input_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile,
                            NovaISA_ReplicaGroupsAttr:$groups),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<EnumKeyword>($kind) custom<Tile>($input, $input_tile)"
      " `->` custom<Tile>($output, $output_tile) `groups` custom<ReplicaGroups>($groups)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_AllGatherOp : NovaISA_Inst<"all_gather", ["Collective"]> {
  let summary = "concatenate the tiles of each replica group (ALL_GATHER)";
  let description = [{
    ```mlir
    nova_isa.all_gather %x : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]>
        -> %y : #nova_isa.tile<hbm, f32, [64, 64], [64, 1]> dim 0 groups [[0, 1, 2, 3]] on collective
    ```
  }];
  let arguments = !con((ins Index:$input, NovaISA_TileAttr:$input_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile,
                            ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                            NovaISA_ReplicaGroupsAttr:$groups),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($input, $input_tile) `->` "
      "custom<Tile>($output, $output_tile) `dim` $dim `groups` custom<ReplicaGroups>($groups)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_ReduceScatterOp : NovaISA_Inst<"reduce_scatter", ["Collective"]> {
  let summary = "reduce across each replica group and scatter (REDUCE_SCATTER)";
  let description = [{
    ```mlir
    nova_isa.reduce_scatter sum %x : #nova_isa.tile<hbm, f32, [64, 64], [64, 1]>
        -> %y : #nova_isa.tile<hbm, f32, [16, 64], [64, 1]> dim 0 groups [[0, 1, 2, 3]] on collective
    ```
  }];
  let arguments = !con((ins NovaISA_ReductionKindAttr:$kind,
                            Index:$input, NovaISA_TileAttr:$input_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile,
                            ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                            NovaISA_ReplicaGroupsAttr:$groups),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<EnumKeyword>($kind) custom<Tile>($input, $input_tile)"
      " `->` custom<Tile>($output, $output_tile) `dim` $dim"
      " `groups` custom<ReplicaGroups>($groups)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_AllToAllOp : NovaISA_Inst<"all_to_all", ["Collective"]> {
  let summary = "exchange slices within each replica group (ALL_TO_ALL)";
  let description = [{
    ```mlir
    nova_isa.all_to_all %x : #nova_isa.tile<hbm, f32, [8, 16], [16, 1]>
        -> %y : #nova_isa.tile<hbm, f32, [4, 32], [32, 1]> split_dim 0 concat_dim 1
        groups [[0, 1]] on collective
    ```
  }];
  let arguments = !con((ins Index:$input, NovaISA_TileAttr:$input_tile,
                            Index:$output, NovaISA_TileAttr:$output_tile,
                            ConfinedAttr<I64Attr, [IntNonNegative]>:$split_dim,
                            ConfinedAttr<I64Attr, [IntNonNegative]>:$concat_dim,
                            NovaISA_ReplicaGroupsAttr:$groups),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($input, $input_tile) `->` "
      "custom<Tile>($output, $output_tile) `split_dim` $split_dim `concat_dim` $concat_dim"
      " `groups` custom<ReplicaGroups>($groups)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_SendOp : NovaISA_Inst<"send", ["Collective"]> {
  let summary = "send a tile to a peer chip (SEND)";
  let description = [{
    Matched by the `nova_isa.recv` on chip `peer` naming this chip and the
    same channel.

    ```mlir
    nova_isa.send %x : #nova_isa.tile<hbm, f32, [4, 128], [128, 1]> to %next channel 0
        on collective signal [3]
    ```
  }];
  let arguments = !con((ins Index:$input, NovaISA_TileAttr:$input_tile,
                            Index:$peer,
                            ConfinedAttr<I64Attr, [IntNonNegative, IntMaxValue<255>]>:$channel),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($input, $input_tile) `to` $peer `channel` $channel",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_RecvOp : NovaISA_Inst<"recv", ["Collective"]> {
  let summary = "receive a tile from a peer chip (RECV)";
  let description = [{
    ```mlir
    nova_isa.recv %y : #nova_isa.tile<hbm, f32, [4, 128], [128, 1]> from %prev channel 0
        on collective
    ```
  }];
  let arguments = !con((ins Index:$output, NovaISA_TileAttr:$output_tile,
                            Index:$peer,
                            ConfinedAttr<I64Attr, [IntNonNegative, IntMaxValue<255>]>:$channel),
                       NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("custom<Tile>($output, $output_tile) `from` $peer `channel` $channel",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

def NovaISA_BarrierOp : NovaISA_Inst<"barrier", ["Collective"]> {
  let summary = "synchronise the chips of each replica group (BARRIER)";
  let description = [{
    ```mlir
    nova_isa.barrier groups [[0, 1, 2, 3]] on collective signal [5]
    ```
  }];
  let arguments = !con((ins NovaISA_ReplicaGroupsAttr:$groups), NovaISA_SyncArgs);
  let assemblyFormat = !strconcat("`groups` custom<ReplicaGroups>($groups)",
      NovaISA_SyncFormat);
  let hasVerifier = 1;
}

#endif // NOVA_DIALECT_NOVAISA_IR_NOVAISAOPS_TD
