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
            call: Callable[..., Any] | None = None) -> Any:
        device = next(a.device for a in args if _is_nova(a))
        host = self.view(args)
        result = (call or program)(*host)
        elapsed = float(program.report.time_ns)
        launch_ns = settings.description["timing"]["launch_cycles"] * 1e3 / settings.description["clock_mhz"]
        start, end = advance(launch_ns + elapsed, device.index or 0)
        profile.record(f"compiled graph {graph.label}", start, end, elapsed, 0)
        aliases = {a.data_ptr(): arg for a, arg in zip(host, args) if _is_nova(arg)}

        def to_device(value: Any) -> Any:
            if not isinstance(value, torch.Tensor) or value.device.type != "cpu":
                return value
            same = aliases.get(value.data_ptr())
            if same is not None and same.shape == value.shape and same.stride() == value.stride():
                return same  # the graph returned one of its inputs
            out = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=device)
            if value.numel():
                _device_C.as_host(out).copy_(value)
            return out

        return pytree.tree_map(to_device, result)


def install() -> None:
    set_device_hooks(Hooks())
