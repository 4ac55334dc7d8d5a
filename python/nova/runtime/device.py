"""Values kept in simulated device memory between programs.

A :class:`~nova.runtime.program.CompiledProgram` run with ``keep=`` leaves
those outputs in its (resident) HBM and returns a :class:`DeviceTensor` for
each: a torch tensor of the output's shape and dtype that holds no data on
the host, only a :class:`DeviceValue` saying where the bytes are. Another
program's run that takes the handle as an input gets the bytes by a
device-to-device copy (HBM to HBM on the same chip, charged as a DMA: see
:func:`nova.sim.simulator.device_copy_ns`), never through the host.

Each program is compiled with its own memory layout (its I/O buffers at fixed
HBM addresses), so a kept value first lives in the producing program's
output buffer. When that program runs again while the value is still held,
the run first moves the value to a buffer of its own (another HBM-to-HBM
copy, charged to that run), so the next run cannot overwrite it. The value
is freed when its last handle is garbage collected (autograd drops the saved
tensors when the backward has consumed them).

A handle used where its data is needed (any torch op, ``.numpy()``,
``.item()``) raises :class:`DeviceTensorError`; :meth:`DeviceTensor.to_host`
reads it back (counted as a host read).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import torch

from nova.runtime.errors import NovaRuntimeError

__all__ = ["DeviceTensor", "DeviceTensorError", "DeviceValue", "host_values", "live"]

#: id -> bytes of every value still held (:func:`live`).
_LIVE: dict[int, int] = {}


class DeviceTensorError(NovaRuntimeError, RuntimeError):
    """A :class:`DeviceTensor` (a value kept in simulated device memory) was used
    where its data is needed on the host."""


def live() -> tuple[int, int]:
    """How many kept values are held in simulated device memory, and their bytes."""
    return len(_LIVE), sum(_LIVE.values())


class DeviceValue:
    """One output kept in device memory: first in the producing program's HBM
    output buffer (valid while that program has not run again), then, once
    moved out of its way, in a device buffer of its own (``moved``: each
    chip's bytes, as stored)."""

    def __init__(self, program: Any, position: int, generation: int) -> None:
        self.program = program
        self.position = position
        self.entry = program.output_entries[position]
        self.generation = generation
        self.chips = program.binary.chips
        self.nbytes = self.entry.byte_size
        self.moved: list[np.ndarray] | None = None
        _LIVE[id(self)] = self.nbytes * self.chips
        weakref.finalize(self, _LIVE.pop, id(self), None)

    @property
    def in_place(self) -> bool:
        """Whether the bytes are still in the producing program's output buffer."""
        return self.moved is None

    def raw(self, chip: int = 0) -> np.ndarray:
        """The bytes on ``chip``, as stored in HBM (what a device copy moves)."""
        if self.moved is not None:
            return self.moved[chip]
        if self.program.generation != self.generation:  # the runtime moves it first
            raise DeviceTensorError("internal: a kept value's buffer was overwritten")
        return self.program.resident_simulator().read_raw(self.entry.index, chip)

    def move_out(self) -> None:
        """Copies the bytes from the program's output buffer to a buffer of their
        own (the program is about to run again and overwrite it)."""
        if self.moved is None:
            self.moved = [self.raw(c) for c in range(self.chips)]

    def to_host(self) -> torch.Tensor:
        """The value read back to the host (chip 0's), counted as a host read of
        the producing program."""
        from nova.runtime.host_values import to_tensor
        from nova.sim.simulator import Simulator

        simulator = self.program.resident_simulator()
        sim_entry = next(e for e in simulator.program.io if e.index == self.entry.index)
        self.program.traffic.host_read += self.nbytes
        return to_tensor(self.entry, Simulator._decode(sim_entry, self.raw(0)))


class DeviceTensor(torch.Tensor):
    """A torch tensor standing for a :class:`DeviceValue`: the right shape,
    dtype and strides, no data on the host. Only ``detach`` and ``alias`` (a
    new handle to the same value) work on it; every other op raises
    :class:`DeviceTensorError`."""

    device_value: DeviceValue

    @staticmethod
    def __new__(cls, value: DeviceValue, dtype: torch.dtype) -> "DeviceTensor":
        tensor = torch.Tensor._make_wrapper_subclass(cls, tuple(value.entry.shape), dtype=dtype,
                                                     device="cpu", requires_grad=False)
        tensor.device_value = value
        return tensor

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if func in (torch.ops.aten.detach.default, torch.ops.aten.alias.default):
            return DeviceTensor(args[0].device_value, args[0].dtype)
        raise _misuse(f"torch op {func}")

    def to_host(self) -> torch.Tensor:
        """The value on the host (a device-to-host read)."""
        return self.device_value.to_host()

    def numpy(self, *args: Any, **kwargs: Any) -> Any:
        raise _misuse(".numpy()")

    def item(self) -> Any:
        raise _misuse(".item()")

    def tolist(self) -> Any:
        raise _misuse(".tolist()")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise _misuse("numpy conversion")

    def __repr__(self, *args: Any, **kwargs: Any) -> str:
        place = "in its program's output buffer" if self.device_value.in_place else "moved"
        return (f"DeviceTensor(shape={list(self.shape)}, dtype={self.dtype}, kept in simulated "
                f"HBM, {place})")

    __str__ = __repr__


def _misuse(what: str) -> DeviceTensorError:
    return DeviceTensorError(
        f"{what} on a DeviceTensor: the value is kept in simulated device memory (a tensor "
        f"saved for the backward, or an output run with keep=) and has no data on the host; "
        f"pass it to a Nova program, or read it with .to_host()")


def host_values(values: Any) -> list[Any]:
    """``values`` with every :class:`DeviceTensor` read back to the host (for
    code that needs the data: ops in eager)."""
    return [v.to_host() if isinstance(v, DeviceTensor) else v for v in values]
