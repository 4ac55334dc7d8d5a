"""``torch.compile(model, backend="nova")`` on nova tensors: a compiled graph runs
on the chip its inputs are on, as one launch on the current stream, reading and
writing the tensors' memory in place (no host copies are counted: the bytes
never leave the device in the machine being modelled). Installed into the
Dynamo backend as its ``device_call`` hook.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree

from nova.device import _device_C, profile
from nova.device.clock import advance
from nova.device.config import settings


def install() -> None:
    import importlib

    # The module (``nova.dynamo.backend`` as an attribute is the backend function).
    importlib.import_module("nova.dynamo.backend").device_call = run_graph


def run_graph(graph: Any, call: Callable[..., Any], args: Sequence[Any]) -> Any:
    device = next(a.device for a in args if isinstance(a, torch.Tensor) and a.device.type == "nova")
    host = [_device_C.as_host(a) if isinstance(a, torch.Tensor) and a.device.type == "nova" else a
            for a in args]
    before = graph.stats.sim_ns
    result = call(*host, keep_saved=False)
    elapsed = graph.stats.sim_ns - before
    launch_ns = settings.description["timing"]["launch_cycles"] * 1e3 / settings.description["clock_mhz"]
    start, end = advance(launch_ns + elapsed, device.index or 0)
    profile.record(f"compiled graph {graph.label}", start, end, elapsed, 0)
    aliases = {a.data_ptr(): arg for a, arg in zip(host, args)
               if isinstance(a, torch.Tensor) and a.device.type == "cpu" and a is not arg}

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
