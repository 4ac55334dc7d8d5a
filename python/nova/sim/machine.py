"""The machine types of the simulator: an instruction decoded for execution
(:class:`Dec`), a dispatched one (:class:`Op`), an engine queue (:class:`Queue`) and a
chip's state (:class:`Chip`: registers, semaphores, queues, the recorded or replayed
sequencer stream). The event loop that runs them is :mod:`nova.sim.engines`; the
sequencer, interpreted or replayed, :mod:`nova.sim.sequencer`.
"""

from __future__ import annotations

import functools
import struct
from collections import OrderedDict, deque
from typing import Any

import numpy as np

from nova.binary import opcodes as oc
from nova.binary.type_rules import type_error
from .engines_dma import transpose_axis
from .errors import ProgramError
from .memory import ChipMemory, TileAccess
from .numerics import scalar_of
from .program import ChipCode, Instr
from .scalar import S63

U32_MAX = (1 << 32) - 1
Q_MATRIX, Q_VECTOR, Q_COLLECTIVE, Q_DMA0 = 0, 1, 2, 3




@functools.lru_cache(maxsize=None)
def _bits(mask: int) -> tuple[int, ...]:
    """Ids of the set bits of a semaphore mask (few distinct masks: cached)."""
    ids = []
    while mask:
        low = mask & -mask
        ids.append(low.bit_length() - 1)
        mask ^= low
    return tuple(ids)


def _f64(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<q", bits if bits < S63 else bits - (1 << 64)))[0]


def _fused_immediates(ins: Instr, pc: int) -> tuple[Any, Any]:
    """VFUSED's A and B: None for a tile, else its f64 immediate rounded to f32 (as
    VSCALAR's on a float tile: VFUSED is float only)."""
    if ins.kind not in oc.FUSED_KINDS or ins.imm2 not in oc.FUSED_KINDS:
        raise ProgramError(f"instruction {pc} (vfused) kinds {ins.kind}, {ins.imm2} are not both one of "
                           f"add sub mul div max min")
    return tuple(None if tile != oc.NO_TILE else scalar_of(_f64(imm), oc.F32, False)
                 for tile, imm in ((ins.b, ins.imm0), (ins.c, ins.imm1)))


class Dec:
    """An instruction prepared for execution (static parts resolved once)."""

    __slots__ = ("ins", "pc", "op", "qkey", "waits", "signals", "ta", "tb", "tc", "td", "name",
                 "scalar", "imms", "perm", "label", "perm_axis", "vcost", "work")

    def __init__(self, ins: Instr, pc: int, tiles: list[TileAccess], queues: tuple[int, bool]) -> None:
        dma_engines, activation = queues
        self.ins, self.pc, self.op = ins, pc, ins.opcode
        self.name = oc.NAMES[ins.opcode]
        self.label = f"instruction {pc} ({self.name})"  # for fault messages
        op = ins.opcode
        t = lambda i: None if i == oc.NO_TILE else tiles[i]  # noqa: E731
        self.ta, self.tb, self.tc, self.td = t(ins.a), t(ins.b), t(ins.c), t(ins.d)
        self.waits, self.signals = _bits(ins.wait), _bits(ins.signal)
        self.scalar: np.ndarray | None = None
        # VFUSED: A's and B's immediates in f32 (None where the operand is a tile).
        self.imms: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
        self.perm: tuple[int, ...] = ()
        self.perm_axis = transpose_axis(self.ta, self.td) if op == oc.DMA_COPY and self.ta and self.td else -1
        # Static costs cached on first use, with the target they are for (engines_vector,
        # engines_dma, engines_matrix).
        self.vcost: Any = None
        self.work: Any = None  # (target, nova.sim.report_work.Work): the report's, cached
        if op in oc.DMA_OPS or (op == oc.NOP and ins.engine == oc.DMA):
            if ins.queue >= dma_engines:
                raise ProgramError(f"instruction {pc} ({self.name}) uses dma queue {ins.queue} but the "
                                   f"target has {dma_engines} dma engine(s)")
            self.qkey = Q_DMA0 + ins.queue
        elif op == oc.MATMUL or (op == oc.NOP and ins.engine == oc.MATRIX):
            self.qkey = Q_MATRIX
        elif ins.engine == oc.ACTIVATION:
            # The activation engine's queue follows the dma queues (docs/isa.md 2.7).
            if op not in oc.ACTIVATION_OPS and op != oc.NOP:
                raise ProgramError(f"instruction {pc} ({self.name}) cannot run on the activation engine")
            if not activation:
                raise ProgramError(f"instruction {pc} ({self.name}) runs on the activation engine but the "
                                   f"target has none")
            self.qkey = Q_DMA0 + dma_engines
        elif op in oc.VECTOR_OPS or (op == oc.NOP and ins.engine == oc.VECTOR):
            self.qkey = Q_VECTOR
        elif op in oc.COLLECTIVE_OPS or (op == oc.NOP and ins.engine == oc.COLLECTIVE):
            self.qkey = Q_COLLECTIVE
        else:
            self.qkey = -1
        need = {oc.DMA_COPY: "ad", oc.MATMUL: "abd", oc.VUNARY: "ad", oc.VBINARY: "abd",
                oc.VSCALAR: "ad", oc.VSELECT: "abcd", oc.VREDUCE: "ad", oc.VTRANSPOSE: "ad",
                oc.VFILL: "d", oc.VCOPY: "ad", oc.VIOTA: "d", oc.VASSERT: "a", oc.VSCAN: "ad",
                oc.VSORT: "acd", oc.VFUSED: "ad", oc.DMA_GATHER: "abd", oc.DMA_SCATTER: "abd", oc.ALL_REDUCE: "ad",
                oc.ALL_GATHER: "ad", oc.REDUCE_SCATTER: "ad", oc.ALL_TO_ALL: "ad", oc.SEND: "a",
                oc.RECV: "d"}.get(op, "")
        for s in need:
            if getattr(self, "t" + s) is None:
                raise ProgramError(f"instruction {pc} ({self.name}) has no tile in slot {s}")
        if op == oc.VUNARY and ins.kind not in oc.UNARY_KINDS or \
                op in (oc.VBINARY, oc.VSCALAR) and ins.kind not in oc.BINARY_KINDS:
            raise ProgramError(f"instruction {pc} ({self.name}) has unknown elementwise kind {ins.kind}")
        if op == oc.VFUSED:
            self.imms = _fused_immediates(ins, pc)
        if op in (oc.VREDUCE, oc.VSCAN, oc.VSORT, oc.VIOTA):
            rank = len((self.td if op == oc.VIOTA else self.ta).shape)
            if not 0 <= ins.imm0 < rank:
                raise ProgramError(f"instruction {pc} ({self.name}) axis {ins.imm0} is out of range for a "
                                   f"rank-{rank} tile")
        if op in (oc.VREDUCE, oc.VSCAN) and ins.kind >= len(oc.REDUCE_NAMES):
            raise ProgramError(f"instruction {pc} ({self.name}) has unknown reduction kind {ins.kind}")
        problem = type_error(op, ins.kind, self.ta, self.tb, self.tc, self.td) if need else None
        if problem:
            raise ProgramError(f"instruction {pc} ({self.name}): {problem}")
        if op in (oc.VSCALAR, oc.VFILL) and not ins.flags & oc.F_SCALAR_REG:
            dt = (self.ta if op == oc.VSCALAR else self.td).dtype
            from_int = dt not in oc.FLOAT_DTYPES  # an i64 immediate, else f64 bits
            self.scalar = scalar_of(ins.imm0 if from_int else _f64(ins.imm0), dt, from_int)
        if op == oc.VTRANSPOSE:
            self.perm = tuple((ins.imm0 >> (8 * k)) & 0xFF for k in range(len(self.ta.shape)))
            if sorted(self.perm) != list(range(len(self.perm))):
                raise ProgramError(f"instruction {pc} (vtranspose) has invalid permutation {self.perm}")


class Op:
    """One dispatched instruction (register operands read at dispatch)."""

    __slots__ = ("d", "ra", "rb", "rc", "rdst", "t", "start", "wait_reason", "deps")

    def __init__(self, d: Dec, ra: int, rb: int, rc: int, rdst: int, t: float) -> None:
        self.d, self.ra, self.rb, self.rc, self.rdst, self.t = d, ra, rb, rc, rdst, t
        self.start = 0.0
        self.wait_reason = ""
        self.deps: tuple[int, ...] = ()  # traced runs: instances whose signals it waited on


class Queue:
    __slots__ = ("chip", "key", "name", "pending", "running", "wake", "busy", "count", "last")

    def __init__(self, chip: "Chip", key: int, name: str) -> None:
        self.chip, self.key, self.name = chip, key, name
        self.pending: deque[Op] = deque()
        self.running: Op | None = None
        self.wake = False
        self.busy = 0.0
        self.count = 0
        self.last = -1  # traced runs: the queue's last completed instance


#: Decoded code of recently run programs, by ChipCode identity: a program run
#: repeatedly (weights resident) decodes once. A few entries only.
_DECODED: "OrderedDict[tuple[int, tuple[int, bool]], tuple[ChipCode, list[Dec]]]" = OrderedDict()


def _decoded(code: ChipCode, queues: "tuple[int, bool] | int") -> list[Dec]:
    """``queues``: the target's dma engines and whether it has an activation engine
    (a bare int: dma engines, no activation engine)."""
    if isinstance(queues, int):
        queues = (queues, False)
    key = (id(code), queues)
    hit = _DECODED.get(key)
    if hit is not None and hit[0] is code:
        _DECODED.move_to_end(key)
        return hit[1]
    tiles = [TileAccess(t) for t in code.tiles]
    decoded = [Dec(ins, pc, tiles, queues) for pc, ins in enumerate(code.code)]
    _DECODED[key] = (code, decoded)
    while len(_DECODED) > 8:
        _DECODED.popitem(last=False)
    return decoded


class Chip:
    def __init__(self, cid: int, code: ChipCode, mem: ChipMemory | None, queues: tuple[int, bool]) -> None:
        """``queues``: the target's dma engines and whether it has an activation engine."""
        self.id = cid
        self.code = _decoded(code, queues)
        dma_engines, activation = queues
        self.groups = code.groups
        self.debug = code.debug
        self.regs = [0] * oc.NUM_REGISTERS
        self.sems = [0] * oc.NUM_SEMAPHORES
        self.sem_time = [0.0] * oc.NUM_SEMAPHORES  # when each was last signalled (matrix pipelining)
        # Traced runs: per semaphore, the instances whose signals are not
        # consumed yet, in order (-1: the sequencer's sem_signal). The j-th
        # wait is released by the j-th signal (docs/isa.md 1.1), which gives
        # the critical path its cross-engine edges.
        self.sem_fifo: list[deque[int]] = [deque() for _ in range(oc.NUM_SEMAPHORES)]
        self.pc = 0
        self.t = 0.0
        self.halted = False
        self.t_end = 0.0
        self.block: Any = None  # None | "sem" | "time" | Queue (full)
        self.loops: list[tuple[int, int, int, int]] = []
        self.mem = mem
        names = ["matrix", "vector", "collective"] + [f"dma{q}" for q in range(dma_engines)]
        if activation:
            names.append("activation")
        self.act_key = Q_DMA0 + dma_engines if activation else -1  # its queue's key
        self.queues = [Queue(self, k, n) for k, n in enumerate(names)]
        self.sem_blocked: dict[Queue, None] = {}
        self.coll_seq: dict[tuple[int, ...], int] = {}
        self.scalar_count = 0
        self.executed = 0  # dynamic instructions, scalar and dispatched (the watchdog's count)
        # Per instruction (by pc): engine busy ns and completed executions, for the
        # report's bound from the work and its attribution to source lines.
        self.pc_busy = [0.0] * len(self.code)
        self.pc_count = [0] * len(self.code)
        # Code with loops over layers (nova.sim.layers): the layer of each execution
        # of the instructions inside them, and engine busy ns per (pc, layer).
        self.layers: Any = None
        self.layer_exec: dict[int, list[int]] | None = None
        self.layer_busy: dict[tuple[int, int], float] = {}
        self.mem_bytes = {k: 0.0 for k in ("hbm_read", "hbm_write", "sram_read", "sram_write",
                                           "acc_read", "acc_write")}
        # The sequencer's stream (nova.sim.stream; its part being run) and the state
        # that part was walked from (None: the program's start).
        self.stream: Any = None
        self.cut: Any = None
        # Timing-only runs: the stream's bounds checks were done once (nova.sim.precheck);
        # the bytes they count are added at the end of the run.
        self.prechecked = False
        self.pre_bytes: dict[str, float] | None = None
        self.steps: list | None = None
        self.si = 0  # next step
        self.at_step = False  # the next step's scalar prefix has run

    @property
    def finished(self) -> bool:
        return self.halted and all(not q.pending for q in self.queues)


_RW = (("hbm_read", "hbm_write"), ("sram_read", "sram_write"), ("acc_read", "acc_write"))
