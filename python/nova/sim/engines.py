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
queue and halt, which keeps per-instruction overhead to a few Python operations. Its
scalar code is interpreted once per program and chip, without time, into the dynamic
stream (:mod:`nova.sim.stream`: dispatches with their register operands, semaphore
operations, scalar counts between them), which every run replays.

The files: this one holds the event loop (:class:`Machine`: the global event queue, the
engine queues and semaphores); :mod:`nova.sim.machine` the types it runs on (``Dec``,
``Op``, ``Queue``, ``Chip``); :mod:`nova.sim.sequencer` the sequencer, running the
stream :mod:`nova.sim.stream` walks; :mod:`nova.sim.deadlock` the end-of-run check and
deadlock report; ``engines_vector``, ``engines_dma``, ``engines_matrix`` and
``engines_collective`` each engine's instructions.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Any, Callable

import numpy as np

from nova.binary import opcodes as oc
from . import decoupled, fast_timing
from .collective_flows import CollectiveFlows, planner_for
from .engines_collective import CollectiveUnit
from .engines_dma import DmaUnit
from .engines_matrix import MatrixUnit
from .engines_vector import VectorUnit
from .deadlock import check_end
from .errors import EngineFaultError, MemoryFaultError, ScalarFaultError
from .interconnect import Interconnect
from .layers import chip_layers
from .machine import _RW, Q_COLLECTIVE, Q_DMA0, Q_MATRIX, Q_VECTOR, U32_MAX, Chip, Dec, Op, Queue
from .memory import ChipMemory, TileAccess
from .precheck import precheck
from .program import Program
from .sequencer import Sequencer
from .stream import walk_stream
from .stream_cache import cached_stream, store_stream
from .timing import BandwidthPool, CostModel, resource_bandwidth
from .trace import TraceRecorder
from .watchdog import Budget, over_time
class Machine(Sequencer, VectorUnit, DmaUnit, MatrixUnit, CollectiveUnit):
    """All chips of one program, simulated together: the event loop, the engine queues and
    the end-of-run checks. The sequencer is :mod:`nova.sim.sequencer`; instruction semantics
    are :mod:`nova.sim.engines_vector`, :mod:`nova.sim.engines_dma`,
    :mod:`nova.sim.engines_matrix` and :mod:`nova.sim.engines_collective`."""

    def __init__(self, program: Program, memories: list[ChipMemory] | None,
                 trace: TraceRecorder | None = None, budget: Budget | None = None) -> None:
        self.program = program
        self.budget = budget or Budget()
        self._t_max = self.budget.max_time_ns
        tg = self.target = program.target
        self.functional = memories is not None
        queues = (tg.dma_engines, tg.has_activation)
        self.chips = [Chip(i, c, memories[i] if memories else None, queues)
                      for i, c in enumerate(program.chips)]
        self.cost = CostModel(tg)
        # One sequencer instruction (timing.sequencer_cycles clock cycles).
        self.cycle = self.cost.sequencer
        self.queue_depth = tg.timing["queue_depth"]
        self.net = Interconnect.from_target(tg)
        self.heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq = itertools.count()
        self.now = 0.0
        bandwidth = resource_bandwidth(tg, self.net.link_bandwidth)
        self.pool = BandwidthPool(bandwidth, self.schedule)
        self._bandwidth = bandwidth
        self.planner = planner_for(tg, self.net, bandwidth, self.cost)
        self.trace = trace
        self.flows = CollectiveFlows(tg, self.net, self.pool, self.schedule, self.cost, self.cycle, trace)
        self.rendezvous: dict[tuple[tuple[int, ...], int], dict[int, tuple[Queue, Op]]] = {}
        self.mailbox: dict[tuple[int, int, int], deque[tuple[float, np.ndarray | None, Op, int]]] = {}
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
        for ch, code in zip(self.chips, program.chips):
            ch.busy_intervals = [[], [], [], []] if self.record_busy else None
            ch.layers = chip_layers(code, ch.code, ch.id, self.budget)
            if ch.layers is not None:
                ch.layer_exec = ch.layers.executions
        for ch, code in zip(self.chips, program.chips):
            # The sequencer's stream, walked (scalar code only) before the run, so even
            # a program's one run can go on the compiled loop (functional ones decoupled).
            ch.stream = cached_stream(code, ch.id, queues, self.budget)
            if ch.stream is None:
                ch.stream = walk_stream(code, ch.code, ch.id, self.budget)
                store_stream(code, ch.id, queues, self.budget, ch.stream)
            ch.steps = ch.stream.steps
            if not self.functional and trace is None:  # traced runs check as they go
                caps = (tg.capacity(oc.HBM), tg.capacity(oc.SRAM), tg.capacity(oc.ACC))
                ch.pre_bytes = precheck(ch.stream, caps)
                ch.prechecked = ch.pre_bytes is not None
        self._exec = {
            oc.NOP: self._x_nop, oc.DMA_COPY: self._x_dma, oc.MATMUL: self._x_matmul,
            oc.VUNARY: self._x_vunary, oc.VBINARY: self._x_vbinary, oc.VSCALAR: self._x_vscalar,
            oc.VSELECT: self._x_vselect, oc.VREDUCE: self._x_vreduce,
            oc.VTRANSPOSE: self._x_vtranspose, oc.VFILL: self._x_vfill, oc.VCOPY: self._x_vcopy,
            oc.VIOTA: self._x_viota, oc.VASSERT: self._x_vassert, oc.VSCAN: self._x_vscan,
            oc.VSORT: self._x_vsort, oc.VFUSED: self._x_vfused,
            oc.DMA_GATHER: self._x_dma_gather, oc.DMA_SCATTER: self._x_dma_scatter,
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
        check_end(self)
        for ch in self.chips:
            if ch.prechecked:
                for k, v in ch.pre_bytes.items():
                    ch.mem_bytes[k] += v
        for ch in self.chips:
            f = ch.stream.final
            if f is not None:  # the registers a halted chip leaves (tests read them)
                ch.pc, ch.regs, ch.loops = f.pc, list(f.regs), list(f.loops)
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
        if ch.layer_exec is not None:  # its j-th completion is its j-th dispatch
            layer = ch.layer_exec.get(pc)
            if layer is not None:
                key = (pc, layer[ch.pc_count[pc] - 1])
                ch.layer_busy[key] = ch.layer_busy.get(key, 0.0) + dur
        if self.record_busy:
            # the activation queue (after the dma queues) is compute, as vector
            ch.busy_intervals[q.key if q.key < Q_DMA0 else
                              Q_VECTOR if q.key == ch.act_key else Q_DMA0].append((o.start, now))
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
