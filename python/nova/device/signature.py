"""An ATen call's signature: what identifies the Nova program that computes it.

The tensor arguments become the program's inputs (their shapes and dtypes are
part of the signature); everything else (ints, floats, dtypes, ...) is baked
into the program, so it is part of the signature by value. Devices are written
as the CPU's: the program is exported on the host.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

from nova.device.scalar_forms import lifted_argument
from nova.errors import NovaError


@dataclass(frozen=True)
class TensorSlot:
    shape: tuple[int, ...]
    dtype: torch.dtype
    on_host: bool  # a CPU scalar tensor given to a device op (torch allows 0-dim ones)

    def describe(self) -> str:
        return f"{str(self.dtype).removeprefix('torch.')}{list(self.shape)}{'@cpu' if self.on_host else ''}"


@dataclass(frozen=True)
class OutSlot:
    """An ``out=`` tensor: written, never read, so not an input of the program."""
    shape: tuple[int, ...]
    dtype: torch.dtype

    def describe(self) -> str:
        return f"out:{str(self.dtype).removeprefix('torch.')}{list(self.shape)}"


@dataclass(frozen=True)
class Signature:
    op: Any  # torch._ops.OpOverload
    spec: Any  # pytree spec of (args, kwargs)
    slots: tuple[Any, ...]  # TensorSlot per tensor leaf, else the constant itself
    lifted: str | None = None  # a Scalar argument passed as a tensor (nova.device.scalar_forms)
    #: A random op: the program's first input is a key; the forms' version
    #: (nova.device.random_forms.VERSION), so a changed form is not read from a disk cache.
    drawn: str | None = None

    @property
    def key(self) -> str:
        parts = [str(self.op), str(self.spec), f"lifted={self.lifted}"]
        parts += [f"drawn={self.drawn}"] if self.drawn else []
        parts += [s.describe() if isinstance(s, (TensorSlot, OutSlot)) else repr(s)
                  for s in self.slots]
        return "|".join(parts)

    def describe(self) -> str:
        shown = [s.describe() for s in self.slots if isinstance(s, TensorSlot)]
        return f"{self.op}({', '.join(shown)})"


class NotOnDevice(NovaError, RuntimeError):
    """A tensor argument the op cannot take (a non-scalar CPU tensor, another device)."""


def _constant(value: Any) -> Any:
    if isinstance(value, torch.device):
        return torch.device("cpu") if value.type == "nova" else value
    return value


def signature_of(op: Any, args: tuple, kwargs: dict) -> tuple[Signature, list[torch.Tensor]]:
    """The call's signature and its tensor leaves in order."""
    args, kwargs = wrap_numbers(op, args, kwargs)
    lifted = lifted_argument(op, args, kwargs)
    if lifted is not None:
        args, kwargs = _lift(op, args, kwargs, lifted)
    outs = set(out_names(op))
    # The out= leaves by position (an out= may also be an input: add_ is add.out(self, out=self)).
    flags, _ = pytree.tree_flatten((pytree.tree_map(lambda _: False, args),
                                    {k: pytree.tree_map(lambda _, o=(k in outs): o, v)
                                     for k, v in kwargs.items()}))
    leaves, spec = pytree.tree_flatten((args, kwargs))
    slots: list[Any] = []
    tensors: list[torch.Tensor] = []
    for leaf, is_out in zip(leaves, flags):
        if isinstance(leaf, torch.Tensor) and is_out:
            slots.append(OutSlot(tuple(leaf.shape), leaf.dtype))
        elif isinstance(leaf, torch.Tensor):
            on_host = leaf.device.type == "cpu"
            if on_host and leaf.dim() != 0:
                raise NotOnDevice(f"{op} got a CPU tensor of shape {list(leaf.shape)} beside nova "
                                  f"tensors (only 0-dim CPU tensors may be mixed in)")
            if not on_host and leaf.device.type != "nova":
                raise NotOnDevice(f"{op} got a tensor on {leaf.device} beside nova tensors")
            slots.append(TensorSlot(tuple(leaf.shape), leaf.dtype, on_host))
            tensors.append(leaf)
        else:
            slots.append(_constant(leaf))
    return Signature(op, spec, tuple(slots), lifted), tensors


def rebuild(sig: Signature, tensors: list[Any]) -> tuple[tuple, dict]:
    """(args, kwargs) of the call with ``tensors`` in the tensor slots."""
    it = iter(tensors)
    leaves = [next(it) if isinstance(s, TensorSlot) else
              torch.empty(s.shape, dtype=s.dtype) if isinstance(s, OutSlot) else s
              for s in sig.slots]
    args, kwargs = pytree.tree_unflatten(leaves, sig.spec)
    return args, kwargs


def mutated_positions(op: Any) -> list[int]:
    """Schema positions of the arguments ``op`` writes (``self`` of ``add_``, ``out=``)."""
    return [i for i, a in enumerate(op._schema.arguments)
            if a.alias_info is not None and a.alias_info.is_write]


def is_view(op: Any) -> bool:
    """``op`` returns an alias of an input without writing it (a view op)."""
    return any(r.alias_info is not None and not r.alias_info.is_write for r in op._schema.returns)


def wrap_numbers(op: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A Python number where the schema takes a Tensor (a wrapped number: ``x / 0.5``,
    an optimizer's bias correction, ``bits & mask`` of a traced graph) becomes a
    0-dim tensor, so a changing value does not compile a new program. A float is
    float32 and an int int64: beside a tensor of one or more dims a 0-dim tensor
    promotes as the wrapped number does (it never raises that tensor's dtype), so
    an int is wrapped only then (without one, it stays and torch says it is not a
    tensor)."""
    schema = op._schema.arguments
    dimensioned = any(isinstance(t, torch.Tensor) and t.dim() > 0
                      for t in pytree.tree_leaves((args, kwargs)))

    def wrap(value: Any) -> Any:
        if isinstance(value, float):
            return torch.tensor(value, dtype=torch.float32)
        if dimensioned and isinstance(value, int) and not isinstance(value, bool):
            return torch.tensor(value, dtype=torch.int64)
        return value

    args = list(args)
    for position, a in enumerate(schema):
        if a.type.kind() != "TensorType":
            continue
        if position < len(args):
            args[position] = wrap(args[position])
        elif a.name in kwargs:
            kwargs = {**kwargs, a.name: wrap(kwargs[a.name])}
    return tuple(args), kwargs


def _lift(op: Any, args: tuple, kwargs: dict, name: str) -> tuple[tuple, dict]:
    names = [a.name for a in op._schema.arguments]
    position = names.index(name)
    if position < len(args):
        value = torch.tensor(args[position], dtype=torch.float32)
        return args[:position] + (value,) + args[position + 1:], kwargs
    return args, {**kwargs, name: torch.tensor(kwargs[name], dtype=torch.float32)}


def out_names(op: Any) -> list[str]:
    """The keyword-only arguments ``op`` writes without reading (``out=``)."""
    return [a.name for a in op._schema.arguments
            if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write]


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []
