"""The critical path through the engines of a traced run.

Walking back from the instruction that finished last: an instruction starts
when its queue's previous instruction has finished, when the instructions
whose semaphore signals it waited for have finished, and once the sequencer
has dispatched it; a recv, once its peer's send has delivered (the path then
crosses to the sending chip). The latest-finishing of its predecessors is the one that
held it up; where none finished right when it started, the gap is time the
path spent waiting for the sequencer's dispatch or for other chips (a
collective's peers), shown as ``waiting``. The segments and gaps add up to the
simulated time of the last chip to finish.
"""

from __future__ import annotations

from dataclasses import dataclass

from .report_profile import UNKNOWN, module_of, source_line
from .trace import TraceRecorder

WAITING = "waiting (dispatch, peers)"


@dataclass(frozen=True)
class PathSegment:
    chip: int
    engine: str  # queue name, or WAITING
    name: str
    pc: int
    start_ns: float
    end_ns: float
    location: str

    @property
    def duration_ns(self) -> float:
        return self.end_ns - self.start_ns


def critical_path(trace: TraceRecorder) -> list[PathSegment]:
    """The segments of the critical path, in time order."""
    inst = trace.instances
    if not inst:
        return []
    current = max(range(len(inst)), key=lambda i: inst[i][5])
    path: list[PathSegment] = []
    while current >= 0:
        chip, track, name, pc, start, end, dispatched, previous, deps = inst[current]
        location = trace.locations.get(chip, {}).get(pc, "")
        preds = [p for p in (previous, *deps) if p >= 0]
        best = max(preds, key=lambda p: inst[p][5]) if preds else -1
        # A recv waits on its peer's send while it runs: from the send's
        # delivery on, the path is the recv's; before, the sender chip's.
        if best >= 0 and inst[best][5] > start:
            start = inst[best][5]
        path.append(PathSegment(chip, track, name, pc, start, end, location))
        if best < 0:
            if start > 0:
                path.append(PathSegment(chip, WAITING, "", -1, 0.0, start, ""))
            break
        best_end = inst[best][5]
        if best_end < start - 1e-9:
            path.append(PathSegment(chip, WAITING, "", -1, best_end, start, ""))
        current = best
    path.reverse()
    return path


def summarize(path: list[PathSegment], by: str = "engine") -> list[tuple[str, float]]:
    """Time on the path per engine (``by="engine"``), module or model line,
    largest first."""
    totals: dict[str, float] = {}
    for seg in path:
        if by == "engine":
            key = seg.engine if seg.engine == WAITING else seg.engine.rstrip("0123456789")
        elif by == "module":
            key = WAITING if seg.engine == WAITING else module_of(seg.location)
        elif by == "line":
            key = WAITING if seg.engine == WAITING else source_line(seg.location)
        else:
            raise ValueError(f"critical path totals are by 'engine', 'module' or 'line', got {by!r}")
        totals[key] = totals.get(key, 0.0) + seg.duration_ns
    return sorted(totals.items(), key=lambda kv: -kv[1])


def format_critical_path(path: list[PathSegment], by: str = "engine", top: int = 10) -> str:
    total = sum(seg.duration_ns for seg in path)
    rows = summarize(path, by)[:top]
    width = max([len(by)] + [len(k) for k, _ in rows]) if rows else len(by)
    lines = [f"critical path {total / 1e3:.3f} us, {sum(s.engine != WAITING for s in path)} "
             f"instructions",
             f"{by:<{width}}  {'us':>11}  {'% path':>6}"]
    for key, ns in rows:
        lines.append(f"{key or UNKNOWN:<{width}}  {ns / 1e3:11.3f}  {100 * ns / total if total else 0:5.1f}%")
    return "\n".join(lines)
