"""ISA v2 numbers the simulator dispatches on (docs/isa.md sections 2 and 3).

The binary reader (``nova.binary.isa``) owns decoding; these are the plain integer
codes the engines compare against, kept here so the hot loop compares ints.
"""

from __future__ import annotations

NOP, HALT = 0x00, 0x01
LI, SALU, CHIP_ID, SEM_WAIT, SEM_SIGNAL = 0x10, 0x11, 0x12, 0x13, 0x14
LOOP, ENDLOOP, IF, ELSE, ENDIF = 0x18, 0x19, 0x1A, 0x1B, 0x1C
DMA_COPY, DMA_GATHER, DMA_SCATTER = 0x20, 0x21, 0x22
MATMUL = 0x30
VUNARY, VBINARY, VSCALAR, VSELECT, VREDUCE, VTRANSPOSE, VFILL, VCOPY = range(0x40, 0x48)
VIOTA, VASSERT, VSCAN, VSORT, VFUSED = range(0x48, 0x4D)
ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, SEND, RECV, BARRIER = range(0x50, 0x57)

NAMES = {
    NOP: "nop", HALT: "halt", LI: "li", SALU: "salu", CHIP_ID: "chip_id",
    SEM_WAIT: "sem_wait", SEM_SIGNAL: "sem_signal", LOOP: "loop", ENDLOOP: "endloop",
    IF: "if", ELSE: "else", ENDIF: "endif", DMA_COPY: "dma_copy", DMA_GATHER: "dma_gather",
    DMA_SCATTER: "dma_scatter", MATMUL: "matmul",
    VUNARY: "vunary", VBINARY: "vbinary", VSCALAR: "vscalar", VSELECT: "vselect",
    VREDUCE: "vreduce", VTRANSPOSE: "vtranspose", VFILL: "vfill", VCOPY: "vcopy",
    VIOTA: "viota", VASSERT: "vassert", VSCAN: "vscan", VSORT: "vsort", VFUSED: "vfused",
    ALL_REDUCE: "all_reduce", ALL_GATHER: "all_gather", REDUCE_SCATTER: "reduce_scatter",
    ALL_TO_ALL: "all_to_all", SEND: "send", RECV: "recv", BARRIER: "barrier",
}

# Engines (byte 1); ACTIVATION only on targets with an activation engine (ISA v3).
MATRIX, VECTOR, SCALAR, DMA, COLLECTIVE, ACTIVATION = range(6)
ENGINE_NAMES = ("matrix", "vector", "scalar", "dma", "collective", "activation")

COLLECTIVE_OPS = frozenset({ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, SEND, RECV, BARRIER})
VECTOR_OPS = frozenset({VUNARY, VBINARY, VSCALAR, VSELECT, VREDUCE, VTRANSPOSE, VFILL, VCOPY,
                        VIOTA, VASSERT, VSCAN, VSORT, VFUSED})
#: The single-input elementwise instructions the activation engine may run (docs/isa.md 2.7).
ACTIVATION_OPS = frozenset({VUNARY, VSCALAR, VCOPY})
DMA_OPS = frozenset({DMA_COPY, DMA_GATHER, DMA_SCATTER})
SCALAR_OPS = frozenset({HALT, LI, SALU, CHIP_ID, SEM_WAIT, SEM_SIGNAL, LOOP, ENDLOOP, IF, ELSE, ENDIF})

# SALU kinds.
S_ADD, S_SUB, S_MUL, S_DIV, S_REM, S_MIN, S_MAX, S_EQ, S_NE, S_LT, S_LE = range(11)

# Elementwise kinds.
UNARY_KINDS = {0: "copy", 1: "neg", 2: "abs", 3: "exp", 4: "log", 5: "sqrt", 6: "rsqrt",
               7: "recip", 8: "tanh", 9: "erf", 10: "sigmoid", 11: "relu", 12: "floor",
               13: "ceil", 14: "round", 15: "trunc", 16: "sin", 17: "cos", 18: "log1p", 19: "not"}
BINARY_KINDS = {32: "add", 33: "sub", 34: "mul", 35: "div", 36: "max", 37: "min", 38: "pow",
                39: "cmp_eq", 40: "cmp_ne", 41: "cmp_lt", 42: "cmp_le", 43: "cmp_gt", 44: "cmp_ge",
                45: "rem", 46: "floordiv", 47: "and", 48: "or", 49: "xor", 50: "shl", 51: "shr",
                52: "shru"}
KIND_CODES = {**{v: k for k, v in UNARY_KINDS.items()}, **{v: k for k, v in BINARY_KINDS.items()}}
#: Kinds with cost factor c = 4 (docs/isa.md 2.4).
TRANSCENDENTAL = frozenset({3, 4, 5, 6, 7, 8, 9, 10, 16, 17, 18, 35, 38, 45, 46})
COMPARISONS = frozenset(range(39, 45))
#: The kinds of VFUSED's two stages, op0 (``kind``) and op1 (``imm2``): add sub mul div max min.
FUSED_KINDS = frozenset(range(32, 38))
#: Kinds defined on float tiles only, on integer (and i1) tiles only, and on i1 tiles.
FLOAT_ONLY_KINDS = frozenset({3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 38})
INTEGER_ONLY_KINDS = frozenset({19, 47, 48, 49, 50, 51, 52})
# i1 tiles hold 0 or 1 and order unsigned (false < true).
I1_KINDS = frozenset({0, 19, 47, 48, 49, 36, 37, 39, 40, 41, 42, 43, 44})

# Reduction kinds (vreduce all, vscan sum/max/min/prod, collectives sum/max/min/avg).
R_SUM, R_MAX, R_MIN, R_AVG, R_PROD, R_ARGMAX, R_ARGMIN = range(7)
REDUCE_NAMES = ("sum", "max", "min", "avg", "prod", "argmax", "argmin")
SCAN_KINDS = frozenset({R_SUM, R_MAX, R_MIN, R_PROD})
COLLECTIVE_KINDS = frozenset({R_SUM, R_MAX, R_MIN, R_AVG})

# Flags.
F_LB_REG, F_UB_REG, F_STEP_REG, F_PEER, F_SCALAR_REG, F_ACCUMULATE, F_DESCENDING = 1, 2, 4, 8, 16, 32, 64

# Memory spaces and element types.
HBM, SRAM, ACC = 0, 1, 2
SPACE_NAMES = ("hbm", "sram", "acc")
F32, BF16, F16, I64, I32, I8, I1 = range(7)
DTYPE_NAMES = ("f32", "bf16", "f16", "i64", "i32", "i8", "i1")
ELT_BYTES = (4, 2, 2, 8, 4, 1, 1)
FLOAT_DTYPES = frozenset({F32, BF16, F16})
INT_DTYPES = frozenset({I64, I32, I8})
INDEX_DTYPES = frozenset({I64, I32})

NO_TILE = 0xFFFF
QUEUE_DEPTH = 32
NUM_SEMAPHORES = 64
NUM_REGISTERS = 256
MAX_LOOP_DEPTH = 8
