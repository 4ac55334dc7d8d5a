"""Ops without a Nova kernel: run on the CPU on copies of their nova inputs, with
one warning per op naming it (``torch.nova.set_fallback("error")`` makes it an
error instead). Their host traffic is counted like any other copy."""
from __future__ import annotations

import traceback
import warnings
from collections import Counter
from typing import Any

import torch
import torch.utils._pytree as pytree

from nova.device import _device_C
from nova.device.config import settings
from nova.device.signature import mutated_positions
from nova.errors import NovaError

#: How many times each op ran on the CPU (``torch.nova.fallback_report``).
counts: Counter = Counter()
_warned: set[str] = set()


class NovaFallbackError(NovaError):
    """An op had to leave the device while the fallback mode is ``"error"``."""


def user_line() -> str:
    """The innermost frame outside torch and nova: the user's line."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        name = frame.filename
        if "/torch/" in name or "/nova/" in name or name.startswith("<"):
            continue
        return f"{name}:{frame.lineno}: {frame.line}"
    return "(no user frame)"


def run(op: Any, args: tuple, kwargs: dict, reason: str) -> Any:
    name = str(op)
    if settings.fallback == "error":
        raise NovaFallbackError(f"{name} has no Nova kernel ({reason}); the nova device is in strict "
                                f"mode (torch.nova.set_fallback('error')), so it does not run on the "
                                f"CPU\n  at {user_line()}")
    counts[name] += 1
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"nova: {name} ran on the CPU ({reason}); at {user_line()}", stacklevel=3)
    device = None
    to_device, to_host = 0, 0

    def down(value: Any) -> Any:
        nonlocal device, to_host
        if isinstance(value, torch.Tensor) and value.device.type == "nova":
            device = value.device
            to_host += value.numel() * value.element_size()
            return _device_C.as_host(value).clone()
        return value

    def cpu_constant(value: Any) -> Any:
        if isinstance(value, torch.device) and value.type == "nova":
            return torch.device("cpu")
        return value

    hargs, hkwargs = pytree.tree_map(down, (args, kwargs))
    hargs, hkwargs = pytree.tree_map(cpu_constant, (hargs, hkwargs))
    result = op(*hargs, **hkwargs)
    device = device or torch.device("nova", _device_C.current_device())
    # Written arguments: the host copy's new value goes back into the tensor.
    schema = op._schema.arguments
    for position in mutated_positions(op):
        name_ = schema[position].name
        real = args[position] if position < len(args) else kwargs.get(name_)
        copy = hargs[position] if position < len(hargs) else hkwargs.get(name_)
        for r, c in zip(_flat(real), _flat(copy)):
            if r.shape != c.shape:
                r.resize_(c.shape)
            _device_C.as_host(r).copy_(c)
            to_device += c.numel() * c.element_size()
    written = {id(c) for p in mutated_positions(op)
               for c in _flat(hargs[p] if p < len(hargs) else hkwargs.get(schema[p].name))}
    originals = {id(c): r for p in mutated_positions(op)
                 for r, c in zip(_flat(args[p] if p < len(args) else kwargs.get(schema[p].name)),
                                 _flat(hargs[p] if p < len(hargs) else hkwargs.get(schema[p].name)))}

    def up(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            if id(value) in written:
                return originals[id(value)]
            return value.to(device)  # counted by the C++ copy
        return value

    out = pytree.tree_map(up, result)
    _device_C.count_transfer(device.index or 0, to_device, to_host)
    return out


def _flat(value: Any) -> list[torch.Tensor]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return [value]
