"""Random ATen ops as Nova programs: each op's numbers come from a
:class:`nova.frontend.dropout.RandomStream` over the program's first input, a 0-d
int64 key (:func:`nova.device.random.take`), exactly as a compiled training step
draws its dropout masks from its seed input. ``native_dropout`` is the very
function the compiled paths use; the other forms turn the same uniform bits into
their distribution. Nothing random is baked in: one program serves every call.

A form takes ``(stream, args, kwargs)`` in the op's schema form and returns the
new values of the arguments the op writes, then its fresh results (the order
:class:`nova.device.programs.OpModule` uses).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from nova.frontend.dropout import RandomStream, keep_mask, native_dropout
from nova.frontend.random_bits import random_bits, uniform

#: Part of a random program's cache key: change it when a form's numbers change.
VERSION = "splitmix64-2"
#: Counters a form may take per element of its largest tensor (normal: two uniforms).
COUNTERS_PER_ELEMENT = 2


def _uniform(stream: RandomStream, shape: torch.Size) -> torch.Tensor:
    """float32 uniforms in [0, 1) (multiples of 2**-24)."""
    return uniform(stream.seed, stream.take(math.prod(shape)), shape)


def _open_uniform(stream: RandomStream, shape: torch.Size) -> torch.Tensor:
    """float32 uniforms in (0, 1]: the argument of a log."""
    return 1.0 - _uniform(stream, shape)


def _standard_normal(stream: RandomStream, shape: torch.Size) -> torch.Tensor:
    """Box-Muller on two uniforms per element (float32)."""
    u1 = _open_uniform(stream, shape)
    u2 = _uniform(stream, shape)
    return torch.sqrt(-2.0 * torch.log(u1)) * torch.cos((2.0 * math.pi) * u2)


def _uniform_(s: RandomStream, a: tuple, k: dict) -> tuple:
    self = a[0]
    low = a[1] if len(a) > 1 else k.get("from", 0.0)
    high = a[2] if len(a) > 2 else k.get("to", 1.0)
    u = _uniform(s, self.shape)
    return ((low + (high - low) * u).to(self.dtype),)


def _normal_(s: RandomStream, a: tuple, k: dict) -> tuple:
    self = a[0]
    mean = a[1] if len(a) > 1 else k.get("mean", 0.0)
    std = a[2] if len(a) > 2 else k.get("std", 1.0)
    return ((mean + std * _standard_normal(s, self.shape)).to(self.dtype),)


def _normal_tensor(s: RandomStream, a: tuple, k: dict) -> tuple:
    """``normal(mean, std)`` with a tensor for either or both (broadcast)."""
    mean = a[0] if len(a) > 0 else k["mean"]
    std = a[1] if len(a) > 1 else k.get("std", 1.0)
    like = mean if isinstance(mean, torch.Tensor) else std
    shape = torch.broadcast_shapes(*[t.shape for t in (mean, std) if isinstance(t, torch.Tensor)])
    return ((mean + std * _standard_normal(s, shape)).to(like.dtype),)


def _log_normal_(s: RandomStream, a: tuple, k: dict) -> tuple:
    self = a[0]
    mean = a[1] if len(a) > 1 else k.get("mean", 1.0)
    std = a[2] if len(a) > 2 else k.get("std", 2.0)
    return (torch.exp(mean + std * _standard_normal(s, self.shape)).to(self.dtype),)


def _exponential_(s: RandomStream, a: tuple, k: dict) -> tuple:
    self = a[0]
    lambd = a[1] if len(a) > 1 else k.get("lambd", 1.0)
    return ((-torch.log(_open_uniform(s, self.shape)) / lambd).to(self.dtype),)


def _cauchy_(s: RandomStream, a: tuple, k: dict) -> tuple:
    self = a[0]
    median = a[1] if len(a) > 1 else k.get("median", 0.0)
    sigma = a[2] if len(a) > 2 else k.get("sigma", 1.0)
    angle = math.pi * (_uniform(s, self.shape) - 0.5)
    return ((median + sigma * torch.sin(angle) / torch.cos(angle)).to(self.dtype),)


def _geometric_(s: RandomStream, a: tuple, k: dict) -> tuple:
    """Trials up to the first success: ``ceil(log(u) / log(1 - p))``, u in (0, 1]."""
    self = a[0]
    p = a[1] if len(a) > 1 else k["p"]
    trials = torch.ceil(torch.log(_open_uniform(s, self.shape)) / math.log1p(-p))
    return (torch.clamp(trials, min=1.0).to(self.dtype),)


def _bernoulli_float(s: RandomStream, a: tuple, k: dict) -> tuple:
    """``bernoulli_(p)`` / ``bernoulli(x, p)``: 1 with probability ``p``, by the
    dropout mask's exact integer threshold."""
    self = a[0]
    p = a[1] if len(a) > 1 else k.get("p", 0.5)
    return (keep_mask(s, self.shape, 1.0 - p).to(self.dtype),)


def _bernoulli_tensor_(s: RandomStream, a: tuple, k: dict) -> tuple:
    self, p = a[0], (a[1] if len(a) > 1 else k["p"])
    return ((_uniform(s, self.shape) < p.to(torch.float32)).to(self.dtype),)


def _bernoulli(s: RandomStream, a: tuple, k: dict) -> tuple:
    """``bernoulli(x)``: the probabilities are ``x``'s values."""
    self = a[0]
    return ((_uniform(s, self.shape) < self.to(torch.float32)).to(self.dtype),)


def _native_dropout(s: RandomStream, a: tuple, k: dict) -> tuple:
    x = a[0]
    p = a[1] if len(a) > 1 else k["p"]
    train = a[2] if len(a) > 2 else k.get("train", True)
    return native_dropout(s, x, p, train)


def _integers(s: RandomStream, shape: torch.Size, low: int, high: int) -> torch.Tensor:
    """int64 in [low, high): 63 random bits modulo the range (a bias below
    range / 2**63)."""
    bits = random_bits(s.seed, s.take(math.prod(shape)), shape)
    positive = (bits >> 1) & ((1 << 63) - 1)  # the top 63 bits
    if high - low > (1 << 63) - 1:  # the whole of int64's positive range
        return low + positive
    return low + torch.remainder(positive, high - low)


def _top_of(dtype: torch.dtype) -> int:
    """``random_()``'s exclusive bound: every integer the dtype holds exactly."""
    if dtype.is_floating_point:
        digits = round(-math.log2(torch.finfo(dtype).eps)) + 1  # mantissa bits with the implicit one
        return (1 << digits) + 1
    if dtype == torch.bool:
        return 2
    return torch.iinfo(dtype).max + 1


def _random_(s: RandomStream, a: tuple, k: dict, overload: str) -> tuple:
    self = a[0]
    if overload == "from":
        low = a[1] if len(a) > 1 else k["from"]
        high = a[2] if len(a) > 2 else k.get("to")
        high = _top_of(self.dtype) if high is None else high
    elif overload == "to":
        low, high = 0, (a[1] if len(a) > 1 else k["to"])
    else:
        low, high = 0, _top_of(self.dtype)
    return (_integers(s, self.shape, int(low), int(high)).to(self.dtype),)


Form = Callable[[RandomStream, tuple, dict], tuple]

#: ``aten::name.overload`` -> its form.
FORMS: dict[str, Form] = {
    "aten::uniform_.": _uniform_,
    "aten::normal_.": _normal_,
    "aten::normal.Tensor_float": _normal_tensor,
    "aten::normal.float_Tensor": _normal_tensor,
    "aten::normal.Tensor_Tensor": _normal_tensor,
    "aten::log_normal_.": _log_normal_,
    "aten::exponential_.": _exponential_,
    "aten::cauchy_.": _cauchy_,
    "aten::geometric_.": _geometric_,
    "aten::bernoulli_.float": _bernoulli_float,
    "aten::bernoulli.p": _bernoulli_float,
    "aten::bernoulli_.Tensor": _bernoulli_tensor_,
    "aten::bernoulli.": _bernoulli,
    "aten::native_dropout.": _native_dropout,
    "aten::random_.": lambda s, a, k: _random_(s, a, k, ""),
    "aten::random_.from": lambda s, a, k: _random_(s, a, k, "from"),
    "aten::random_.to": lambda s, a, k: _random_(s, a, k, "to"),
}


def form_of(op: Any) -> Form | None:
    """The form of a random op, None when the device has none (it falls back)."""
    return FORMS.get(f"{op._schema.name}.{op._schema.overload_name}")


def counters_for(tensors: list[torch.Tensor], results: list[torch.Tensor]) -> int:
    """The counters a call may take: an upper bound the form is checked against."""
    return COUNTERS_PER_ELEMENT * max([t.numel() for t in tensors + results] or [0])


class RandomOpModule(torch.nn.Module):
    """``forward(key, *tensors)``: the random op's form over a stream on ``key``."""

    def __init__(self, sig: Any) -> None:
        super().__init__()
        self.sig = sig
        self.form = form_of(sig.op)

    def forward(self, key: torch.Tensor, *tensors: torch.Tensor) -> tuple:
        from nova.device.signature import rebuild

        args, kwargs = rebuild(self.sig, list(tensors))
        stream = RandomStream(key)
        out = self.form(stream, tuple(args), kwargs)
        bound = counters_for(list(tensors), list(out))
        assert stream.offset <= bound, f"{self.sig.op} drew {stream.offset} > {bound} counters"
        return tuple(out)
