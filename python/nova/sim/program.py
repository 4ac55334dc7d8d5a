"""The simulator's view of a binary: per-chip code, tiles, groups, I/O and constants.

:func:`program_from_binary` converts what ``nova.binary.format.load_binary`` returns
(duck-typed: only attribute names are relied on) once, at the API boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Sequence

from nova.binary import opcodes as oc
from .errors import ProgramError
from .target import Target, target_from_dict

INSTRUCTION_FIELDS = ("opcode", "engine", "kind", "flags", "queue", "rd", "ra", "rb", "rc",
                      "rdst", "a", "b", "c", "d", "group", "target", "wait", "signal",
                      "imm0", "imm1", "imm2")


@dataclass(frozen=True)
class Instr:
    """One decoded instruction word (docs/isa.md 3.1), plain integers."""

    opcode: int
    engine: int
    kind: int = 0
    flags: int = 0
    queue: int = 0
    rd: int = 0
    ra: int = 0
    rb: int = 0
    rc: int = 0
    rdst: int = 0
    a: int = oc.NO_TILE
    b: int = oc.NO_TILE
    c: int = oc.NO_TILE
    d: int = oc.NO_TILE
    group: int = 0
    target: int = 0
    wait: int = 0
    signal: int = 0
    imm0: int = 0
    imm1: int = 0
    imm2: int = 0

    def __post_init__(self) -> None:
        if self.opcode not in oc.NAMES:
            raise ProgramError(f"unknown opcode 0x{self.opcode:02x}")
        if not 0 <= self.engine <= oc.ACTIVATION:
            raise ProgramError(f"unknown engine {self.engine}")
        for r in (self.rd, self.ra, self.rb, self.rc, self.rdst):
            if not 0 <= r <= 255:
                raise ProgramError(f"{self.name}: register r{r} is outside r0..r255")

    @property
    def name(self) -> str:
        return oc.NAMES[self.opcode]


@dataclass(frozen=True)
class TileDesc:
    """A tile descriptor: space (0 hbm, 1 sram, 2 acc), dtype (0 f32, 1 bf16, 2 f16, 3 i64, 4 i32,
    5 i8, 6 i1), shape, element strides."""

    space: int
    dtype: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.space not in (0, 1, 2):
            raise ProgramError(f"tile space must be 0..2, got {self.space}")
        if not 0 <= self.dtype < len(oc.DTYPE_NAMES):
            raise ProgramError(f"tile dtype must be 0..{len(oc.DTYPE_NAMES) - 1}, got {self.dtype}")
        if not 1 <= len(self.shape) <= 4 or len(self.shape) != len(self.strides):
            raise ProgramError(f"tile rank must be 1..4 with one stride per size, got {self.shape} {self.strides}")
        if any(s <= 0 for s in self.shape) or any(s < 0 for s in self.strides):
            raise ProgramError(f"tile sizes must be > 0 and strides >= 0, got {self.shape} {self.strides}")

    @property
    def elt_bytes(self) -> int:
        return oc.ELT_BYTES[self.dtype]

    @property
    def extent(self) -> int:
        """Bytes from the tile's address to one past its last element (docs/isa.md 1.3)."""
        return self.elt_bytes * (1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides)))

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * self.elt_bytes

    def __str__(self) -> str:
        return (f"<{oc.SPACE_NAMES[self.space]}, {oc.DTYPE_NAMES[self.dtype]}, "
                f"{list(self.shape)}, {list(self.strides)}>")


#: I/O element types (docs/binary-format.md 4.4): (name, bytes per element).
IO_DTYPES = (("f32", 4), ("bf16", 2), ("f16", 2), ("f64", 8), ("i64", 8), ("i32", 4), ("i16", 2),
             ("i8", 1), ("i1", 1))


@dataclass(frozen=True)
class IOEntry:
    """One program input or output living in HBM of every chip at ``address``."""

    index: int
    role: str  # "input" or "output"
    name: str
    dtype: int
    shape: tuple[int, ...]
    address: int

    def __post_init__(self) -> None:
        if self.role not in ("input", "output"):
            raise ProgramError(f"I/O entry {self.index} role must be input or output, got '{self.role}'")
        if not 0 <= self.dtype < len(IO_DTYPES) or self.address < 0 or any(s < 0 for s in self.shape):
            raise ProgramError(f"I/O entry {self.index} ('{self.name}') is malformed")

    @property
    def dtype_name(self) -> str:
        return IO_DTYPES[self.dtype][0]

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * IO_DTYPES[self.dtype][1]


@dataclass(frozen=True)
class Constant:
    """Bytes written into HBM of every chip at ``address`` before the run."""

    address: int
    data: bytes

    def __post_init__(self) -> None:
        if self.address < 0:
            raise ProgramError(f"constant address must be >= 0, got {self.address}")


@dataclass(frozen=True)
class ChipCode:
    """One chip's code, tile table and replica-group table."""

    code: tuple[Instr, ...]
    tiles: tuple[TileDesc, ...]
    groups: tuple[tuple[tuple[int, ...], ...], ...] = ()
    debug: dict[int, str] = field(default_factory=dict, compare=False, hash=False)
    #: One past the highest byte of hbm, sram and acc the code can touch, when the
    #: loader proved it (nova.binary.bounds); None if unknown.
    high: tuple[int, int, int] | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.code:
            raise ProgramError("a chip's code is empty (it must end with halt)")
        n_t, n_g = len(self.tiles), len(self.groups)
        for i, ins in enumerate(self.code):
            for slot in ("a", "b", "c", "d"):
                t = getattr(ins, slot)
                if t != oc.NO_TILE and t >= n_t:
                    raise ProgramError(f"instruction {i} ({ins.name}) tile_{slot} {t} is out of range "
                                       f"of the tile table ({n_t} entries)")
            if ins.opcode in (oc.ALL_REDUCE, oc.ALL_GATHER, oc.REDUCE_SCATTER, oc.ALL_TO_ALL,
                              oc.BARRIER) and ins.group >= n_g:
                raise ProgramError(f"instruction {i} ({ins.name}) group {ins.group} is out of range "
                                   f"of the replica-group table ({n_g} entries)")
            if ins.opcode in (oc.LOOP, oc.ENDLOOP, oc.IF, oc.ELSE) and ins.target >= len(self.code):
                raise ProgramError(f"instruction {i} ({ins.name}) target {ins.target} is out of range")


@dataclass(frozen=True)
class Program:
    """Everything the simulator needs from a binary."""

    target: Target
    chips: tuple[ChipCode, ...]
    io: tuple[IOEntry, ...] = ()
    constants: tuple[Constant, ...] = ()

    def __post_init__(self) -> None:
        if len(self.chips) == 1 and self.target.chips > 1:
            object.__setattr__(self, "chips", self.chips * self.target.chips)
        if len(self.chips) != self.target.chips:
            raise ProgramError(f"program has code for {len(self.chips)} chip(s) but target "
                               f"'{self.target.name}' has {self.target.chips}")
        for e in self.io:
            if e.address + e.nbytes > self.target.hbm_bytes:
                raise ProgramError(f"I/O entry {e.index} ('{e.name}') lies beyond HBM capacity")
        for c in self.constants:
            if c.address + len(c.data) > self.target.hbm_bytes:
                raise ProgramError(f"constant at {c.address} lies beyond HBM capacity")


# ---------------------------------------------------------------------------------
# Conversion from the binary reader's objects (duck-typed).

def _int(v: Any) -> int:
    if isinstance(v, Enum):
        v = v.value
    return int(v)


def _code(v: Any, names: Sequence[str], what: str) -> int:
    """An int, an IntEnum, or an Enum/str named like one of ``names``."""
    if isinstance(v, Enum):
        v = v.value if isinstance(v.value, int) else v.name
    if isinstance(v, str):
        s = v.lower()
        if s not in names:
            raise ProgramError(f"unknown {what} '{v}'")
        return names.index(s)
    return int(v)


def _mask(v: Any) -> int:
    if isinstance(v, (list, tuple, set, frozenset)):
        m = 0
        for i in v:
            m |= 1 << int(i)
        return m
    return _int(v or 0)


def instr_from(obj: Any) -> Instr:
    """Converts a decoded instruction object (``nova.binary.isa.Instruction``) to :class:`Instr`."""
    if isinstance(obj, Instr):
        return obj
    aliases = {"a": ("a", "tile_a"), "b": ("b", "tile_b"), "c": ("c", "tile_c"), "d": ("d", "tile_d"),
               "wait": ("wait", "wait_mask"), "signal": ("signal", "signal_mask")}
    vals: dict[str, int] = {}
    tiles = getattr(obj, "tiles", None)
    if tiles is not None:
        for slot, t in zip("abcd", tiles):
            vals[slot] = oc.NO_TILE if t is None else _int(t)
    for f in INSTRUCTION_FIELDS:
        if f in vals:
            continue
        for name in aliases.get(f, (f,)):
            if hasattr(obj, name):
                v = getattr(obj, name)
                if f in ("wait", "signal"):
                    vals[f] = _mask(v)
                elif f == "engine":
                    vals[f] = _code(v, oc.ENGINE_NAMES, "engine")
                elif v is None:
                    vals[f] = oc.NO_TILE if f in ("a", "b", "c", "d") else 0
                else:
                    vals[f] = _int(v)
                break
    return Instr(**vals)


def tile_from(obj: Any) -> TileDesc:
    return TileDesc(space=_code(obj.space, oc.SPACE_NAMES, "memory space"),
                    dtype=_code(obj.dtype, oc.DTYPE_NAMES, "element type"),
                    shape=tuple(int(s) for s in obj.shape), strides=tuple(int(s) for s in obj.strides))


def _groups_from(g: Any) -> tuple[tuple[int, ...], ...]:
    if hasattr(g, "groups"):
        g = g.groups
    return tuple(tuple(int(c) for c in grp) for grp in g)


def _first(obj: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
        if isinstance(obj, dict) and n in obj:
            return obj[n]
    return default


def program_from_binary(binary: Any) -> Program:
    """Builds a :class:`Program` from a loaded binary (``nova.binary.format.Binary``)."""
    if isinstance(binary, Program):
        return binary
    target = _first(binary, "target")
    target = target if isinstance(target, Target) else target_from_dict(target)
    if hasattr(binary, "program_for"):
        # nova.binary.format.Binary: programs shared by sets of chips (SPMD).
        converted: dict[int, ChipCode] = {}
        chips = []
        for c in range(target.chips):
            p = binary.program_for(c)
            cc = converted.get(id(p))
            if cc is None:
                cc = converted[id(p)] = ChipCode(
                    code=tuple(instr_from(i) for i in p.instructions),
                    tiles=tuple(tile_from(t) for t in p.tiles),
                    groups=tuple(_groups_from(g) for g in p.groups),
                    debug=dict(getattr(p, "debug", {}) or {}),
                    high=getattr(p, "high", None))
            chips.append(cc)
        chips_obj = None
    else:
        chips_obj = _first(binary, "chips", "code", "chip_code")
        chips = []
    shared_tiles = _first(binary, "tiles", "tile_table", default=None)
    shared_groups = _first(binary, "groups", "replica_groups", default=None)
    for ch in chips_obj or ():
        if isinstance(ch, (list, tuple)):
            code, tiles, groups = ch, shared_tiles, shared_groups
        else:
            code = _first(ch, "code", "instructions")
            tiles = _first(ch, "tiles", "tile_table", default=shared_tiles)
            groups = _first(ch, "groups", "replica_groups", default=shared_groups)
        chips.append(ChipCode(code=tuple(instr_from(i) for i in code),
                              tiles=tuple(tile_from(t) for t in (tiles or ())),
                              groups=tuple(_groups_from(g) for g in (groups or ()))))
    io = []
    for e in _first(binary, "io", "io_table", default=()) or ():
        role = _first(e, "role")
        role = (role.name if isinstance(role, Enum) else str(role)).lower()
        io.append(IOEntry(index=_int(_first(e, "index")), role=role, name=str(_first(e, "name", default="")),
                          dtype=_code(_first(e, "dtype"), [n for n, _ in IO_DTYPES], "element type"),
                          shape=tuple(int(s) for s in _first(e, "shape")),
                          address=_int(_first(e, "address", "hbm_address", "addr"))))
    consts = []
    for c in _first(binary, "constants", default=()) or ():
        consts.append(Constant(address=_int(_first(c, "address", "hbm_address", "addr")),
                               data=bytes(_first(c, "data", "bytes", "payload"))))
    return Program(target=target, chips=tuple(chips), io=tuple(io), constants=tuple(consts))
