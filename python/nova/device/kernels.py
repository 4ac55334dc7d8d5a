"""The device's compute kernels: every ATen op on nova tensors that has no C++
kernel (allocation, views, host copies: ``ext/device``) and no composite
definition in PyTorch comes here, through one boxed PrivateUse1 fallback.

An op runs as a Nova program (:mod:`nova.device.programs`) on the inputs' bytes
in simulated HBM, and its outputs are written into fresh nova tensors (or, for an
in-place op, into the tensors it mutates). A view op is answered with
``as_strided`` on the same storage (its geometry from the meta kernel), so views
never copy. An op Nova cannot compile runs on the CPU (:mod:`nova.device.host`).
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import DynamicOutputShapeException

from nova.device import _device_C, host, pending, profile
from nova.device.clock import advance
from nova.device.config import settings
from nova.device.programs import NoKernel, cache
from nova.device.signature import (NotOnDevice, is_view, mutated_positions, rebuild,
                                   signature_of, wrap_numbers)

_library: torch.library.Library | None = None


def install() -> None:
    global _library
    if _library is not None:
        return
    _library = torch.library.Library("_", "IMPL")
    _library.fallback(dispatch, "PrivateUse1")
    # Ops whose composite or generic path would be wrong or wasteful here.
    _specific = torch.library.Library("aten", "IMPL")
    _specific.impl("copy_", copy_, "PrivateUse1")
    _specific.impl("cat", cat, "PrivateUse1")
    _keep.append(_specific)


_keep: list[torch.library.Library] = []


def copy_(dst: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    """Host<->device copies are the C++ ``_copy_from`` (counted host traffic);
    a device-to-device copy is a Nova program (a DMA, with a dtype conversion if any)."""
    if dst.device.type != "nova" or src.device.type != "nova":
        pending.settle([t for t in (src, dst) if t.device.type == "nova"],
                       (src if src.device.type == "nova" else dst).device.index or 0)
        return torch.ops.aten._copy_from.default(src, dst, non_blocking)
    if dst.numel() == 0:
        return dst
    # The program reads only the source (the destination is written, never read).
    if src.dtype != dst.dtype:
        src = run_program(torch.ops.aten._to_copy.default, (src,), {"dtype": dst.dtype},
                          into=dst if src.shape == dst.shape else None)
        if src.shape == dst.shape:
            return dst
    op = (torch.ops.aten.clone.default if src.shape == dst.shape else
          torch.ops.aten.expand_copy.default)
    run_program(op, (src,) if src.shape == dst.shape else (src, list(dst.shape)), {}, into=dst)
    return dst


def cat(tensors: list[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """torch skips 1-D empty tensors in ``cat`` (a KV cache's first update); so does
    the program, which then does not depend on them."""
    kept = [t for t in tensors if not (t.dim() == 1 and t.numel() == 0)]
    if not kept:
        return run_program(torch.ops.aten.cat.default, (list(tensors), dim), {})
    if len(kept) == 1:
        # A copy with cat's output layout (contiguous), not the input's (clone's).
        meta, _, _ = meta_call(torch.ops.aten.cat.default, (list(tensors), dim), {})
        out = torch.empty_strided(meta.shape, meta.stride(), dtype=meta.dtype, device=kept[0].device)
        return run_program(torch.ops.aten.clone.default, (kept[0],), {}, into=out)
    return run_program(torch.ops.aten.cat.default, (kept, dim), {})


def dispatch(op: Any, *args: Any, **kwargs: Any) -> Any:
    """The boxed kernel of every op without a specific nova kernel."""
    if is_view(op) and not mutated_positions(op):
        return _view(op, args, kwargs)
    if torch.Tag.nondeterministic_seeded in op.tags:
        return _random(op, args, kwargs)
    if any(r.type.kind() not in ("TensorType", "ListType", "OptionalType")
           for r in op._schema.returns):
        return host.run(op, args, kwargs, "it returns a Python value, read on the host")
    try:
        return run_program(op, args, kwargs)
    except NoKernel as e:
        return host.run(op, args, kwargs, str(e))
    except (NotImplementedError, DynamicOutputShapeException) as e:
        if "Meta" not in str(e) and not isinstance(e, DynamicOutputShapeException):
            raise
        # No meta kernel: the output's shape depends on the data (masked_select, nonzero).
        return host.run(op, args, kwargs, "its output's shape depends on the data")


def _random(op: Any, args: tuple, kwargs: dict) -> Any:
    """A random op: a Nova program drawing from the chip's generator, or from a
    ``torch.Generator("nova")`` given to it (:mod:`nova.device.random_forms`);
    the CPU when the device has no form for the op or it was given a CPU generator."""
    from nova.device import random_forms  # the frontend loads on the first op, not at import

    names = [a.name for a in op._schema.arguments]
    position = names.index("generator") if "generator" in names else None
    generator = (None if position is None else
                 args[position] if position < len(args) else kwargs.get("generator"))
    if generator is not None and generator.device.type != "nova":
        return host.run(op, args, kwargs, f"it was given a torch.Generator on {generator.device}; "
                        "nova random ops draw from the chip's generator or a torch.Generator('nova')")
    if random_forms.form_of(op) is None:
        return host.run(op, args, kwargs, "a random op the device has no form for")
    if generator is not None:  # not part of the program: its state becomes the key input
        if position < len(args):
            args = args[:position] + (None,) + args[position + 1:]
        else:
            kwargs = {**kwargs, "generator": None}
    try:
        return run_program(op, args, kwargs, drawn=True, generator=generator)
    except NoKernel as e:
        return host.run(op, args, kwargs, str(e))


def _meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.device.type == "nova":
        base = torch.empty(value.untyped_storage().nbytes() // value.element_size() or 1,
                           dtype=value.dtype, device="meta")
        return base.as_strided(value.shape, value.stride(), value.storage_offset())
    if isinstance(value, torch.Tensor):
        return value.to("meta")  # a 0-dim CPU operand too: meta kernels take one device
    return value


def meta_call(op: Any, args: tuple, kwargs: dict) -> tuple[Any, tuple, dict]:
    """The op on meta tensors of the arguments' geometry: (result, meta args, meta kwargs)."""
    margs, mkwargs = pytree.tree_map(_meta, (args, kwargs))
    return op(*margs, **mkwargs), margs, mkwargs


def _view(op: Any, args: tuple, kwargs: dict) -> Any:
    out, _, _ = meta_call(op, args, kwargs)
    source = args[0]

    def realise(m: Any) -> Any:
        if isinstance(m, torch.Tensor):
            return torch.ops.aten.as_strided.default(source, m.shape, m.stride(), m.storage_offset())
        return m

    return pytree.tree_map(realise, out)


def device_of(tensors: list[torch.Tensor]) -> int:
    for t in tensors:
        if t.device.type == "nova":
            return t.device.index or 0
    return _device_C.current_device()


def run_program(op: Any, args: tuple, kwargs: dict, into: torch.Tensor | None = None,
                drawn: bool = False, generator: torch.Generator | None = None) -> Any:
    """Runs ``op`` as a Nova program; ``into`` receives its one result in place of
    a fresh tensor (a device-to-device copy's destination); ``drawn``: a random op,
    whose program takes a key first, from ``generator`` or the chip's generator."""
    started = time.perf_counter()
    compile_before = cache.compile_seconds
    try:
        return _run_program(op, args, kwargs, into, drawn, generator)
    finally:
        profile.host["op_s"] += time.perf_counter() - started - (cache.compile_seconds - compile_before)


def _run_program(op: Any, args: tuple, kwargs: dict, into: torch.Tensor | None,
                 drawn: bool = False, generator: torch.Generator | None = None) -> Any:
    args, kwargs = wrap_numbers(op, args, kwargs)  # the meta kernel takes no int for a Tensor
    sig, tensors = signature_of(op, args, kwargs)
    device = device_of(tensors)
    meta, margs, mkwargs = meta_call(op, args, kwargs)
    mutated = _mutated_values(op, args, kwargs)
    pending.settle(tensors + _flatten(mutated), device)
    fresh_meta = [m for i, m in enumerate(_returns(meta, op)) if op._schema.returns[i].alias_info is None]
    flat_fresh_meta = _flatten(fresh_meta)
    # Resize the written outputs as the meta kernel did (an ``out=`` of the wrong size).
    for target, m in zip(_flatten(mutated), _flatten(_mutated_values(op, margs, mkwargs))):
        if target.shape != m.shape:
            target.resize_(m.shape)
    if all(t.numel() == 0 for t in _flatten(mutated) + flat_fresh_meta):
        values: list[torch.Tensor] = []
        elapsed = 0.0
    else:
        if drawn:
            from nova.device import random, random_forms

            counters = random_forms.counters_for(tensors, _flatten(mutated) + flat_fresh_meta)
            key = torch.tensor(random.take(device, counters, generator), dtype=torch.int64)
            sig, tensors = dataclasses.replace(sig, drawn=random_forms.VERSION), [key, *tensors]
        program = cache.get(sig, settings.target)
        inputs, strided_bytes = _inputs(tensors)
        started = time.perf_counter()
        produced = program(*inputs)
        profile.host["simulator_s"] += time.perf_counter() - started
        values = list(produced) if isinstance(produced, (tuple, list)) else [produced]
        elapsed = program.report.time_ns + strided_bytes * 2 / settings.description["hbm_gbps"]
    launch_ns = settings.description["timing"]["launch_cycles"] * 1e3 / settings.description["clock_mhz"]
    start, end = advance(launch_ns + elapsed, device)
    profile.record(str(op), start, end, elapsed, sum(t.numel() * t.element_size() for t in tensors))
    written = _flatten(mutated)
    if values:
        for t, v in zip(written, values):
            _device_C.as_host(t).copy_(v)
    fresh: list[torch.Tensor] = []
    for k, m in enumerate(flat_fresh_meta):
        t = (into if into is not None else
             torch.empty_strided(m.shape, m.stride(), dtype=m.dtype, device=torch.device("nova", device)))
        if values and t.numel():
            _device_C.as_host(t).copy_(values[len(written) + k])
        fresh.append(t)
    return _result(op, args, kwargs, meta, fresh)


def _flatten(values: list) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.extend(v)
        elif isinstance(v, torch.Tensor):
            out.append(v)
    return out


def _mutated_values(op: Any, args: tuple, kwargs: dict) -> list:
    schema = op._schema.arguments
    values = []
    for position in mutated_positions(op):
        name = schema[position].name
        values.append(args[position] if position < len(args) else kwargs.get(name))
    return [v for v in values if v is not None]


def _returns(meta: Any, op: Any) -> list:
    if len(op._schema.returns) == 1:
        return [meta]
    return list(meta) if meta is not None else []


def _inputs(tensors: list[torch.Tensor]) -> tuple[list[torch.Tensor], int]:
    """The program's inputs as host aliases of the tensors' memory. A strided
    input is gathered first (charged as one read and one write of its bytes)."""
    inputs, strided = [], 0
    for t in tensors:
        if t.device.type != "nova":
            inputs.append(t)
            continue
        alias = _device_C.as_host(t)
        if not alias.is_contiguous():
            strided += t.numel() * t.element_size()
            alias = alias.contiguous()
        inputs.append(alias)
    return inputs, strided


def _result(op: Any, args: tuple, kwargs: dict, meta: Any, fresh: list[torch.Tensor]) -> Any:
    """The op's return value: mutated arguments returned as themselves, fresh
    tensors in order."""
    schema = op._schema
    by_set: dict[str, Any] = {}
    for position, a in enumerate(schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            value = args[position] if position < len(args) else kwargs.get(a.name)
            for s in a.alias_info.before_set:
                by_set[s] = value
    it = iter(fresh)
    out = []
    metas = _returns(meta, op)
    for r, m in zip(schema.returns, metas):
        if r.alias_info is not None:
            out.append(next((by_set[s] for s in r.alias_info.before_set if s in by_set), None))
        elif isinstance(m, (list, tuple)):
            out.append([next(it) for _ in m])
        else:
            out.append(next(it))
    if not schema.returns:
        return None
    return out[0] if len(schema.returns) == 1 else tuple(out)

