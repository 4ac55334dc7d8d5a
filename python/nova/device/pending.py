"""Results still in flight: a collective writes its outputs at a simulated time of
its own (nova.distributed), and an op that reads or writes such a tensor waits for
it there. The wait is by data, not by the order of Python calls, so every rank's
clock comes out the same whatever its threads did in wall-clock time."""
from __future__ import annotations

import threading
from typing import Iterable, Protocol

import torch

from nova.device.clock import current_stream



class Transfer(Protocol):
    def ready_fs(self) -> int | None: ...  # waits (wall clock) for the bytes; their simulated time


#: storage address -> the transfer that reads or writes it.
_pending: dict[int, Transfer] = {}
_lock = threading.Lock()


def mark(tensors: Iterable[torch.Tensor], transfer: Transfer) -> None:
    """``tensors`` are written (or read) by ``transfer``."""
    with _lock:
        for t in tensors:
            if t.device.type == "nova" and t.numel():
                _pending[t.untyped_storage().data_ptr()] = transfer


def forget(tensors: Iterable[torch.Tensor]) -> None:
    with _lock:
        for t in tensors:
            if t.device.type == "nova" and t.numel():
                _pending.pop(t.untyped_storage().data_ptr(), None)


def settle(tensors: Iterable[torch.Tensor], device: int) -> None:
    """Before an op on ``tensors``: their transfers finish, and the op's stream
    waits for the latest of them on the simulated clock."""
    if not _pending:
        return
    found = []
    with _lock:
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.device.type == "nova" and t.numel():
                entry = _pending.pop(t.untyped_storage().data_ptr(), None)
                if entry is not None:
                    found.append(entry)
    if not found:
        return
    ends = [transfer.ready_fs() or 0 for transfer in found]
    stream = current_stream(device)
    stream.clock_fs = max([stream.clock_fs] + ends)
