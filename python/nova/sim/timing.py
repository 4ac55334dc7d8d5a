"""Cost formulas of docs/isa.md (in ns) and the fluid model of shared bandwidth.

:class:`BandwidthPool` runs transfers ("flows") over named resources (a chip's HBM or
SRAM port, an interconnect link). While several flows share a resource each gets an
equal share of its bandwidth; a flow moves at the smallest share along its path. Rates
are recomputed whenever a flow starts or ends, so finish times are exact for piecewise
constant sharing.
"""

from __future__ import annotations

import math
from typing import Callable

from . import opcodes as oc
from .target import Target


class CostModel:
    """Fixed-latency costs of the compute engines, from the target."""

    def __init__(self, target: Target) -> None:
        self.cycle = target.cycle_ns
        self.cols = target.matrix_cols
        self.lanes = target.vector_lanes
        self.dma_setup = target.dma_setup_ns

    def matmul(self, m: int, k: int, n: int, dtype: int) -> float:
        r = 4 if dtype == oc.F32 else 1
        return (k + n + m * math.ceil(n / self.cols) * r) * self.cycle

    @staticmethod
    def vector_factor(opcode: int, kind: int, axis_size: int = 1) -> int:
        """Cycles per ``vector_lanes`` elements (docs/isa.md 2.4, 2.6): ``c`` of the
        elementwise, transpose and scan costs; ``s (s + 1) / 2`` bitonic stages of
        ``vsort`` (``s = max(1, ceil(log2 n))``, ``n = axis_size``)."""
        if opcode == oc.VSORT:
            s = max(1, (axis_size - 1).bit_length())
            return s * (s + 1) // 2
        if opcode == oc.VTRANSPOSE or opcode == oc.VSCAN:
            return 2
        if opcode in (oc.VUNARY, oc.VBINARY, oc.VSCALAR) and kind in oc.TRANSCENDENTAL:
            return 4
        return 1

    def vector(self, opcode: int, kind: int, elements: int) -> float:
        return (16 + -(-elements // self.lanes) * self.vector_factor(opcode, kind)) * self.cycle

    def sort(self, elements: int, n: int) -> float:
        """``vsort`` of ``elements`` with ``n`` along the axis: a bitonic network."""
        return (16 + -(-elements // self.lanes) * self.vector_factor(oc.VSORT, 0, n)) * self.cycle


class Flow:
    __slots__ = ("remaining", "resources", "rate", "version", "done", "bytes", "t0")

    def __init__(self, nbytes: float, resources: tuple[str, ...], done: Callable[[], None]) -> None:
        self.remaining = float(nbytes)
        self.bytes = float(nbytes)
        self.resources = resources
        self.rate = 0.0
        self.version = 0
        self.done = done
        self.t0 = 0.0


class BandwidthPool:
    """Shared-bandwidth transfers, driven by the simulator's event queue.

    Only flows that share a resource with a starting or ending flow are re-rated.
    ``busy[r]`` accumulates the time resource ``r`` carried at least one flow.
    """

    def __init__(self, bandwidth: Callable[[str], float],
                 schedule: Callable[[float, Callable[[object], None], object], None]) -> None:
        self._bw = bandwidth
        self._schedule = schedule
        self._on: dict[str, set[Flow]] = {}
        self._since: dict[str, float] = {}
        self.now = 0.0
        self.busy: dict[str, float] = {}
        self.bytes: dict[str, float] = {}

    def _rerate(self, flows: set[Flow], now: float) -> None:
        on, bw = self._on, self._bw
        for f in flows:
            if f.version < 0:
                continue
            f.remaining -= f.rate * (now - f.t0)
            f.t0 = now
            rate = min(bw(r) / len(on[r]) for r in f.resources) if f.resources else math.inf
            f.rate = rate
            f.version += 1
            eta = now + (max(f.remaining, 0.0) / rate if rate != math.inf else 0.0)
            self._schedule(eta, self._finish, (f, f.version))

    def start(self, now: float, nbytes: float, resources: tuple[str, ...], done: Callable[[], None]) -> None:
        f = Flow(nbytes, resources, done)
        f.t0 = now
        affected = {f}
        for r in resources:
            s = self._on.get(r)
            if s is None:
                s = self._on[r] = set()
            if not s:
                self._since[r] = now
            affected |= s
            s.add(f)
            self.bytes[r] = self.bytes.get(r, 0.0) + nbytes
        self._rerate(affected, now)

    def _finish(self, arg: object) -> None:
        f, version = arg  # type: ignore[misc]
        if version != f.version:
            return
        now = self.now
        f.version = -1
        affected: set[Flow] = set()
        for r in f.resources:
            s = self._on[r]
            s.discard(f)
            if not s:
                self.busy[r] = self.busy.get(r, 0.0) + now - self._since[r]
            affected |= s
        self._rerate(affected, now)
        f.done()
