"""How far a traced run's engines overlapped: per chip, the time each engine
kind (matrix, vector, dma — every DMA queue counted as one —, collective) was
busy, the part of it during which no other kind was (*alone*: time no overlap
hid), and how long 0, 1, 2, ... kinds were busy at once.

The largest engine's busy time is what the same instructions would take if
every other engine's work hid behind it; the gap from the simulated time down
to it is what overlap across ops can still win, and the time engines run
alone says where it is lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from .overlap import union
from .trace import TraceRecorder

#: Engine kinds, in the order the table prints them.
KINDS = ("matrix", "vector", "activation", "dma", "collective")


def kind_of(track: str) -> str:
    """The engine kind of a trace track (``dma3`` -> ``dma``)."""
    return track.rstrip("0123456789")


@dataclass(frozen=True)
class Concurrency:
    """One chip of a traced run (times in ns)."""

    chip: int
    time_ns: float
    #: kind -> time at least one queue of that kind was busy.
    busy_ns: dict[str, float]
    #: kind -> time that kind was busy while no other kind was.
    alone_ns: dict[str, float]
    #: k -> time exactly k kinds were busy at once (k = 0 is every engine idle).
    at_once_ns: dict[int, float]

    @property
    def overlap_bound_ns(self) -> float:
        """The largest engine's busy time: the run's time had every other
        engine's work hidden behind it."""
        return max(self.busy_ns.values(), default=0.0)


def concurrency(trace: TraceRecorder, time_ns: float) -> list[Concurrency]:
    """Per chip, the engines' busy, alone and at-once times of a traced run
    that took ``time_ns``."""
    intervals: dict[int, dict[str, list[tuple[float, float]]]] = {}
    for chip, track, _name, _pc, start, end, *_ in trace.instances:
        kind = kind_of(track)
        if kind in KINDS and end > start:
            intervals.setdefault(chip, {}).setdefault(kind, []).append((start, end))
    result = []
    for chip in sorted(intervals):
        merged = {k: union(v) for k, v in intervals[chip].items()}
        # Sweep over the kinds' interval edges: +1 where one starts, -1 where it ends.
        edges: list[tuple[float, int, str]] = []
        for kind, spans in merged.items():
            for a, b in spans:
                edges += [(a, 1, kind), (b, -1, kind)]
        edges.sort(key=lambda e: (e[0], e[1]))
        alone = {k: 0.0 for k in merged}
        at_once: dict[int, float] = {}
        active: set[str] = set()
        last = 0.0
        for t, step, kind in edges:
            if t > last:
                at_once[len(active)] = at_once.get(len(active), 0.0) + (t - last)
                if len(active) == 1:
                    (only,) = active
                    alone[only] += t - last
                last = t
            if step > 0:
                active.add(kind)
            else:
                active.discard(kind)
        if time_ns > last:
            at_once[0] = at_once.get(0, 0.0) + (time_ns - last)
        busy = {k: sum(b - a for a, b in v) for k, v in merged.items()}
        result.append(Concurrency(chip, time_ns, busy, alone, dict(sorted(at_once.items()))))
    return result


def format_concurrency(rows: list[Concurrency]) -> str:
    """A table per chip: each engine's busy and alone time, and the time k
    engines were busy at once."""
    lines = []
    for c in rows:
        total = c.time_ns or 1.0
        lines.append(f"chip {c.chip}: {c.time_ns / 1e6:.3f} ms; with full overlap "
                     f"{c.overlap_bound_ns / 1e6:.3f} ms (the busiest engine), "
                     f"{100 * (c.time_ns - c.overlap_bound_ns) / total:.1f} % of the time above it")
        lines.append(f"  {'engine':10s} {'busy ms':>9s} {'% time':>7s} {'alone ms':>9s} {'% time':>7s}")
        for kind in KINDS:
            if kind in c.busy_ns:
                b, a = c.busy_ns[kind], c.alone_ns[kind]
                lines.append(f"  {kind:10s} {b / 1e6:9.3f} {100 * b / total:6.1f}% "
                             f"{a / 1e6:9.3f} {100 * a / total:6.1f}%")
        lines.append("  engines busy at once: " + ", ".join(
            f"{k}: {v / 1e6:.3f} ms ({100 * v / total:.1f} %)" for k, v in c.at_once_ns.items()))
    return "\n".join(lines)
