"""Scalar arguments that change from call to call (an optimizer's step size, a
scheduled learning rate) are program inputs, not constants: otherwise every
step would compile new programs. For the ops below, a float ``Scalar`` argument
is passed as a 0-dim float32 tensor and the op is written with it as a tensor,
in the order torch's CPU kernels compute it."""
from __future__ import annotations

from typing import Any, Callable

import torch


def _addcdiv(a: tuple, k: dict) -> torch.Tensor:
    self, t1, t2 = a[:3]
    return self + k["value"] * t1 / t2


def _addcmul(a: tuple, k: dict) -> torch.Tensor:
    self, t1, t2 = a[:3]
    return self + k["value"] * t1 * t2


def _lerp(a: tuple, k: dict) -> torch.Tensor:
    self, end, weight = a[:3]
    return torch.lerp(self, end, weight.to(self.dtype))


def _add(a: tuple, k: dict) -> torch.Tensor:
    return a[0] + k["alpha"] * a[1]


def _sub(a: tuple, k: dict) -> torch.Tensor:
    return a[0] - k["alpha"] * a[1]


#: op overload -> (the Scalar argument lifted, its tensor form)
FORMS: dict[str, tuple[str, Callable[[tuple, dict], torch.Tensor]]] = {
    "aten::addcdiv.out": ("value", _addcdiv),
    "aten::addcmul.out": ("value", _addcmul),
    "aten::lerp.Scalar_out": ("weight", _lerp),
    "aten::add.out": ("alpha", _add),
    "aten::sub.out": ("alpha", _sub),
}


def lifted_argument(op: Any, args: tuple, kwargs: dict) -> str | None:
    """The name of the argument to lift for this call, if any (a float, not an int:
    integer arithmetic keeps torch's exact integer semantics as a constant)."""
    form = FORMS.get(op._schema.name + "." + op._schema.overload_name)
    if form is None:
        return None
    name = form[0]
    names = [a.name for a in op._schema.arguments]
    value = args[names.index(name)] if names.index(name) < len(args) else kwargs.get(name)
    return name if isinstance(value, float) else None


def form_of(op: Any) -> Callable[[tuple, dict], torch.Tensor]:
    return FORMS[op._schema.name + "." + op._schema.overload_name][1]
