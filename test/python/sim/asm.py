"""A tiny assembler for tests: builds nova.sim Programs instruction by instruction."""

from __future__ import annotations

import json
import struct
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from nova.sim import opcodes as oc
from nova.sim.program import ChipCode, Constant, Instr, IOEntry, Program, TileDesc
from nova.sim.target import Target, load_target

ROOT = Path(__file__).resolve().parents[3]
SPACES = {"hbm": 0, "sram": 1, "acc": 2}
DTYPES = {"f32": 0, "bf16": 1, "f16": 2}
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
        self.io.append(IOEntry(index, "input", name, DTYPES[dtype], tuple(shape), address))

    def output(self, index: int, name: str, dtype: str, shape: Sequence[int], address: int) -> None:
        self.io.append(IOEntry(index, "output", name, DTYPES[dtype], tuple(shape), address))

    def program(self, tg: Target) -> Program:
        if not self.code or self.code[-1].opcode != oc.HALT:
            self.halt()
        return Program(tg, (ChipCode(tuple(self.code), tuple(self.tiles), tuple(self.groups)),),
                       tuple(self.io), tuple(self.constants))

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

    def vunary(self, kind: str, ra: int, ta: int, rd: int, td: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VUNARY, oc.VECTOR, kind=UNARY[kind], ra=ra, a=ta, rdst=rd, d=td, **self._sync(kw))

    def vbinary(self, kind: str, ra: int, ta: int, rb: int, tb: int, rd: int, td: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VBINARY, oc.VECTOR, kind=BINARY[kind], ra=ra, a=ta, rb=rb, b=tb, rdst=rd, d=td, **self._sync(kw))

    def vscalar(self, kind: str, ra: int, ta: int, s: float, rd: int, td: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VSCALAR, oc.VECTOR, kind=BINARY[kind], ra=ra, a=ta, imm0=f64bits(s), rdst=rd, d=td, **self._sync(kw))

    def vselect(self, rc_: int, tc_: int, rx: int, tx: int, rz: int, tz: int, rd: int, td: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VSELECT, oc.VECTOR, ra=rc_, a=tc_, rb=rx, b=tx, rc=rz, c=tz, rdst=rd, d=td, **self._sync(kw))

    def vreduce(self, kind: str, ra: int, ta: int, rd: int, td: int, axis: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VREDUCE, oc.VECTOR, kind=RED[kind], ra=ra, a=ta, rdst=rd, d=td, imm0=axis, **self._sync(kw))

    def vtranspose(self, ra: int, ta: int, rd: int, td: int, perm: Sequence[int], **kw: Sequence[int]) -> None:
        imm = sum(p << (8 * k) for k, p in enumerate(perm))
        self.emit(oc.VTRANSPOSE, oc.VECTOR, ra=ra, a=ta, rdst=rd, d=td, imm0=imm, **self._sync(kw))

    def vfill(self, value: float, rd: int, td: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VFILL, oc.VECTOR, imm0=f64bits(value), rdst=rd, d=td, **self._sync(kw))

    def vcopy(self, ra: int, ta: int, rd: int, td: int, **kw: Sequence[int]) -> None:
        self.emit(oc.VCOPY, oc.VECTOR, ra=ra, a=ta, rdst=rd, d=td, **self._sync(kw))

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
