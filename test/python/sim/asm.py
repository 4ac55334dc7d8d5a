"""A tiny assembler for tests: builds nova.sim Programs instruction by instruction."""

from __future__ import annotations

import json
import struct
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from nova.binary import opcodes as oc
from nova.sim.program import ChipCode, Constant, Instr, IOEntry, Program, TileDesc
from nova.sim.target import Target, load_target

ROOT = Path(__file__).resolve().parents[3]
SPACES = {"hbm": 0, "sram": 1, "acc": 2}
#: Tile element types (docs/isa.md 3.5) and I/O element types (docs/binary-format.md 4.4).
DTYPES = {n: i for i, n in enumerate(oc.DTYPE_NAMES)}
IO_DTYPES = {"f32": 0, "bf16": 1, "f16": 2, "f64": 3, "i64": 4, "i32": 5, "i16": 6, "i8": 7, "i1": 8}
UNARY = {v: k for k, v in oc.UNARY_KINDS.items()}
BINARY = {v: k for k, v in oc.BINARY_KINDS.items()}
RED = {n: i for i, n in enumerate(oc.REDUCE_NAMES)}
SALU = {n: i for i, n in enumerate(("add", "sub", "mul", "div", "rem", "min", "max", "eq", "ne", "lt", "le"))}


def target(name: str = "tiny", **changes: object) -> Target:
    t = load_target(ROOT / "targets" / f"{name}.json")
    return t.with_changes(**changes) if changes else t


def mask(ids: Sequence[int]) -> int:
    m = 0
    for i in ids:
        m |= 1 << i
    return m


def f64bits(v: float) -> int:
    return struct.unpack("<q", struct.pack("<d", v))[0]


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


class Asm:
    def __init__(self) -> None:
        self.code: list[Instr] = []
        self.tiles: list[TileDesc] = []
        self.groups: list[tuple[tuple[int, ...], ...]] = []
        self.io: list[IOEntry] = []
        self.constants: list[Constant] = []
        self.debug: dict[int, str] = {}

    # tables -------------------------------------------------------------------
    def tile(self, space: str, dtype: str, shape: Sequence[int], strides: Sequence[int] | None = None) -> int:
        t = TileDesc(SPACES[space], DTYPES[dtype], tuple(shape), tuple(strides or row_major(shape)))
        if t not in self.tiles:
            self.tiles.append(t)
        return self.tiles.index(t)

    def group(self, groups: Sequence[Sequence[int]]) -> int:
        g = tuple(tuple(x) for x in groups)
        if g not in self.groups:
            self.groups.append(g)
        return self.groups.index(g)

    def input(self, index: int, name: str, dtype: str, shape: Sequence[int], address: int) -> None:
        self.io.append(IOEntry(index, "input", name, IO_DTYPES[dtype], tuple(shape), address))

    def output(self, index: int, name: str, dtype: str, shape: Sequence[int], address: int) -> None:
        self.io.append(IOEntry(index, "output", name, IO_DTYPES[dtype], tuple(shape), address))

    def program(self, tg: Target) -> Program:
        if not self.code or self.code[-1].opcode != oc.HALT:
            self.halt()
        return Program(tg, (ChipCode(tuple(self.code), tuple(self.tiles), tuple(self.groups), dict(self.debug)),),
                       tuple(self.io), tuple(self.constants))

    def at(self, text: str) -> None:
        """Gives the last instruction a DEBUG entry (its source location)."""
        self.debug[len(self.code) - 1] = text

    def emit(self, opcode: int, engine: int, **kw: int) -> int:
        self.code.append(Instr(opcode, engine, **kw))
        return len(self.code) - 1

    # scalar -------------------------------------------------------------------
    def li(self, rd: int, v: int) -> None:
        self.emit(oc.LI, oc.SCALAR, rd=rd, imm0=v)

    def salu(self, kind: str, rd: int, ra: int, rb: int) -> None:
        self.emit(oc.SALU, oc.SCALAR, kind=SALU[kind], rd=rd, ra=ra, rb=rb)

    def chip_id(self, rd: int) -> None:
        self.emit(oc.CHIP_ID, oc.SCALAR, rd=rd)

    def sem_wait(self, ids: Sequence[int]) -> None:
        self.emit(oc.SEM_WAIT, oc.SCALAR, wait=mask(ids))

    def sem_signal(self, ids: Sequence[int]) -> None:
        self.emit(oc.SEM_SIGNAL, oc.SCALAR, signal=mask(ids))

    def halt(self) -> None:
        self.emit(oc.HALT, oc.SCALAR)

    def nop(self, engine: int = oc.SCALAR, wait: Sequence[int] = (), signal: Sequence[int] = (), queue: int = 0) -> None:
        self.emit(oc.NOP, engine, wait=mask(wait), signal=mask(signal), queue=queue)

    @contextmanager
    def loop(self, rd: int, lb: int | str, ub: int | str, step: int | str = 1) -> Iterator[None]:
        """Bounds given as ints (immediates) or 'rN' (registers)."""
        flags, regs, imms = 0, [0, 0, 0], [0, 0, 0]
        for i, v in enumerate((lb, ub, step)):
            if isinstance(v, str):
                flags |= 1 << i
                regs[i] = int(v[1:])
            else:
                imms[i] = v
        at = self.emit(oc.LOOP, oc.SCALAR, rd=rd, flags=flags, ra=regs[0], rb=regs[1], rc=regs[2],
                       imm0=imms[0], imm1=imms[1], imm2=imms[2])
        yield
        end = self.emit(oc.ENDLOOP, oc.SCALAR, target=at)
        self.code[at] = Instr(**{**self.code[at].__dict__, "target": end})

    def if_(self, ra: int, then: "callable", else_: "callable | None" = None) -> None:
        at = self.emit(oc.IF, oc.SCALAR, ra=ra)
        then()
        if else_ is not None:
            el = self.emit(oc.ELSE, oc.SCALAR)
            self.code[at] = Instr(**{**self.code[at].__dict__, "target": el})
            else_()
            end = self.emit(oc.ENDIF, oc.SCALAR)
            self.code[el] = Instr(**{**self.code[el].__dict__, "target": end})
        else:
            end = self.emit(oc.ENDIF, oc.SCALAR)
            self.code[at] = Instr(**{**self.code[at].__dict__, "target": end})

    # engines ------------------------------------------------------------------
    def dma(self, rs: int, ts: int, rd: int, td: int, queue: int = 0, peer: int | None = None,
            wait: Sequence[int] = (), signal: Sequence[int] = ()) -> None:
        self.emit(oc.DMA_COPY, oc.DMA, queue=queue, ra=rs, a=ts, rdst=rd, d=td,
                  flags=oc.F_PEER if peer is not None else 0, rc=peer or 0, wait=mask(wait), signal=mask(signal))

    def matmul(self, ra: int, ta: int, rb: int, tb: int, rd: int, td: int, accumulate: bool = False,
               wait: Sequence[int] = (), signal: Sequence[int] = ()) -> None:
        self.emit(oc.MATMUL, oc.MATRIX, ra=ra, a=ta, rb=rb, b=tb, rdst=rd, d=td,
                  flags=oc.F_ACCUMULATE if accumulate else 0, wait=mask(wait), signal=mask(signal))

    def vunary(self, kind: str, ra: int, ta: int, rd: int, td: int, engine: int = oc.VECTOR,
               **kw: Sequence[int]) -> None:
        self.emit(oc.VUNARY, engine, kind=UNARY[kind], ra=ra, a=ta, rdst=rd, d=td, **self._sync(kw))

    def vbinary(self, kind: str, ra: int, ta: int, rb: int, tb: int, rd: int, td: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VBINARY, oc.VECTOR, kind=BINARY[kind], ra=ra, a=ta, rb=rb, b=tb, rdst=rd, d=td, **self._sync(kw))

    def _scalar(self, tile: int, s: float | int | str) -> tuple[int, int, int]:
        """(flags, register, imm0) of a scalar: 'rN' a register, an int an i64 immediate
        on integer / i1 tiles, else f64 bits."""
        if isinstance(s, str):
            return oc.F_SCALAR_REG, int(s[1:]), 0
        if self.tiles[tile].dtype in oc.FLOAT_DTYPES:
            return 0, 0, f64bits(float(s))
        return 0, 0, int(s)

    def vscalar(self, kind: str, ra: int, ta: int, s: float | int | str, rd: int, td: int,
                engine: int = oc.VECTOR, **kw: Sequence[int]) -> None:
        flags, reg, imm = self._scalar(ta, s)
        self.emit(oc.VSCALAR, engine, kind=BINARY[kind], ra=ra, a=ta, rb=reg, flags=flags, imm0=imm, rdst=rd,
                  d=td, **self._sync(kw))

    def vselect(self, rc_: int, tc_: int, rx: int, tx: int, rz: int, tz: int, rd: int, td: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VSELECT, oc.VECTOR, ra=rc_, a=tc_, rb=rx, b=tx, rc=rz, c=tz, rdst=rd, d=td, **self._sync(kw))

    def vreduce(self, kind: str, ra: int, ta: int, rd: int, td: int, axis: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VREDUCE, oc.VECTOR, kind=RED[kind], ra=ra, a=ta, rdst=rd, d=td, imm0=axis, **self._sync(kw))

    def vtranspose(self, ra: int, ta: int, rd: int, td: int, perm: Sequence[int], **kw: Sequence[int]) -> None:
        imm = sum(p << (8 * k) for k, p in enumerate(perm))
        self.emit(oc.VTRANSPOSE, oc.VECTOR, ra=ra, a=ta, rdst=rd, d=td, imm0=imm, **self._sync(kw))

    def vfill(self, value: float | int | str, rd: int, td: int, **kw: Sequence[int]) -> None:
        flags, reg, imm = self._scalar(td, value)
        self.emit(oc.VFILL, oc.VECTOR, imm0=imm, ra=reg, flags=flags, rdst=rd, d=td, **self._sync(kw))

    def vcopy(self, ra: int, ta: int, rd: int, td: int, engine: int = oc.VECTOR, **kw: Sequence[int]) -> None:
        self.emit(oc.VCOPY, engine, ra=ra, a=ta, rdst=rd, d=td, **self._sync(kw))

    def viota(self, rd: int, td: int, axis: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VIOTA, oc.VECTOR, rdst=rd, d=td, imm0=axis, **self._sync(kw))

    def vassert(self, ra: int, ta: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VASSERT, oc.VECTOR, ra=ra, a=ta, **self._sync(kw))

    def vscan(self, kind: str, ra: int, ta: int, rd: int, td: int, axis: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VSCAN, oc.VECTOR, kind=RED[kind], ra=ra, a=ta, rdst=rd, d=td, imm0=axis, **self._sync(kw))

    def vsort(self, ra: int, ta: int, rv: int, tv: int, ri: int, ti: int, axis: int, descending: bool = False,
              **kw: Sequence[int]) -> None:
        """Values to (rv, tv) in slot d, indices to (ri, ti) in slot c."""
        self.emit(oc.VSORT, oc.VECTOR, ra=ra, a=ta, rc=ri, c=ti, rdst=rv, d=tv, imm0=axis,
                  flags=oc.F_DESCENDING if descending else 0, **self._sync(kw))

    def dma_gather(self, rs: int, ts: int, ri: int, ti: int, rd: int, td: int, queue: int = 0,
                   **kw: Sequence[int]) -> None:
        self.emit(oc.DMA_GATHER, oc.DMA, queue=queue, ra=rs, a=ts, rb=ri, b=ti, rdst=rd, d=td, **self._sync(kw))

    def dma_scatter(self, rs: int, ts: int, ri: int, ti: int, rd: int, td: int, queue: int = 0,
                    accumulate: bool = False, **kw: Sequence[int]) -> None:
        self.emit(oc.DMA_SCATTER, oc.DMA, queue=queue, ra=rs, a=ts, rb=ri, b=ti, rdst=rd, d=td,
                  flags=oc.F_ACCUMULATE if accumulate else 0, **self._sync(kw))

    # collectives ---------------------------------------------------------------
    def all_reduce(self, kind: str, ra: int, ta: int, rd: int, td: int, groups: Sequence[Sequence[int]], **kw: Sequence[int]) -> None:
        self.emit(oc.ALL_REDUCE, oc.COLLECTIVE, kind=RED[kind], ra=ra, a=ta, rdst=rd, d=td, group=self.group(groups), **self._sync(kw))

    def all_gather(self, ra: int, ta: int, rd: int, td: int, dim: int, groups: Sequence[Sequence[int]], **kw: Sequence[int]) -> None:
        self.emit(oc.ALL_GATHER, oc.COLLECTIVE, ra=ra, a=ta, rdst=rd, d=td, imm0=dim, group=self.group(groups), **self._sync(kw))

    def reduce_scatter(self, kind: str, ra: int, ta: int, rd: int, td: int, dim: int, groups: Sequence[Sequence[int]], **kw: Sequence[int]) -> None:
        self.emit(oc.REDUCE_SCATTER, oc.COLLECTIVE, kind=RED[kind], ra=ra, a=ta, rdst=rd, d=td, imm0=dim, group=self.group(groups), **self._sync(kw))

    def all_to_all(self, ra: int, ta: int, rd: int, td: int, split_dim: int, concat_dim: int, groups: Sequence[Sequence[int]], **kw: Sequence[int]) -> None:
        self.emit(oc.ALL_TO_ALL, oc.COLLECTIVE, ra=ra, a=ta, rdst=rd, d=td, imm0=split_dim, imm1=concat_dim, group=self.group(groups), **self._sync(kw))

    def send(self, ra: int, ta: int, rpeer: int, channel: int = 0, **kw: Sequence[int]) -> None:
        self.emit(oc.SEND, oc.COLLECTIVE, ra=ra, a=ta, rc=rpeer, flags=oc.F_PEER, imm1=channel, **self._sync(kw))

    def recv(self, rd: int, td: int, rpeer: int, channel: int = 0, **kw: Sequence[int]) -> None:
        self.emit(oc.RECV, oc.COLLECTIVE, rdst=rd, d=td, rc=rpeer, flags=oc.F_PEER, imm1=channel, **self._sync(kw))

    def barrier(self, groups: Sequence[Sequence[int]], **kw: Sequence[int]) -> None:
        self.emit(oc.BARRIER, oc.COLLECTIVE, group=self.group(groups), **self._sync(kw))

    @staticmethod
    def _sync(kw: dict[str, Sequence[int]]) -> dict[str, int]:
        return {k: mask(v) for k, v in kw.items()}


#: numpy type of each tile dtype's values on the host (bf16 given and returned as float32).
NUMPY = {"f32": "float32", "bf16": "float32", "f16": "float16", "i64": "int64", "i32": "int32", "i8": "int8",
         "i1": "bool"}


def run_tiles(build: "callable", inputs: dict[str, tuple[object, str]], outputs: dict[str, tuple[Sequence[int], str]],
              slot: int = 1024, tg: Target | None = None, debug: dict[str, str] | None = None,
              functional: bool = True) -> tuple[dict[str, object], object]:
    """Stages each input HBM -> SRAM, calls ``build(s, t)`` with ``t[name] = (sram register, sram
    tile)`` for inputs and outputs, then copies the outputs back; returns (outputs, report).

    Operand k lives at byte ``k * slot`` of HBM and of SRAM. The build must signal semaphore 1
    when its last instruction completes."""
    import numpy as np

    from nova.sim import Simulator

    s = Asm()
    t: dict[str, tuple[int, int]] = {}
    host = {}
    for k, (name, (value, dtype)) in enumerate(inputs.items()):
        arr = np.asarray(value, dtype=NUMPY[dtype])
        host[name] = arr
        s.input(k, name, dtype, arr.shape, k * slot)
        s.li(100 + k, k * slot)
        t[name] = (100 + k, s.tile("sram", dtype, arr.shape))
        s.dma(100 + k, s.tile("hbm", dtype, arr.shape), 100 + k, t[name][1], signal=[0])
        s.sem_wait([0])
    n = len(inputs)
    for j, (name, (shape, dtype)) in enumerate(outputs.items()):
        k = n + j
        s.output(k, name, dtype, shape, k * slot)
        s.li(100 + k, k * slot)
        t[name] = (100 + k, s.tile("sram", dtype, shape))
    build(s, t)
    s.sem_wait([1])
    for j, (name, (shape, dtype)) in enumerate(outputs.items()):
        k = n + j
        s.dma(100 + k, t[name][1], 100 + k, s.tile("hbm", dtype, shape), queue=1, signal=[2])
        s.sem_wait([2])
    out, rep = Simulator(s.program(tg or target("tiny", chips=1)), functional=functional).run(host)
    return {name: out[name] for name in outputs} if functional else {}, rep
