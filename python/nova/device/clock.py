"""Simulated time on the device, the CUDA way: streams whose clocks the simulator
advances, and events that read them.

Every op launched on a stream starts when the stream's previous op has finished
(ops on one stream run in order) and takes its launch cost plus its program's
simulated time. Nothing waits in wall-clock time: the simulator has already run
the op when its Python call returns, so ``synchronize()`` and ``Event.wait``
only order the simulated clocks. Streams of one chip are independent clocks
(their ops do not share the chip's engines in this model: docs/device.md).
Clocks count whole femtoseconds (each op's time rounded to 1 fs), so the same
work gives exactly the same elapsed time wherever on the clock it happens.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import torch

from nova.device import _device_C


class Stream:
    """A queue of ops on one chip with its own simulated clock (``torch.nova.Stream``)."""

    def __init__(self, device: int | str | torch.device | None = None, priority: int = 0) -> None:
        self.device_index = device_index(device)
        self.priority = priority
        self.clock_fs = 0

    @property
    def device(self) -> torch.device:
        return torch.device("nova", self.device_index)

    @property
    def clock_ns(self) -> float:
        return self.clock_fs / 1e6

    def wait_event(self, event: "Event") -> None:
        if event.time_fs is not None:
            self.clock_fs = max(self.clock_fs, event.time_fs)

    def wait_stream(self, stream: "Stream") -> None:
        self.clock_fs = max(self.clock_fs, stream.clock_fs)

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event or Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<torch.nova.Stream device=nova:{self.device_index} clock={self.clock_ns:.3f} ns>"


class Event:
    """A point on a stream's simulated clock (``torch.nova.Event``)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self.time_fs: int | None = None
        self.device_index: int | None = None

    def record(self, stream: Stream | None = None) -> None:
        stream = stream or current_stream()
        self.time_fs = stream.clock_fs
        self.device_index = stream.device_index

    def wait(self, stream: Stream | None = None) -> None:
        (stream or current_stream()).wait_event(self)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds of simulated time from this event to ``end`` (both recorded)."""
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self.time_fs is None or end.time_fs is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end.time_fs - self.time_fs) / 1e12


_default: dict[int, Stream] = {}
_local = threading.local()


def device_index(device: int | str | torch.device | None) -> int:
    if device is None:
        return _device_C.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "nova":
        raise ValueError(f"expected a nova device, got {device}")
    return device.index if device.index is not None else _device_C.current_device()


def default_stream(device: int | str | torch.device | None = None) -> Stream:
    index = device_index(device)
    if index not in _default:
        _default[index] = Stream(index)
    return _default[index]


def current_stream(device: int | str | torch.device | None = None) -> Stream:
    index = device_index(device)
    chosen = getattr(_local, "streams", {}).get(index)
    return chosen or default_stream(index)


def set_stream(stream: Stream) -> None:
    if not hasattr(_local, "streams"):
        _local.streams = {}
    _local.streams[stream.device_index] = stream


@contextlib.contextmanager
def stream(s: Stream | None) -> Iterator[None]:
    """``with torch.nova.stream(s):`` launches the block's ops on ``s``."""
    if s is None:
        yield
        return
    before = current_stream(s.device_index)
    set_stream(s)
    try:
        yield
    finally:
        set_stream(before)


def synchronize(device: int | str | torch.device | None = None) -> None:
    """Every stream of the chip catches up with the latest (simulated time)."""
    index = device_index(device)
    streams = [s for s in [_default.get(index), *getattr(_local, "streams", {}).values()]
               if s is not None and s.device_index == index]
    latest = max((s.clock_fs for s in streams), default=0)
    for s in streams:
        s.clock_fs = latest


def advance(ns: float, device: int) -> tuple[float, float]:
    """Charges ``ns`` of simulated time to the current stream of ``device``;
    returns the op's (start, end)."""
    s = current_stream(device)
    start = s.clock_fs
    s.clock_fs = start + round(ns * 1e6)
    return start / 1e6, s.clock_fs / 1e6
