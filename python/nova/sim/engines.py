"""The multi-chip machine: sequencers, engine queues, semaphores, discrete events.

Per chip the sequencer fetches in program order (1 cycle per instruction), executes
scalar instructions itself and dispatches the rest into per-engine queues (depth 32,
a slot is held until the instruction completes). A queue starts its head once it was
dispatched and every semaphore of its wait mask is > 0; the instruction's functional
effect happens at that moment (its inputs are ready, by the program's own
synchronisation), and its completion (signals, next start) is an event at
``start + cost``. Every chip runs in one global event queue so DMA to a peer, send/recv
and collectives interleave in time order.

The sequencer runs ahead of global time through scalar code and dispatches (its own
clock ``t``) and only synchronises with global time at semaphore instructions, a full
queue and halt, which keeps per-instruction overhead to a few Python operations. A
program's first run records the sequencer's dynamic stream (:mod:`nova.sim.stream`:
dispatches with their register operands, semaphore operations, scalar counts between
them); later runs replay it with the same time arithmetic instead of interpreting.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import struct
from collections import OrderedDict, deque
from typing import Any, Callable

import numpy as np

from . import collectives as coll
from nova.binary import opcodes as oc
from .collectives import CollectivePlanner
from .engines_collective import CollectiveUnit
from .engines_dma import DmaUnit, transpose_axis
from .engines_matrix import MatrixUnit
from .engines_vector import VectorUnit
from .errors import (CollectiveMismatchError, DeadlockError, EngineFaultError, MemoryFaultError,
                     ProgramError, ScalarFaultError, SimulationError)
from .interconnect import Interconnect
from .memory import ChipMemory, TileAccess
from .numerics import scalar_of
from .program import ChipCode, Instr, Program
from nova.binary.type_rules import type_error
from .scalar import S63, SaluError, salu, wrap
from .timing import BandwidthPool, CostModel
from .trace import TraceRecorder
from .watchdog import Budget, over_instructions, over_time
from . import decoupled, fast_timing
from . import stream as sx
from .stream import cached_stream, precheck, snapshot, state_at, store_stream, walk_stream

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


class Dec:
    """An instruction prepared for execution (static parts resolved once)."""

    __slots__ = ("ins", "pc", "op", "qkey", "waits", "signals", "ta", "tb", "tc", "td", "name",
                 "scalar", "perm", "label", "perm_axis", "vcost", "work")

    def __init__(self, ins: Instr, pc: int, tiles: list[TileAccess], dma_engines: int) -> None:
        self.ins, self.pc, self.op = ins, pc, ins.opcode
        self.name = oc.NAMES[ins.opcode]
        self.label = f"instruction {pc} ({self.name})"  # for fault messages
        op = ins.opcode
        t = lambda i: None if i == oc.NO_TILE else tiles[i]  # noqa: E731
        self.ta, self.tb, self.tc, self.td = t(ins.a), t(ins.b), t(ins.c), t(ins.d)
        self.waits, self.signals = _bits(ins.wait), _bits(ins.signal)
        self.scalar: np.ndarray | None = None
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
        elif op in oc.VECTOR_OPS or (op == oc.NOP and ins.engine == oc.VECTOR):
            self.qkey = Q_VECTOR
        elif op in oc.COLLECTIVE_OPS or (op == oc.NOP and ins.engine == oc.COLLECTIVE):
            self.qkey = Q_COLLECTIVE
        else:
            self.qkey = -1
        need = {oc.DMA_COPY: "ad", oc.MATMUL: "abd", oc.VUNARY: "ad", oc.VBINARY: "abd",
                oc.VSCALAR: "ad", oc.VSELECT: "abcd", oc.VREDUCE: "ad", oc.VTRANSPOSE: "ad",
                oc.VFILL: "d", oc.VCOPY: "ad", oc.VIOTA: "d", oc.VASSERT: "a", oc.VSCAN: "ad",
                oc.VSORT: "acd", oc.DMA_GATHER: "abd", oc.DMA_SCATTER: "abd", oc.ALL_REDUCE: "ad",
                oc.ALL_GATHER: "ad", oc.REDUCE_SCATTER: "ad", oc.ALL_TO_ALL: "ad", oc.SEND: "a",
                oc.RECV: "d"}.get(op, "")
        for s in need:
            if getattr(self, "t" + s) is None:
                raise ProgramError(f"instruction {pc} ({self.name}) has no tile in slot {s}")
        if op == oc.VUNARY and ins.kind not in oc.UNARY_KINDS or \
                op in (oc.VBINARY, oc.VSCALAR) and ins.kind not in oc.BINARY_KINDS:
            raise ProgramError(f"instruction {pc} ({self.name}) has unknown elementwise kind {ins.kind}")
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
_DECODED: "OrderedDict[tuple[int, int], tuple[ChipCode, list[Dec]]]" = OrderedDict()


def _decoded(code: ChipCode, dma_engines: int) -> list[Dec]:
    key = (id(code), dma_engines)
    hit = _DECODED.get(key)
    if hit is not None and hit[0] is code:
        _DECODED.move_to_end(key)
        return hit[1]
    tiles = [TileAccess(t) for t in code.tiles]
    decoded = [Dec(ins, pc, tiles, dma_engines) for pc, ins in enumerate(code.code)]
    _DECODED[key] = (code, decoded)
    while len(_DECODED) > 8:
        _DECODED.popitem(last=False)
    return decoded


class Chip:
    def __init__(self, cid: int, code: ChipCode, mem: ChipMemory | None, dma_engines: int) -> None:
        self.id = cid
        self.code = _decoded(code, dma_engines)
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
        self.queues = [Queue(self, k, n) for k, n in enumerate(names)]
        self.sem_blocked: dict[Queue, None] = {}
        self.coll_seq: dict[tuple[int, ...], int] = {}
        self.scalar_count = 0
        self.executed = 0  # dynamic instructions, scalar and dispatched (the watchdog's count)
        # Per instruction (by pc): engine busy ns and completed executions, for the
        # report's bound from the work and its attribution to source lines.
        self.pc_busy = [0.0] * len(self.code)
        self.pc_count = [0] * len(self.code)
        self.mem_bytes = {k: 0.0 for k in ("hbm_read", "hbm_write", "sram_read", "sram_write",
                                           "acc_read", "acc_write")}
        # The precomputed sequencer stream (nova.sim.stream), or None: interpreted.
        self.stream: Any = None
        # Timing-only runs: the stream's bounds checks were done once (nova.sim.stream.precheck);
        # the bytes they count are added at the end of the run.
        self.prechecked = False
        self.pre_bytes: dict[str, float] | None = None
        self.steps: list | None = None
        self.si = 0  # next step
        self.at_step = False  # the next step's scalar prefix has run
        # Interpreted runs record the stream (None: not recording): the steps so far,
        # the scalars since the last one and whether those took a back-edge.
        self.rec: list | None = None
        self.rec_carry = 0
        self.rec_back = False
        self.rec_done = False  # the recording was cut (MAX_STEPS): nothing more is added

    @property
    def finished(self) -> bool:
        return self.halted and all(not q.pending for q in self.queues)


_RW = (("hbm_read", "hbm_write"), ("sram_read", "sram_write"), ("acc_read", "acc_write"))


class Machine(VectorUnit, DmaUnit, MatrixUnit, CollectiveUnit):
    """All chips of one program, simulated together (vector and DMA instruction semantics in
    :mod:`nova.sim.engines_vector` and :mod:`nova.sim.engines_dma`)."""

    def __init__(self, program: Program, memories: list[ChipMemory] | None,
                 trace: TraceRecorder | None = None, budget: Budget | None = None) -> None:
        self.program = program
        self.budget = budget or Budget()
        self._t_max = self.budget.max_time_ns
        tg = self.target = program.target
        self.functional = memories is not None
        self.chips = [Chip(i, c, memories[i] if memories else None, tg.dma_engines)
                      for i, c in enumerate(program.chips)]
        self.cost = CostModel(tg)
        # One sequencer instruction (timing.sequencer_cycles clock cycles).
        self.cycle = self.cost.sequencer
        self.queue_depth = tg.timing["queue_depth"]
        self.net = Interconnect.from_target(tg)
        self.heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq = itertools.count()
        self.now = 0.0
        bw_cache: dict[str, float] = {}

        def bandwidth(r: str) -> float:
            v = bw_cache.get(r)
            if v is None:
                v = bw_cache[r] = (tg.hbm_gbps if r.endswith(".hbm") else
                                   tg.sram_gbps if r.endswith(".sram") else tg.link_gbps)
            return v

        self.pool = BandwidthPool(bandwidth, self.schedule)
        self._bandwidth = bandwidth
        self.planner = CollectivePlanner(self.net, bandwidth, self.reduce_alone_ns,
                                         tg.timing["collective_algorithm"])
        self.trace = trace
        self.rendezvous: dict[tuple[tuple[int, ...], int], dict[int, tuple[Queue, Op]]] = {}
        self.mailbox: dict[tuple[int, int, int], deque[tuple[float, np.ndarray | None, Op]]] = {}
        self.recv_wait: dict[tuple[int, int, int], tuple[Queue, Op]] = {}
        self.coll_link_bytes: dict[str, float] = {}
        self.coll_link_busy: dict[str, float] = {}
        self.collectives: list[tuple[str, str, float]] = []
        self.events = 0
        self.dispatched = 0
        self.decoupled = False  # a functional run on the compiled loop (nova.sim.decoupled)
        # Runs with collectives record when the matrix, vector, collective and (all)
        # DMA queues were busy, for the report's collective overlap (nova.sim.overlap).
        self.record_busy = any(d.qkey == Q_COLLECTIVE for ch in self.chips for d in ch.code)
        for ch in self.chips:
            ch.busy_intervals = [[], [], [], []] if self.record_busy else None
        if trace is None:  # traced runs interpret (they record semaphore FIFOs)
            for ch, code in zip(self.chips, program.chips):
                ch.stream = cached_stream(code, ch.id, tg.dma_engines, self.budget)
                if ch.stream is None and fast_timing.available():
                    # A run walks the stream first (scalar code only), so even a program's
                    # one run goes on the compiled loop (functional ones decoupled).
                    ch.stream = walk_stream(code, ch.code, ch.id, self.budget)
                    store_stream(code, ch.id, tg.dma_engines, self.budget, ch.stream)
                ch.steps = None if ch.stream is None else ch.stream.steps
                if ch.stream is None:
                    ch.rec = []  # the first run records it
                elif not self.functional:
                    caps = (tg.capacity(oc.HBM), tg.capacity(oc.SRAM), tg.capacity(oc.ACC))
                    ch.pre_bytes = precheck(ch.stream, caps)
                    ch.prechecked = ch.pre_bytes is not None
        self._exec = {
            oc.NOP: self._x_nop, oc.DMA_COPY: self._x_dma, oc.MATMUL: self._x_matmul,
            oc.VUNARY: self._x_vunary, oc.VBINARY: self._x_vbinary, oc.VSCALAR: self._x_vscalar,
            oc.VSELECT: self._x_vselect, oc.VREDUCE: self._x_vreduce,
            oc.VTRANSPOSE: self._x_vtranspose, oc.VFILL: self._x_vfill, oc.VCOPY: self._x_vcopy,
            oc.VIOTA: self._x_viota, oc.VASSERT: self._x_vassert, oc.VSCAN: self._x_vscan,
            oc.VSORT: self._x_vsort, oc.DMA_GATHER: self._x_dma_gather, oc.DMA_SCATTER: self._x_dma_scatter,
            oc.ALL_REDUCE: self._x_collective, oc.ALL_GATHER: self._x_collective,
            oc.REDUCE_SCATTER: self._x_collective, oc.ALL_TO_ALL: self._x_collective,
            oc.BARRIER: self._x_collective, oc.SEND: self._x_send, oc.RECV: self._x_recv,
        }

    # Event queue -----------------------------------------------------------------------
    def schedule(self, t: float, fn: Callable[[Any], None], arg: Any) -> None:
        heapq.heappush(self.heap, (t, next(self._seq), fn, arg))

    def run(self) -> float:
        # Timing-only runs it models go compiled; functional ones take their times
        # from it and run their data effects after (nova.sim.decoupled).
        if not (fast_timing.run(self) or decoupled.run(self)):
            self._loop()
        self._check_end()
        for ch in self.chips:
            if ch.prechecked:
                for k, v in ch.pre_bytes.items():
                    ch.mem_bytes[k] += v
        for ch, code in zip(self.chips, self.program.chips):
            if ch.steps is not None and ch.stream.final is not None:
                # The registers a halted chip leaves (tests read them).
                f = ch.stream.final
                ch.pc, ch.regs, ch.loops = f.pc, list(f.regs), list(f.loops)
            elif ch.rec is not None:  # a complete recording: the next runs replay it
                cut = bool(ch.rec) and ch.rec[-1][1] == sx.CUT
                final = None if cut else snapshot(ch.id, ch.code, ch.debug, ch.pc, ch.regs, ch.loops)
                store_stream(code, ch.id, self.target.dma_engines, self.budget, sx.Stream(ch.rec, final))
                ch.rec = None
        return max(ch.t_end for ch in self.chips)

    def _loop(self) -> None:
        for ch in self.chips:
            self.schedule(0.0, self._resume, ch)
        heap, pop, pool = self.heap, heapq.heappop, self.pool
        n = 0
        t_max = self.budget.max_time_ns
        while heap:
            t, _, fn, arg = pop(heap)
            if t > t_max:
                self._sync_state()
                raise over_time(self, t, self.budget)
            self.now = pool.now = t
            fn(arg)
            n += 1
        self.events = n

    # Sequencer ---------------------------------------------------------------------------
    def _resume(self, ch: Chip) -> None:
        ch.block = None
        if ch.steps is not None:
            self._run_stream(ch)
        else:
            self._run_seq(ch)

    def _run_stream(self, ch: Chip) -> None:
        """``_run_seq`` over the chip's precomputed stream (nova.sim.stream): the same
        time arithmetic, blocking and events, without interpreting scalar code."""
        now = self.now
        t = ch.t if ch.t > now else now
        steps, i, at_step, cyc, queues = ch.steps, ch.si, ch.at_step, self.cycle, ch.queues
        depth, t_max = self.queue_depth, self._t_max
        n = k = 0  # scalar instructions, dispatches
        while True:
            st = steps[i]
            if not at_step:
                m = st[0]
                if m:
                    t0 = t
                    for _ in range(m):
                        t += cyc
                    if st[7] and t > t_max:
                        # A back-edge in the prefix may be past the time budget: the
                        # interpreter runs on from the prefix and raises where it would.
                        ch.t = t0
                        self._to_interpreter(ch, i, False, n, k)
                        self._run_seq(ch)
                        return
                    n += m
                at_step = True
            kind = st[1]
            if kind == sx.DISPATCH:
                d = st[2]
                q = queues[d.qkey]
                if len(q.pending) >= depth:
                    ch.block = q
                    break
                o = Op(d, st[3], st[4], st[5], st[6], t)
                q.pending.append(o)
                if q.running is None and len(q.pending) == 1 and not q.wake:
                    q.wake = True
                    self.schedule(t, self._wake, q)
                t += cyc
                k += 1
            elif kind == sx.WAIT:
                if t > now:
                    ch.block = "time"
                    self.schedule(t, self._resume, ch)
                    break
                sems = ch.sems
                waits = st[2].waits
                if any(sems[s] <= 0 for s in waits):
                    ch.block = "sem"
                    break
                for s in waits:
                    sems[s] -= 1
                n += 1
                t += cyc
            elif kind == sx.SIGNAL:
                if t > now:
                    ch.block = "time"
                    self.schedule(t, self._resume, ch)
                    break
                sems = ch.sems
                d = st[2]
                for s in d.signals:
                    if sems[s] >= U32_MAX:
                        raise ScalarFaultError(self._where(ch, d, f"semaphore s{s} overflows"))
                    sems[s] += 1
                    ch.sem_time[s] = t
                n += 1
                t += cyc
                ch.si, ch.at_step, ch.t = i + 1, False, t
                i, at_step = i + 1, False
                self._sems_changed(ch)
                continue
            elif kind == sx.HALT:
                n += 1
                ch.halted = True
                ch.t_end = max(ch.t_end, t + cyc)
                t += cyc
                i += 1
                at_step = False
                break
            elif kind == sx.RAISE:
                ch.scalar_count += n
                ch.executed += n + k
                raise st[2]()
            else:  # CUT: the interpreter runs on from here
                f = st[2]
                ch.pc, ch.regs, ch.loops = f.pc, list(f.regs), list(f.loops)
                ch.scalar_count += n
                ch.executed += n + k
                ch.steps = None
                ch.t = t
                self._run_seq(ch)
                return
            i += 1
            at_step = False
        ch.si, ch.at_step, ch.t = i, at_step, t
        ch.scalar_count += n
        ch.executed += n + k
        if ch.executed > self.budget.max_instructions:  # straight-line code past the budget
            self._sync_state()
            raise over_instructions(ch, ch.executed, self.budget)

    def _to_interpreter(self, ch: Chip, i: int, after: bool, n: int, k: int) -> None:
        """Hands the chip's sequencer over to ``_run_seq`` at step ``i`` of its stream
        (for the rest of this run): its pc, registers and loop stack from the stream."""
        s = state_at(ch.id, ch.code, ch.debug, self.budget, i, after)
        ch.pc, ch.regs, ch.loops = s.pc, s.regs, s.loops
        ch.scalar_count += n
        ch.executed += n + k
        ch.steps = None

    def _sync_state(self) -> None:
        """Before an error message that reads sequencer state (pc, loops, registers):
        every chip on a stream gets it from the stream."""
        for ch in self.chips:
            if ch.steps is not None:
                s = (ch.stream.final if ch.halted else
                     state_at(ch.id, ch.code, ch.debug, self.budget, ch.si, ch.at_step))
                ch.pc, ch.regs, ch.loops = s.pc, list(s.regs), list(s.loops)

    def _run_seq(self, ch: Chip) -> None:
        now = self.now
        t = ch.t if ch.t > now else now
        pc, code, regs, cyc, queues = ch.pc, ch.code, ch.regs, self.cycle, ch.queues
        n = k = 0  # scalar instructions, dispatches
        rec = None if ch.rec_done else ch.rec  # recording the stream (nova.sim.stream)
        mark, carry, back = 0, ch.rec_carry, ch.rec_back
        left, t_max = self.budget.max_instructions - ch.executed, self.budget.max_time_ns
        try:
            while True:
                d = code[pc]
                op = d.op
                if d.qkey >= 0:
                    q = queues[d.qkey]
                    if len(q.pending) >= self.queue_depth:
                        ch.block = q
                        break
                    ins = d.ins
                    o = Op(d, regs[ins.ra], regs[ins.rb], regs[ins.rc], regs[ins.rdst], t)
                    if rec is not None:
                        rec.append((n - mark + carry, sx.DISPATCH, d, o.ra, o.rb, o.rc, o.rdst, back))
                        mark, carry, back = n, 0, False
                    q.pending.append(o)
                    if q.running is None and len(q.pending) == 1 and not q.wake:
                        q.wake = True
                        self.schedule(t, self._wake, q)
                    t += cyc
                    pc += 1
                    k += 1
                    continue
                ins = d.ins
                n += 1
                if op == oc.SALU:
                    try:
                        r = salu(ins.kind, regs[ins.ra], regs[ins.rb])
                    except SaluError as e:
                        raise e.cls(self._where(ch, d, e.message)) from None
                    regs[ins.rd] = r
                    pc += 1
                elif op == oc.LI:
                    regs[ins.rd] = ins.imm0
                    pc += 1
                elif op == oc.LOOP:
                    fl = ins.flags
                    lb = regs[ins.ra] if fl & oc.F_LB_REG else ins.imm0
                    ub = regs[ins.rb] if fl & oc.F_UB_REG else ins.imm1
                    st = regs[ins.rc] if fl & oc.F_STEP_REG else ins.imm2
                    if st <= 0:
                        raise ScalarFaultError(self._where(ch, d, f"loop step {st} is not positive"))
                    if lb >= ub:
                        pc = ins.target + 1
                    else:
                        if len(ch.loops) >= oc.MAX_LOOP_DEPTH:
                            raise ScalarFaultError(self._where(ch, d, "loop stack overflow (more than 8 nested loops)"))
                        regs[ins.rd] = lb
                        ch.loops.append((pc, ins.rd, ub, st))
                        pc += 1
                elif op == oc.ENDLOOP:
                    if not ch.loops or ch.loops[-1][0] != ins.target:
                        raise ProgramError(self._where(ch, d, "endloop does not match the innermost loop"))
                    lpc, rd, ub, st = ch.loops[-1]
                    v = wrap(regs[rd] + st)
                    regs[rd] = v
                    if v < ub:
                        pc = lpc + 1
                        back = True
                        if n + k > left or t > t_max:  # the watchdog, at each back-edge
                            ch.executed += n + k
                            raise (over_instructions(ch, ch.executed, self.budget) if n + k > left
                                   else over_time(self, t, self.budget, ch))
                    else:
                        ch.loops.pop()
                        pc += 1
                elif op == oc.IF:
                    pc = pc + 1 if regs[ins.ra] != 0 else ins.target + 1
                elif op == oc.ELSE:
                    pc = ins.target + 1
                elif op == oc.ENDIF or op == oc.NOP:
                    pc += 1
                elif op == oc.CHIP_ID:
                    regs[ins.rd] = ch.id
                    pc += 1
                elif op == oc.SEM_WAIT or op == oc.SEM_SIGNAL:
                    if t > now:
                        ch.block = "time"
                        self.schedule(t, self._resume, ch)
                        n -= 1
                        break
                    sems = ch.sems
                    if op == oc.SEM_WAIT:
                        if any(sems[s] <= 0 for s in d.waits):
                            ch.block = "sem"
                            n -= 1
                            break
                        for s in d.waits:
                            sems[s] -= 1
                            if self.trace is not None and ch.sem_fifo[s]:
                                ch.sem_fifo[s].popleft()
                        if rec is not None:
                            rec.append((n - 1 - mark + carry, sx.WAIT, d, 0, 0, 0, 0, back))
                            mark, carry, back = n, 0, False
                        pc += 1
                    else:
                        for s in d.signals:
                            if sems[s] >= U32_MAX:
                                raise ScalarFaultError(self._where(ch, d, f"semaphore s{s} overflows"))
                            sems[s] += 1
                            ch.sem_time[s] = t
                            if self.trace is not None:
                                ch.sem_fifo[s].append(-1)
                        if rec is not None:
                            rec.append((n - 1 - mark + carry, sx.SIGNAL, d, 0, 0, 0, 0, back))
                            mark, carry, back = n, 0, False
                        pc += 1
                        t += cyc
                        ch.pc, ch.t = pc, t
                        self._sems_changed(ch)
                        continue
                elif op == oc.HALT:
                    if rec is not None:
                        rec.append((n - 1 - mark + carry, sx.HALT, d, 0, 0, 0, 0, back))
                        mark, carry, back = n, 0, False
                    ch.halted = True
                    ch.t_end = max(ch.t_end, t + cyc)
                    t += cyc
                    break
                else:
                    raise ProgramError(self._where(ch, d, f"{d.name} cannot run on the sequencer"))
                t += cyc
        except IndexError:
            if pc >= len(code):
                raise ProgramError(f"chip {ch.id}: execution fell off the end of the code "
                                   f"(instruction {pc}; code must end with halt)") from None
            raise
        ch.pc, ch.t = pc, t
        ch.scalar_count += n
        ch.executed += n + k
        if rec is not None:
            ch.rec_carry, ch.rec_back = n - mark + carry, back
            if len(rec) >= sx.MAX_STEPS and not ch.halted:  # long enough: the rest is interpreted
                rec.append((ch.rec_carry, sx.CUT, snapshot(ch.id, code, ch.debug, pc, regs, ch.loops),
                            0, 0, 0, 0, back))
                ch.rec_done = True
        if ch.executed > self.budget.max_instructions:  # straight-line code past the budget
            raise over_instructions(ch, ch.executed, self.budget)

    # Queues ------------------------------------------------------------------------------
    def _wake(self, q: Queue) -> None:
        q.wake = False
        self._try_start(q)

    def _try_start(self, q: Queue) -> None:
        if q.running is not None or not q.pending:
            return
        o = q.pending[0]
        now = self.now
        if o.t > now:
            if not q.wake:
                q.wake = True
                self.schedule(o.t, self._wake, q)
            return
        ch = q.chip
        sems = ch.sems
        waits = o.d.waits
        if waits:
            for s in waits:
                if sems[s] <= 0:
                    ch.sem_blocked[q] = None
                    return
            for s in waits:
                sems[s] -= 1
            if self.trace is not None:
                fifo = ch.sem_fifo
                o.deps = tuple(fifo[s].popleft() if fifo[s] else -1 for s in waits)
        q.running = o
        o.start = now
        dur = self._exec[o.d.op](q, o)
        if dur is not None:
            self.schedule(now + dur, self._complete, q)

    def _complete(self, q: Queue) -> None:
        o = q.pending.popleft()
        q.running = None
        ch = q.chip
        now = self.now
        dur = now - o.start
        q.busy += dur
        q.count += 1
        pc = o.d.pc
        ch.pc_busy[pc] += dur
        ch.pc_count[pc] += 1
        if self.record_busy:
            ch.busy_intervals[min(q.key, Q_DMA0)].append((o.start, now))
        if now > ch.t_end:
            ch.t_end = now
        instance = -1
        if self.trace is not None:
            self.trace.op(ch.id, q.name, o.d.name, o.d.pc, o.start, now - o.start)
            instance = self.trace.instance(ch.id, q.name, o.d.name, pc, o.start, now, o.t,
                                           q.last, o.deps)
            q.last = instance
        if o.d.signals:
            sems = ch.sems
            for s in o.d.signals:
                if sems[s] >= U32_MAX:
                    raise ScalarFaultError(self._where(ch, o.d, f"semaphore s{s} overflows"))
                sems[s] += 1
                ch.sem_time[s] = now
                if instance >= 0:
                    ch.sem_fifo[s].append(instance)
            self._sems_changed(ch)
        if ch.block is q:
            ch.block = "time"
            self.schedule(now, self._resume, ch)
        self._try_start(q)

    def _sems_changed(self, ch: Chip) -> None:
        if ch.sem_blocked:
            blocked = list(ch.sem_blocked)
            ch.sem_blocked.clear()
            for q in blocked:
                self._try_start(q)
        if ch.block == "sem":
            ch.block = "time"
            self.schedule(self.now, self._resume, ch)

    # Helpers -------------------------------------------------------------------------------
    @staticmethod
    def _where(ch: Chip, d: Dec, msg: str) -> str:
        loc = ch.debug.get(d.pc)
        return f"chip {ch.id}: instruction {d.pc} ({d.name}{' at ' + loc if loc else ''}): {msg}"

    def _fault(self, ch: Chip, d: Dec, msg: str) -> EngineFaultError:
        """A run-time fault of instruction ``d``, located by its DEBUG entry."""
        return EngineFaultError(self._where(ch, d, msg), ch.id, d.pc, ch.debug.get(d.pc))

    def _read(self, ch: Chip, t: TileAccess, addr: int, d: Dec) -> np.ndarray:
        ch.mem_bytes[_RW[t.space][0]] += t.nbytes
        return ch.mem.read(t, addr, d.label)

    def _write(self, ch: Chip, t: TileAccess, addr: int, v: np.ndarray, d: Dec) -> None:
        ch.mem_bytes[_RW[t.space][1]] += t.nbytes
        ch.mem.write(t, addr, v, d.label)

    def _check(self, ch: Chip, t: TileAccess, addr: int, d: Dec, write: bool) -> None:
        """Timing-only mode: bounds checks and byte counts without touching data."""
        ch.mem_bytes[_RW[t.space][1 if write else 0]] += t.nbytes
        cap = self.target.capacity(t.space)
        if addr < 0 or addr + t.extent > cap:
            raise MemoryFaultError(f"chip {ch.id}: instruction {d.pc} ({d.name}): access to "
                                   f"{oc.SPACE_NAMES[t.space]} bytes [{addr}, {addr + t.extent}) is "
                                   f"outside its capacity of {cap} bytes")

    # Instruction semantics (return the cost in ns, or None when completion is an event) -----
    def _x_nop(self, q: Queue, o: Op) -> float:
        if q.key == Q_MATRIX:
            self._matrix_nop(q, o)
        return self.cost.nop

    def _x_matmul(self, q: Queue, o: Op) -> float:
        d, ch = o.d, q.chip
        ta, tb, td = d.ta, d.tb, d.td
        m, k = ta.shape
        n = tb.shape[1]
        if self.functional:
            c = self._read(ch, ta, o.ra, d) @ self._read(ch, tb, o.rb, d)
            if td.dtype == oc.F32:
                # The f32 accumulator is updated in place through its view.
                acc = ch.mem.view(td, o.rdst, d.label)
                if d.ins.flags & oc.F_ACCUMULATE:
                    ch.mem_bytes[_RW[td.space][0]] += td.nbytes
                    acc += c
                else:
                    acc[...] = c
                ch.mem_bytes[_RW[td.space][1]] += td.nbytes
            else:
                if d.ins.flags & oc.F_ACCUMULATE:
                    c += self._read(ch, td, o.rdst, d)
                self._write(ch, td, o.rdst, c, d)
        elif not ch.prechecked:
            self._check(ch, ta, o.ra, d, False)
            self._check(ch, tb, o.rb, d, False)
            if d.ins.flags & oc.F_ACCUMULATE:
                ch.mem_bytes[_RW[td.space][0]] += td.nbytes
            self._check(ch, td, o.rdst, d, True)
        return self._matmul_time(q, o, m, k, n, ta.dtype)

    def _peer(self, ch: Chip, d: Dec, peer: int) -> int:
        if not 0 <= peer < len(self.chips):
            raise ScalarFaultError(self._where(ch, d, f"peer chip {peer} is outside 0..{len(self.chips) - 1}"))
        return peer

    # Point-to-point ---------------------------------------------------------------------------
    def _x_send(self, q: Queue, o: Op) -> None:
        d, ch = o.d, q.chip
        peer = self._peer(ch, d, o.rc)
        data = None
        if self.functional:
            ch.mem_bytes[_RW[d.ta.space][0]] += d.ta.nbytes
            data = ch.mem.read_raw(d.ta, o.ra, f"instruction {d.pc} (send)")
        else:
            self._check(ch, d.ta, o.ra, d, False)
        key = (ch.id, peer, d.ins.imm1)
        route = self.net.route(ch.id, peer)

        def delivered() -> None:
            self.mailbox.setdefault(key, deque()).append((self.now, data, o))
            self._complete(q)
            w = self.recv_wait.pop(key, None)
            if w is not None:
                self._recv_now(*w, key)

        self.schedule(self.now + route.latency_ns, lambda _: self.pool.start(self.now, d.ta.nbytes, route.links, delivered), None)
        return None

    def _x_recv(self, q: Queue, o: Op) -> None:
        d, ch = o.d, q.chip
        peer = self._peer(ch, d, o.rc)
        key = (peer, ch.id, d.ins.imm1)
        if self.mailbox.get(key):
            self._recv_now(q, o, key)
        else:
            self.recv_wait[key] = (q, o)
        return None

    def _recv_now(self, q: Queue, o: Op, key: tuple[int, int, int]) -> None:
        _, data, so = self.mailbox[key].popleft()
        d, ch = o.d, q.chip
        sd = so.d
        if sd.ta.shape != d.td.shape or sd.ta.dtype != d.td.dtype:
            raise CollectiveMismatchError(
                f"recv on chip {ch.id} instruction {d.pc} expects {oc.DTYPE_NAMES[d.td.dtype]}{list(d.td.shape)} "
                f"from chip {key[0]} channel {key[2]}, but the matching send (instruction {sd.pc}) sends "
                f"{oc.DTYPE_NAMES[sd.ta.dtype]}{list(sd.ta.shape)}")
        if self.functional:
            ch.mem_bytes[_RW[d.td.space][1]] += d.td.nbytes
            ch.mem.write_raw(d.td, o.rdst, data, f"instruction {d.pc} (recv)")
        else:
            self._check(ch, d.td, o.rdst, d, True)
        self.schedule(self.now + self.cost.recv, self._complete, q)

    # Collectives ------------------------------------------------------------------------------
    def _members(self, ch: Chip, d: Dec) -> tuple[int, ...]:
        for g in ch.groups[d.ins.group]:
            if ch.id in g:
                return g
        raise ProgramError(self._where(ch, d, f"chip {ch.id} is in no group of replica-group entry "
                                              f"{d.ins.group} {[list(g) for g in ch.groups[d.ins.group]]}"))

    @staticmethod
    def _signature(d: Dec) -> tuple[Any, ...]:
        ins = d.ins
        ta, td = d.ta, d.td
        return (ins.opcode, ins.kind if ins.opcode in (oc.ALL_REDUCE, oc.REDUCE_SCATTER) else 0,
                None if ta is None else (ta.dtype, ta.shape), None if td is None else (td.dtype, td.shape),
                ins.imm0 if ins.opcode != oc.ALL_REDUCE else 0, ins.imm1 if ins.opcode == oc.ALL_TO_ALL else 0)

    @staticmethod
    def describe(d: Dec) -> str:
        ins = d.ins
        s = f"instruction {d.pc} ({d.name}"
        if ins.opcode in (oc.ALL_REDUCE, oc.REDUCE_SCATTER):
            s += " " + oc.REDUCE_NAMES[ins.kind] if ins.kind < 4 else f" kind {ins.kind}"
        if d.ta is not None:
            s += f" {oc.DTYPE_NAMES[d.ta.dtype]}{list(d.ta.shape)}"
        if d.td is not None and ins.opcode != oc.ALL_REDUCE:
            s += f" -> {oc.DTYPE_NAMES[d.td.dtype]}{list(d.td.shape)}"
        if ins.opcode in (oc.ALL_GATHER, oc.REDUCE_SCATTER):
            s += f" dim {ins.imm0}"
        if ins.opcode == oc.ALL_TO_ALL:
            s += f" split_dim {ins.imm0} concat_dim {ins.imm1}"
        return s + ")"

    def _x_collective(self, q: Queue, o: Op) -> None:
        d, ch = o.d, q.chip
        members = self._members(ch, d)
        n = ch.coll_seq.get(members, 0)
        ch.coll_seq[members] = n + 1
        key = (members, n)
        rv = self.rendezvous.setdefault(key, {})
        sig = self._signature(d)
        for c, (_, other) in rv.items():
            if self._signature(other.d) != sig:
                raise CollectiveMismatchError(
                    f"collective #{n} of group {list(members)} does not match across chips: chip {c} "
                    f"issued {self.describe(other.d)}, chip {ch.id} issued {self.describe(d)}")
            break
        rv[ch.id] = (q, o)
        if len(rv) < len(members):
            return None
        del self.rendezvous[key]
        self._run_collective(members, [rv[c] for c in members])
        return None

    def _run_collective(self, members: tuple[int, ...], parts: list[tuple[Queue, Op]]) -> None:
        d0 = parts[0][1].d
        op, kind, imm0, imm1 = d0.op, d0.ins.kind, d0.ins.imm0, d0.ins.imm1
        chips = [self.chips[c] for c in members]
        if op != oc.BARRIER:
            if self.functional:
                xs = [self._read(ch, o.d.ta, o.ra, o.d) for ch, (_, o) in zip(chips, parts)]
                if op == oc.ALL_REDUCE:
                    ys = coll.all_reduce(xs, kind)
                elif op == oc.ALL_GATHER:
                    ys = coll.all_gather(xs, imm0)
                elif op == oc.REDUCE_SCATTER:
                    ys = coll.reduce_scatter(xs, kind, imm0)
                else:
                    ys = coll.all_to_all(xs, imm0, imm1)
                for ch, (_, o), y in zip(chips, parts, ys):
                    self._write(ch, o.d.td, o.rdst, y, o.d)
            else:
                for ch, (_, o) in zip(chips, parts):
                    self._check(ch, o.d.ta, o.ra, o.d, False)
                    self._check(ch, o.d.td, o.rdst, o.d, True)
        self._collective_timing(members, parts)

    # End of run ----------------------------------------------------------------------------
    def _check_end(self) -> None:
        if not all(ch.finished for ch in self.chips):
            self._sync_state()
        if all(ch.finished for ch in self.chips):
            left = [(k, v) for k, v in self.mailbox.items() if v]
            if left:
                (src, dst, chn), msgs = left[0]
                raise SimulationError(f"send from chip {src} (instruction {msgs[0][2].d.pc}) to chip {dst} "
                                      f"on channel {chn} was never received")
            return
        lines = []
        for ch in self.chips:
            if ch.finished:
                continue
            if not ch.halted:
                d = ch.code[ch.pc]
                if ch.block == "sem":
                    vals = ", ".join(f"s{s}={ch.sems[s]}" for s in d.waits)
                    lines.append(f"chip {ch.id}: sequencer at instruction {d.pc} (sem_wait) waits for {vals}")
                elif isinstance(ch.block, Queue):
                    lines.append(f"chip {ch.id}: sequencer at instruction {d.pc} ({d.name}) stalls on the "
                                 f"full {ch.block.name} queue")
                else:
                    lines.append(f"chip {ch.id}: sequencer blocked at instruction {d.pc} ({d.name})")
            for q in ch.queues:
                if not q.pending:
                    continue
                o = q.pending[0]
                d = o.d
                if q.running is None:
                    vals = ", ".join(f"s{s}={ch.sems[s]}" for s in d.waits)
                    lines.append(f"chip {ch.id}: {q.name} queue head instruction {d.pc} ({d.name}) waits "
                                 f"for semaphores {vals}")
                elif d.op == oc.RECV:
                    lines.append(f"chip {ch.id}: {q.name} queue head instruction {d.pc} (recv) waits for a "
                                 f"send from chip {o.rc} on channel {d.ins.imm1}")
                else:
                    lines.append(f"chip {ch.id}: {q.name} queue head {self.describe(d)} waits for the "
                                 f"other chips of its group")
        if self.rendezvous:
            msgs = []
            for (members, n), rv in self.rendezvous.items():
                arrived = ", ".join(f"chip {c} issued {self.describe(o.d)}" for c, (_, o) in rv.items())
                missing = [c for c in members if c not in rv]
                what = []
                for c in missing:
                    other = self.chips[c]
                    head = other.queues[Q_COLLECTIVE].pending
                    if head and head[0].d.op in oc.COLLECTIVE_OPS and head[0] is other.queues[Q_COLLECTIVE].running:
                        what.append(f"chip {c} is at {self.describe(head[0].d)}")
                    elif other.finished:
                        what.append(f"chip {c} finished without issuing it")
                    else:
                        what.append(f"chip {c} has not issued it")
                msgs.append(f"collective #{n} of group {list(members)}: {arrived}; " + "; ".join(what))
            raise CollectiveMismatchError("collectives do not match across chips (deadlock):\n  "
                                          + "\n  ".join(msgs + lines))
        raise DeadlockError("deadlock: every unfinished engine is blocked forever:\n  " + "\n  ".join(lines))
