"""The handle of an in-flight collective (``torch.distributed.Work``): the gloo
transfers that move its bytes, and the simulated time its outputs are ready."""
from __future__ import annotations

import threading
from datetime import timedelta
from typing import Callable

import torch
import torch.distributed as dist

from nova.device import pending
from nova.device.clock import current_stream
from nova.errors import NovaError


class PeerFailure(NovaError):
    """A collective could not finish: a peer rank exited, hung past the process
    group's timeout, or its transport failed."""


class NovaWork(dist.Work):
    def __init__(self, transfers: list[dist.Work], what: str, device: int | None,
                 outputs: list[torch.Tensor], end_fs: Callable[[], int] | int | None,
                 finish: Callable[[], None] | None = None,
                 blocking: Callable[[], None] | None = None) -> None:
        super().__init__()
        self._blocking = blocking  # tells the coordinator this rank waits here
        self._transfers = transfers
        self._what = what
        self._device = device
        self._outputs = outputs
        self._end = end_fs
        self._finish = finish
        self._done = False
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def complete(self, arrived: list[torch.futures.Future] | None = None) -> None:
        """Waits (wall clock) for the bytes; runs the finishing step once.
        ``arrived``: the transfers' completed futures (from a future's callback,
        which runs on gloo's thread and must not wait on gloo's works)."""
        with self._lock:
            if self._done:
                if self._error is not None:
                    raise self._error
                return
            try:
                if arrived is None:
                    for w in self._transfers:
                        w.wait()
                else:
                    for f in arrived:
                        f.value()  # raises the transfer's error, if any
                if self._finish is not None:
                    self._finish()
            except RuntimeError as e:
                self._error = PeerFailure(f"torch.distributed on nova: {self._what} failed: a peer rank "
                                          f"exited, hung past the process group's timeout, or its "
                                          f"connection broke ({str(e).splitlines()[0]})")
                self._done = True
                raise self._error from e
            self._done = True

    def end_fs(self) -> int | None:
        return self._end() if callable(self._end) else self._end

    def ready_fs(self) -> int | None:
        """Waits (wall clock) for the bytes and returns the simulated time they are there."""
        if self._blocking is not None:
            self._blocking()
        self.complete()
        return self.end_fs()

    def wait(self, timeout: timedelta = timedelta(0)) -> bool:
        """The current stream waits for the outputs (simulated time), as CUDA's
        ``work.wait()`` makes the current stream wait for NCCL's."""
        end = self.ready_fs()
        if self._device is not None and end is not None:
            stream = current_stream(self._device)
            stream.clock_fs = max(stream.clock_fs, end)
            pending.forget(self._outputs)
        return True

    def get_future(self) -> torch.futures.Future:
        """Completes with the outputs when the bytes have arrived; an op that then
        reads them waits for the collective's end on the simulated clock (pending marks)."""
        future: torch.futures.Future = torch.futures.Future()
        transfers = [w.get_future() for w in self._transfers]

        def done(_: torch.futures.Future) -> None:
            try:
                self.complete(transfers)
                future.set_result(self._outputs)
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
                future.set_exception(e)

        if transfers:
            torch.futures.collect_all(transfers).add_done_callback(done)
        else:
            done(future)
        return future

    def is_completed(self) -> bool:
        return self._done or all(w.is_completed() for w in self._transfers)

    def is_success(self) -> bool:
        return self._done and self._error is None

    def exception(self) -> BaseException | None:
        return self._error

    def result(self) -> list[torch.Tensor]:
        return self._outputs

    def synchronize(self) -> None:
        self.wait()


class Coalesced(NovaWork):
    """The works of a ``_coalescing_manager`` block (e.g. ``batch_isend_irecv``) as one."""

    def __init__(self, works: list[NovaWork]) -> None:
        device = next((w._device for w in works if w._device is not None), None)
        outputs = [t for w in works for t in w._outputs]
        super().__init__([], "a coalesced group of ops", device, outputs, None)
        self._works = works

    def ready_fs(self) -> int | None:
        return max((w.ready_fs() or 0 for w in self._works), default=0)

    def complete(self) -> None:
        for w in self._works:
            w.complete()
        self._done = True

    def wait(self, timeout: timedelta = timedelta(0)) -> bool:
        for w in self._works:
            w.wait()
        return True
