"""Cost formulas of docs/isa.md (in ns, every constant from the target's ``timing``) and the fluid model of shared bandwidth.

:class:`BandwidthPool` runs transfers ("flows") over named resources (a chip's HBM or
SRAM port, an interconnect link). While several flows share a resource each gets an
equal share of its bandwidth; a flow moves at the smallest share along its path. Rates
are recomputed whenever a flow starts or ends, so finish times are exact for piecewise
constant sharing.
"""

from __future__ import annotations

import math
from typing import Callable

from nova.binary import opcodes as oc
from .target import Target


class CostModel:
    """Costs of the compute engines, from the target and its ``timing`` constants."""

    def __init__(self, target: Target) -> None:
        tm = target.timing
        self.cycle = target.cycle_ns
        self.rows, self.cols = target.matrix_rows, target.matrix_cols
        self.lanes = target.vector_lanes
        self.dma_setup = target.dma_setup_ns
        self.sequencer = tm["sequencer_cycles"] * self.cycle
        self.nop = tm["nop_cycles"] * self.cycle
        self.recv = tm["recv_cycles"] * self.cycle
        self.dma_run_setup = tm["dma_run_setup_cycles"] * self.cycle
        self.burst = (tm["hbm_burst_bytes"], tm["sram_burst_bytes"], tm["sram_burst_bytes"])
        self.row_cycles = tm["matmul_row_cycles"]
        self.f32_row_cycles = tm["matmul_f32_row_cycles"]
        self.overlap = tm["matmul_weight_overlap"]
        # A weight-stationary array loads its stationary operand from the top edge
        # through all R rows and drains partial sums through all R rows and C columns,
        # whatever the tile's K and N: a partial tile pays the full array's load,
        # fill and drain (as SCALE-Sim charges it).
        self.weight_load = self.rows * tm["matmul_weight_row_cycles"] * self.cycle
        self.fill_drain = max(0.0, self.rows + self.cols + tm["matmul_fill_drain_cycles"]) * self.cycle
        self.v_over = tm["vector_overhead_cycles"]
        self.v_plain = tm["vector_elementwise_factor"]
        self.v_trans = tm["vector_transcendental_factor"]
        self.v_transpose = tm["vector_transpose_factor"]
        self.v_scan = tm["vector_scan_factor"]
        self.v_sort = tm["vector_sort_stage_factor"]
        act = target.activation
        if act is not None:  # the activation engine (docs/isa.md 2.7)
            self.a_lanes = act["lanes"]
            self.a_over = act["overhead_cycles"]
            self.a_plain = act["elementwise_factor"]
            self.a_trans = act["transcendental_factor"]

    def matmul_stream(self, m: int, n: int, dtype: int) -> float:
        """ns the M rows of the lhs take to stream through the array."""
        r = self.f32_row_cycles if dtype == oc.F32 else self.row_cycles
        return m * math.ceil(n / self.cols) * r * self.cycle

    def matmul(self, m: int, k: int, n: int, dtype: int) -> float:
        """One matmul alone on an idle array: load + stream + fill/drain (ns)."""
        return self.weight_load + self.matmul_stream(m, n, dtype) + self.fill_drain

    def vector_factor(self, opcode: int, kind: int, axis_size: int = 1, kind1: int = 0) -> float:
        """Cycles per ``vector_lanes`` elements (docs/isa.md 2.4, 2.6): ``c`` of the
        elementwise, transpose and scan costs; ``vector_sort_stage_factor`` times the
        ``s (s + 1) / 2`` bitonic stages of ``vsort`` (``s = max(1, ceil(log2 n))``,
        ``n = axis_size``); for ``vfused`` (second kind ``kind1``) the ``c`` of its
        slower stage (a two-stage pipeline runs at that stage's rate)."""
        if opcode == oc.VFUSED:
            return max(self.vector_factor(oc.VBINARY, kind), self.vector_factor(oc.VBINARY, kind1))
        if opcode == oc.VSORT:
            s = max(1, (axis_size - 1).bit_length())
            return self.v_sort * (s * (s + 1) // 2)
        if opcode == oc.VTRANSPOSE:
            return self.v_transpose
        if opcode == oc.VSCAN:
            return self.v_scan
        if opcode in (oc.VUNARY, oc.VBINARY, oc.VSCALAR) and kind in oc.TRANSCENDENTAL:
            return self.v_trans
        return self.v_plain

    def vector(self, opcode: int, kind: int, elements: int, kind1: int = 0) -> float:
        """``kind1``: vfused's second kind."""
        return (self.v_over + -(-elements // self.lanes) * self.vector_factor(opcode, kind, 1, kind1)) * self.cycle

    def activation(self, opcode: int, kind: int, elements: int) -> float:
        """An elementwise instruction on the activation engine (vunary, vscalar, vcopy):
        ``overhead_cycles + ceil(E / lanes) * factor`` cycles, the transcendental
        factor for the kinds the vector engine charges as transcendental."""
        trans = opcode in (oc.VUNARY, oc.VSCALAR) and kind in oc.TRANSCENDENTAL
        return (self.a_over + -(-elements // self.a_lanes) * (self.a_trans if trans else self.a_plain)) * self.cycle

    def sort(self, elements: int, n: int) -> float:
        """``vsort`` of ``elements`` with ``n`` along the axis: a bitonic network."""
        return (self.v_over + -(-elements // self.lanes) * self.vector_factor(oc.VSORT, 0, n)) * self.cycle

    def reduce_elements(self, elements: float) -> float:
        """Vector-engine ns of ``elements`` two-input reductions (a collective's arithmetic)."""
        if elements <= 0:
            return 0.0
        return (self.v_over + math.ceil(elements / self.lanes) * self.v_plain) * self.cycle

    def burst_factor(self, space: int, shape: tuple[int, ...], strides: tuple[int, ...], elt: int) -> float:
        """Bytes a memory moves per payload byte of a tile access: every contiguous run
        is rounded up to whole bursts of the space's access granule."""
        run = 1
        for size, stride in zip(reversed(shape), reversed(strides)):
            if stride != run and size != 1:
                break
            run *= size
        run_bytes = run * elt
        b = self.burst[space]
        return math.ceil(run_bytes / b) * b / run_bytes if run_bytes else 1.0


def resource_bandwidth(target: Target, link_bandwidth: Callable[[str], float]) -> Callable[[str], float]:
    """GB/s of a named resource of the pool: a chip's ``cI.hbm`` / ``cI.sram`` port,
    else an interconnect link (``link_bandwidth``, :meth:`Interconnect.link_bandwidth`);
    memoised per name. The machine and :mod:`nova.sim.collective_time` share it."""
    cache: dict[str, float] = {}

    def bandwidth(r: str) -> float:
        v = cache.get(r)
        if v is None:
            v = cache[r] = (target.hbm_gbps if r.endswith(".hbm") else
                            target.sram_gbps if r.endswith(".sram") else link_bandwidth(r))
        return v

    return bandwidth


class Flow:
    __slots__ = ("remaining", "resources", "weights", "rate", "version", "done", "bytes", "t0")

    def __init__(self, nbytes: float, resources: tuple[str, ...], done: Callable[[], None],
                 weights: tuple[float, ...] | None = None) -> None:
        self.remaining = float(nbytes)
        self.bytes = float(nbytes)
        self.resources = resources
        self.weights = weights  # bytes resource i moves per payload byte (None: all 1)
        self.rate = 0.0
        self.version = 0
        self.done = done
        self.t0 = 0.0


class BandwidthPool:
    """Shared-bandwidth transfers, driven by the simulator's event queue.

    Only flows that share a resource with a starting or ending flow are re-rated,
    in a fixed order (the new or ending flow's resources in path order, each
    resource's flows in the order they started: insertion-ordered dicts, not sets,
    so equal finish times break the same way on every run and in the compiled
    loop, nova.sim.fast_timing). ``busy[r]`` accumulates the time resource ``r``
    carried at least one flow.
    """

    def __init__(self, bandwidth: Callable[[str], float],
                 schedule: Callable[[float, Callable[[object], None], object], None]) -> None:
        self._bw = bandwidth
        self._schedule = schedule
        self._on: dict[str, dict[Flow, None]] = {}
        self._since: dict[str, float] = {}
        self.now = 0.0
        self.busy: dict[str, float] = {}
        self.bytes: dict[str, float] = {}

    def _rerate(self, flows: dict[Flow, None], now: float) -> None:
        on, bw, schedule, finish = self._on, self._bw, self._schedule, self._finish
        for f in flows:
            if f.version < 0:
                continue
            f.remaining -= f.rate * (now - f.t0)
            f.t0 = now
            res = f.resources
            if not res:
                rate = math.inf
            elif f.weights is None:
                rate = math.inf
                for r in res:  # min() over the resources' shares, without a generator
                    x = bw(r) / len(on[r])
                    if x < rate:
                        rate = x
            else:
                rate = math.inf
                for r, w in zip(res, f.weights):
                    x = bw(r) / (len(on[r]) * w)
                    if x < rate:
                        rate = x
            f.rate = rate
            f.version += 1
            eta = now + (max(f.remaining, 0.0) / rate if rate != math.inf else 0.0)
            schedule(eta, finish, (f, f.version))

    def start(self, now: float, nbytes: float, resources: tuple[str, ...], done: Callable[[], None],
              weights: tuple[float, ...] | None = None) -> None:
        """Starts a flow of ``nbytes`` payload over ``resources``; resource ``i`` moves
        ``weights[i]`` bytes per payload byte (a strided access's burst overhead)."""
        f = Flow(nbytes, resources, done, weights)
        f.t0 = now
        affected = {f: None}
        for i, r in enumerate(resources):
            s = self._on.get(r)
            if s is None:
                s = self._on[r] = {}
            if not s:
                self._since[r] = now
            affected.update(s)
            s[f] = None
            self.bytes[r] = self.bytes.get(r, 0.0) + nbytes * (1.0 if weights is None else weights[i])
        self._rerate(affected, now)

    def _finish(self, arg: object) -> None:
        f, version = arg  # type: ignore[misc]
        if version != f.version:
            return
        now = self.now
        f.version = -1
        affected: dict[Flow, None] = {}
        for r in f.resources:
            s = self._on[r]
            s.pop(f, None)
            if not s:
                self.busy[r] = self.busy.get(r, 0.0) + now - self._since[r]
            affected.update(s)
        self._rerate(affected, now)
        f.done()
