"""How much of each chip's collective time is hidden behind its other work.

A run with collectives records, per chip, when its collective queue was busy and
when its matrix, vector and DMA engines were (``Chip.busy_intervals``). A
collective's time is *hidden* while any of them is busy at the same moment —
the chip is doing the program's other work, as a GPU's backward kernels
(compute- or memory-bound) run beside NCCL — and *exposed* otherwise: data
parallelism's gradient all-reduces are hidden when each bucket is issued as
soon as its gradients exist, exposed when they all wait for the end of the
backward pass. ``hidden_compute_ns`` counts only the matrix and vector engines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

Interval = tuple[float, float]


@dataclass(frozen=True)
class CollectiveOverlap:
    """One chip: collective-queue busy ns, the part of it during which another
    engine (matrix, vector or DMA) was busy, and the part during which the
    matrix or vector engine was."""

    chip: int
    collective_ns: float
    hidden_ns: float
    hidden_compute_ns: float = 0.0

    @property
    def hidden_fraction(self) -> float:
        return self.hidden_ns / self.collective_ns if self.collective_ns > 0 else 0.0

    @property
    def exposed_ns(self) -> float:
        return self.collective_ns - self.hidden_ns


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Disjoint, sorted intervals covering the same time as ``intervals``."""
    merged: list[list[float]] = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if merged and a <= merged[-1][1]:
            if b > merged[-1][1]:
                merged[-1][1] = b
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def covered(intervals: Sequence[Interval], cover: Sequence[Interval]) -> float:
    """Time of ``intervals`` (disjoint, sorted) that ``cover`` (disjoint, sorted) also spans."""
    total = 0.0
    j = 0
    for a, b in intervals:
        while j < len(cover) and cover[j][1] <= a:
            j += 1
        k = j
        while k < len(cover) and cover[k][0] < b:
            lo, hi = max(a, cover[k][0]), min(b, cover[k][1])
            if hi > lo:
                total += hi - lo
            k += 1
    return total


def chip_overlap(chip: int, collective: Iterable[Interval], compute: Iterable[Interval],
                 dma: Iterable[Interval] = ()) -> CollectiveOverlap:
    c = union(collective)
    compute = list(compute)
    return CollectiveOverlap(chip, sum(b - a for a, b in c), covered(c, union(compute + list(dma))),
                             covered(c, union(compute)))
