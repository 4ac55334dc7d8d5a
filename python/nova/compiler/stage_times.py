"""Wall time of each compile stage, for a stage breakdown like
``torch._dynamo.utils.compile_times()``: the frontend's trace and import and
every ``nova-opt`` / ``nova-translate`` run record themselves while a
:func:`collecting` block is open (nothing is recorded otherwise).

    with collecting() as times:
        ...compile...
    format_times(times)   # one line per stage, and the total
"""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from typing import Iterator

__all__ = ["collecting", "format_times", "timed"]

_ACTIVE: ContextVar[list[tuple[str, float]] | None] = ContextVar("nova_stage_times", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[list[tuple[str, float]]]:
    """Collects ``(stage, seconds)`` of the stages run inside the block, in
    order (a stage run twice appears twice). Nested blocks each see their own."""
    times: list[tuple[str, float]] = []
    token = _ACTIVE.set(times)
    try:
        yield times
    finally:
        _ACTIVE.reset(token)


@contextlib.contextmanager
def timed(stage: str) -> Iterator[None]:
    """Records the block's wall time as ``stage`` if a collection is open."""
    times = _ACTIVE.get()
    if times is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        times.append((stage, time.perf_counter() - start))


def format_times(times: list[tuple[str, float]]) -> str:
    """Stages summed by name, in first-seen order, with their share and the total."""
    totals: dict[str, float] = {}
    for stage, seconds in times:
        totals[stage] = totals.get(stage, 0.0) + seconds
    whole = sum(totals.values())
    lines = [f"  {stage:44s} {seconds:8.2f} s  ({100 * seconds / whole if whole else 0:5.1f} %)"
             for stage, seconds in totals.items()]
    lines.append(f"  {'total of the stages':44s} {whole:8.2f} s")
    return "\n".join(lines)
