"""Sequencer streams (:mod:`nova.sim.stream`) of recently run programs, kept so that a
program run again replays its steps without walking its scalar code again."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from .stream import Stream
from .watchdog import Budget

if TYPE_CHECKING:
    from .program import ChipCode

#: The cache keeps streams of at most this many steps in all (oldest dropped first).
MAX_CACHED_STEPS = 4_000_000

#: Streams of recently run programs, by (ChipCode identity, chip, dma engines, budget);
#: an entry goes when its code is garbage collected (a program that is not run again
#: keeps nothing alive) or the cache holds too many steps.
_STREAMS: "OrderedDict[tuple[Any, ...], tuple[weakref.ref, Stream]]" = OrderedDict()


def _key(code: "ChipCode", cid: int, queues: tuple[int, bool], budget: Budget) -> tuple[Any, ...]:
    return (id(code), cid, queues, budget.max_instructions, budget.max_time_ns)


def cached_stream(code: "ChipCode", cid: int, queues: tuple[int, bool], budget: Budget) -> Stream | None:
    """The stream an earlier run of chip ``cid`` on ``code`` walked, or None."""
    key = _key(code, cid, queues, budget)
    hit = _STREAMS.get(key)
    if hit is not None and hit[0]() is code:
        _STREAMS.move_to_end(key)
        return hit[1]
    return None


def store_stream(code: "ChipCode", cid: int, queues: tuple[int, bool], budget: Budget, stream: Stream) -> None:
    """Keeps the stream a run walked (:func:`nova.sim.stream.walk_stream`), for the next runs."""
    key = _key(code, cid, queues, budget)

    def gone(_: object, key: tuple[Any, ...] = key) -> None:
        entry = _STREAMS.get(key)
        if entry is not None and entry[0]() is None:
            del _STREAMS[key]

    _STREAMS[key] = (weakref.ref(code, gone), stream)
    while len(_STREAMS) > 1 and (len(_STREAMS) > 64 or sum(
            len(v[1].steps) for v in _STREAMS.values()) > MAX_CACHED_STEPS):
        _STREAMS.popitem(last=False)


