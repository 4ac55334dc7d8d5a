"""The Nova instruction set, version 2 (docs/isa.md), as the decoder sees it.

Enums carry the encoding codes; :class:`Instruction` is one decoded 64-byte
word with named fields, :class:`Tile` one tile descriptor. ``WORD_DTYPE`` is
the numpy structured dtype of a word, used to decode whole code sections at
once.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ISA_VERSION", "ISA_VERSION_ACTIVATION", "ISA_VERSION_QUEUED_NOP", "ISA_VERSION_VFUSED",
    "ISA_VERSIONS", "NO_TILE", "NUM_REGISTERS", "NUM_SEMAPHORES", "MAX_LOOP_DEPTH",
    "WORD_BYTES", "WORD_DTYPE", "TILE_DTYPE",
    "Opcode", "Engine", "Flag", "SaluKind", "ElementwiseKind", "ReductionKind",
    "MemorySpace", "DType", "Tile", "ReplicaGroups", "Instruction",
    "ALLOWED_ENGINES", "element_bytes",
]

#: The version an encoder writes for a program without the activation engine; 3 (=
#: 2 plus the activation engine, engine code 5) only for one that uses it, so every
#: other program encodes as before (docs/isa.md 4); 4 (= 3 plus the ``queue`` byte of
#: a NOP on dma) only for one with a NOP on a dma queue other than 0; 5 (= 4 plus
#: VFUSED) only for one that holds a VFUSED. A decoder reads all four.
ISA_VERSION = 2
ISA_VERSION_ACTIVATION = 3
ISA_VERSION_QUEUED_NOP = 4
ISA_VERSION_VFUSED = 5
ISA_VERSIONS = (ISA_VERSION, ISA_VERSION_ACTIVATION, ISA_VERSION_QUEUED_NOP, ISA_VERSION_VFUSED)
WORD_BYTES = 64
NO_TILE = 0xFFFF
NUM_REGISTERS = 256
NUM_SEMAPHORES = 64
MAX_LOOP_DEPTH = 8


class Opcode(enum.IntEnum):
    NOP = 0x00
    HALT = 0x01
    LI = 0x10
    SALU = 0x11
    CHIP_ID = 0x12
    SEM_WAIT = 0x13
    SEM_SIGNAL = 0x14
    LOOP = 0x18
    ENDLOOP = 0x19
    IF = 0x1A
    ELSE = 0x1B
    ENDIF = 0x1C
    DMA_COPY = 0x20
    DMA_GATHER = 0x21
    DMA_SCATTER = 0x22
    MATMUL = 0x30
    VUNARY = 0x40
    VBINARY = 0x41
    VSCALAR = 0x42
    VSELECT = 0x43
    VREDUCE = 0x44
    VTRANSPOSE = 0x45
    VFILL = 0x46
    VCOPY = 0x47
    VIOTA = 0x48
    VASSERT = 0x49
    VSCAN = 0x4A
    VSORT = 0x4B
    VFUSED = 0x4C
    ALL_REDUCE = 0x50
    ALL_GATHER = 0x51
    REDUCE_SCATTER = 0x52
    ALL_TO_ALL = 0x53
    SEND = 0x54
    RECV = 0x55
    BARRIER = 0x56


class Engine(enum.IntEnum):
    MATRIX = 0
    VECTOR = 1
    SCALAR = 2
    DMA = 3
    COLLECTIVE = 4
    ACTIVATION = 5


class Flag(enum.IntFlag):
    LB_REG = 1 << 0
    UB_REG = 1 << 1
    STEP_REG = 1 << 2
    PEER = 1 << 3
    SCALAR_REG = 1 << 4
    ACCUMULATE = 1 << 5
    DESCENDING = 1 << 6


class SaluKind(enum.IntEnum):
    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    REM = 4
    MIN = 5
    MAX = 6
    EQ = 7
    NE = 8
    LT = 9
    LE = 10


class ElementwiseKind(enum.IntEnum):
    COPY = 0
    NEG = 1
    ABS = 2
    EXP = 3
    LOG = 4
    SQRT = 5
    RSQRT = 6
    RECIP = 7
    TANH = 8
    ERF = 9
    SIGMOID = 10
    RELU = 11
    FLOOR = 12
    CEIL = 13
    ROUND = 14
    TRUNC = 15
    SIN = 16
    COS = 17
    LOG1P = 18
    NOT = 19
    ADD = 32
    SUB = 33
    MUL = 34
    DIV = 35
    MAX = 36
    MIN = 37
    POW = 38
    CMP_EQ = 39
    CMP_NE = 40
    CMP_LT = 41
    CMP_LE = 42
    CMP_GT = 43
    CMP_GE = 44
    REM = 45
    FLOORDIV = 46
    AND = 47
    OR = 48
    XOR = 49
    SHL = 50
    SHR = 51
    SHRU = 52

    @property
    def is_unary(self) -> bool:
        return self.value < 32


class ReductionKind(enum.IntEnum):
    """Reduction kinds of VREDUCE (all), VSCAN (sum max min prod) and the
    collectives (sum max min avg)."""

    SUM = 0
    MAX = 1
    MIN = 2
    AVG = 3
    PROD = 4
    ARGMAX = 5
    ARGMIN = 6


class MemorySpace(enum.IntEnum):
    HBM = 0
    SRAM = 1
    ACC = 2


class DType(enum.IntEnum):
    """Tile element types (docs/isa.md 1.3, 3.5); i1 is one byte holding 0 or 1."""

    F32 = 0
    BF16 = 1
    F16 = 2
    I64 = 3
    I32 = 4
    I8 = 5
    I1 = 6

    @property
    def is_float(self) -> bool:
        return self.value <= 2

    @property
    def is_integer(self) -> bool:
        """i64, i32 or i8 (not i1)."""
        return 3 <= self.value <= 5


_ELEMENT_BYTES = (4, 2, 2, 8, 4, 1, 1)


def element_bytes(dtype: DType) -> int:
    """Bytes per element of a tile dtype."""
    return _ELEMENT_BYTES[dtype]


_ALL_ENGINES = frozenset(Engine)
_S = frozenset({Engine.SCALAR})
_D = frozenset({Engine.DMA})
_M = frozenset({Engine.MATRIX})
_V = frozenset({Engine.VECTOR})
_C = frozenset({Engine.COLLECTIVE})
_VA = frozenset({Engine.VECTOR, Engine.ACTIVATION})

#: The engines each opcode may run on (docs/isa.md 3.2).
ALLOWED_ENGINES: dict[Opcode, frozenset[Engine]] = {
    Opcode.NOP: _ALL_ENGINES,
    **{op: _S for op in (Opcode.HALT, Opcode.LI, Opcode.SALU, Opcode.CHIP_ID,
                         Opcode.SEM_WAIT, Opcode.SEM_SIGNAL, Opcode.LOOP,
                         Opcode.ENDLOOP, Opcode.IF, Opcode.ELSE, Opcode.ENDIF)},
    **{op: _D for op in (Opcode.DMA_COPY, Opcode.DMA_GATHER, Opcode.DMA_SCATTER)},
    Opcode.MATMUL: _M,
    **{op: _V for op in (Opcode.VBINARY, Opcode.VSELECT, Opcode.VREDUCE, Opcode.VTRANSPOSE,
                         Opcode.VFILL, Opcode.VIOTA, Opcode.VASSERT, Opcode.VSCAN, Opcode.VSORT,
                         Opcode.VFUSED)},
    **{op: _VA for op in (Opcode.VUNARY, Opcode.VSCALAR, Opcode.VCOPY)},
    **{op: _C for op in (Opcode.ALL_REDUCE, Opcode.ALL_GATHER,
                         Opcode.REDUCE_SCATTER, Opcode.ALL_TO_ALL, Opcode.SEND,
                         Opcode.RECV, Opcode.BARRIER)},
}

#: One instruction word (docs/isa.md 3.1), little-endian.
WORD_DTYPE = np.dtype([
    ("opcode", "u1"), ("engine", "u1"), ("kind", "u1"), ("flags", "u1"),
    ("queue", "u1"), ("rd", "u1"), ("ra", "u1"), ("rb", "u1"), ("rc", "u1"),
    ("rdst", "u1"),
    ("tile_a", "<u2"), ("tile_b", "<u2"), ("tile_c", "<u2"), ("tile_d", "<u2"),
    ("group", "<u2"), ("target", "<u4"), ("wait", "<u8"), ("signal", "<u8"),
    ("imm0", "<i8"), ("imm1", "<i8"), ("imm2", "<i8"),
])
assert WORD_DTYPE.itemsize == WORD_BYTES

#: One tile-descriptor table entry (docs/isa.md 3.5).
TILE_DTYPE = np.dtype([
    ("space", "u1"), ("dtype", "u1"), ("rank", "u1"), ("reserved0", "u1"),
    ("reserved1", "<u4"), ("sizes", "<u4", (4,)), ("strides", "<u4", (4,)),
    ("reserved2", "<u8"),
])
assert TILE_DTYPE.itemsize == 48


@dataclass(frozen=True)
class Tile:
    """A static tile descriptor: element ``(i0, ..)`` is at byte
    ``addr + element_bytes(dtype) * sum(i_k * strides[k])``."""

    space: MemorySpace
    dtype: DType
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def element_bytes(self) -> int:
        return element_bytes(self.dtype)

    @property
    def extent_bytes(self) -> int:
        """Bytes from the first to one past the last element addressed."""
        return self.element_bytes * (
            1 + sum((s - 1) * st for s, st in zip(self.shape, self.strides)))

    def __str__(self) -> str:
        return (f"#nova_isa.tile<{self.space.name.lower()}, {self.dtype.name.lower()}, "
                f"{list(self.shape)}, {list(self.strides)}>")


#: A replica-group list: one tuple of chip ids per group, ranks in order.
ReplicaGroups = tuple[tuple[int, ...], ...]


def _ids(mask: int) -> tuple[int, ...]:
    return tuple(i for i in range(NUM_SEMAPHORES) if mask >> i & 1)


@dataclass(frozen=True)
class Instruction:
    """One decoded instruction word; field meanings per docs/isa.md 3.2.

    ``tiles`` holds the tile-table indices of slots a, b, c, d (``NO_TILE``
    where unused); ``wait``/``signal`` are the 64-bit semaphore masks.
    """

    opcode: Opcode
    engine: Engine
    kind: int
    flags: int
    queue: int
    rd: int
    ra: int
    rb: int
    rc: int
    rdst: int
    tiles: tuple[int, int, int, int]
    group: int
    target: int
    wait: int
    signal: int
    imm0: int
    imm1: int
    imm2: int

    @property
    def wait_ids(self) -> tuple[int, ...]:
        """Semaphore ids of the wait mask, increasing."""
        return _ids(self.wait)

    @property
    def signal_ids(self) -> tuple[int, ...]:
        return _ids(self.signal)

    @property
    def imm0_f64(self) -> float:
        """``imm0`` read as an IEEE binary64 (VSCALAR, VFILL on float tiles; VFUSED's A)."""
        return struct.unpack("<d", struct.pack("<q", self.imm0))[0]

    @property
    def imm1_f64(self) -> float:
        """``imm1`` read as an IEEE binary64 (VFUSED's B)."""
        return struct.unpack("<d", struct.pack("<q", self.imm1))[0]

    def has_flag(self, flag: Flag) -> bool:
        return bool(self.flags & flag)

    @property
    def perm(self) -> tuple[int, ...]:
        """VTRANSPOSE permutation bytes (all 8; the tile's rank says how many count)."""
        return tuple((self.imm0 >> (8 * k)) & 0xFF for k in range(8))
