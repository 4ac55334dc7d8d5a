"""``torch.compile(model, backend="nova")`` on nova tensors: a compiled program runs
on the chip its inputs are on, as one launch on the current stream, reading and
writing the tensors' memory in place (no host traffic: the bytes never leave the
device in the machine being modelled). The eager ops of a split graph run on the
device tensors as any eager op does. Plugged into the Dynamo backend
(:class:`nova.dynamo.backend.DeviceHooks`).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree

from nova.device import _device_C, profile
from nova.device.clock import advance
from nova.device.config import settings
from nova.dynamo.graph import DeviceHooks, set_device_hooks


def _is_nova(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "nova"


class Hooks(DeviceHooks):
    def view(self, args: Sequence[Any]) -> list[Any]:
        return [_device_C.as_host(a) if _is_nova(a) else a for a in args]

    def run(self, graph: Any, program: Any, args: Sequence[Any],
            call: Callable[..., Any] | None = None,
            recorded: Sequence[Any] | None = None) -> Any:
        device = next(a.device for a in args if _is_nova(a))
        host = self.view(args)
        result = (call or program)(*host)
        elapsed = float(program.report.time_ns)
        launch_ns = settings.description["timing"]["launch_cycles"] * 1e3 / settings.description["clock_mhz"]
        start, end = advance(launch_ns + elapsed, device.index or 0)
        profile.record(f"compiled graph {graph.label}", start, end, elapsed, 0)
        aliases = {a.data_ptr(): arg for a, arg in zip(host, args) if _is_nova(arg)}

        def to_device(value: Any, traced: Any) -> Any:
            if not isinstance(value, torch.Tensor) or value.device.type != "cpu":
                return value
            same = aliases.get(value.data_ptr())
            if same is not None and same.shape == value.shape and same.stride() == value.stride():
                return same  # the graph returned one of its inputs
            out = _allocate(value, traced, device)
            if value.numel():
                _device_C.as_host(out).copy_(value)
            return out

        leaves, spec = pytree.tree_flatten(result)
        traced = list(recorded) if recorded is not None and len(recorded) == len(leaves) else []
        traced += [None] * (len(leaves) - len(traced))
        return pytree.tree_unflatten([to_device(v, t) for v, t in zip(leaves, traced)], spec)


def _allocate(value: torch.Tensor, traced: Any, device: torch.device) -> torch.Tensor:
    """A device tensor for a program's result, laid out as the traced graph recorded
    it (as eager lays it out: a transposed weight saved for the backward, a view of
    one piece of a ``split``) where that layout does not overlap itself; else the
    program's own. A piece of a larger buffer gets that buffer, as in eager."""
    if (isinstance(traced, torch.Tensor) and tuple(traced.shape) == tuple(value.shape)
            and all(isinstance(s, int) for s in (*traced.stride(), traced.storage_offset()))
            and tuple(traced.stride()) != tuple(value.stride())
            and _non_overlapping(tuple(value.shape), tuple(traced.stride()))):
        offset = traced.storage_offset()
        extent = sum((n - 1) * st for n, st in zip(value.shape, traced.stride())) + 1
        base = torch.empty(offset + extent if value.numel() else 0, dtype=value.dtype, device=device)
        return base.as_strided(value.shape, traced.stride(), offset if value.numel() else 0)
    return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=device)


def _non_overlapping(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether no two elements of ``shape`` laid out by ``strides`` share an address."""
    reach = 0  # the largest offset the dims so far address
    for size, stride in sorted(((n, st) for n, st in zip(shape, strides) if n != 1),
                               key=lambda d: d[1]):
        if stride <= reach:
            return False
        reach += (size - 1) * stride
    return True


def install() -> None:
    set_device_hooks(Hooks())
