"""Elementwise math ops the vector unit has no instruction for, in the ones
it has (exp, log, log1p, sqrt, sin, cos, tanh, abs, division). torch-mlir
lowers them to ``math.*`` ops that Nova's payload lowering does not take.

- ``log2``/``log10``/``exp2``: a log or exp and one constant product.
- ``expm1``: ``exp(x) - 1``, with ``x + x²/2 + x³/6`` where ``|x| < 1e-3``
  (the subtraction would lose the small result's digits).
- ``sinh``/``cosh``/``tan``; ``asinh``/``acosh``/``atanh`` through log/log1p.
- ``atan``: ``pi/2 - atan(1/|x|)`` above 1, then the argument halved twice,
  ``atan(t) = 2 atan(t / (1 + sqrt(1 + t²)))`` (to ``|t| < 0.2``), then the odd
  Taylor series to ``t¹⁷`` (truncation error below 1e-13); ``±inf`` gives ``±pi/2``.
- ``asin(x) = 2 atan(x / (1 + sqrt(1 - x²)))``, ``acos(x) = pi/2 - asin(x)``.
- ``atan2(y, x)``: ``atan(y / x)``, plus ``±pi`` where ``x < 0``; ``±pi/2`` on
  the y axis, ``±pi/4``/``±3pi/4`` where both are infinite. The sign of a zero
  is not kept (``atan2(-0., -1.)`` is ``pi``, torch's ``-pi``).
- ``logaddexp2(a, b) = max + log1p(2^-|a - b|) / ln 2``; ``a + 1`` where equal
  (both infinite too).

bfloat16 and float16 operands of the multi-step rewrites (``atan2``) compute
in float32 and round once, as torch's CPU kernels do.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

aten = torch.ops.aten


def _with_sign_of(x, y):
    # copysign does not reach linalg; the sign of a zero is not kept.
    return torch.where(x < 0, -y, y)


def _log2(x):
    return torch.log(x) * (1.0 / math.log(2.0))


def _log10(x):
    return torch.log(x) * (1.0 / math.log(10.0))


def _exp2(x):
    return torch.exp(x * math.log(2.0))


def _expm1(x):
    small = x + x * x * (0.5 + x * (1.0 / 6.0))
    return torch.where(torch.abs(x) < 1e-3, small, torch.exp(x) - 1.0)


def _sinh(x):
    # Small |x|: the series (exp(x) - exp(-x) cancels).
    small = x + x * x * x * (1.0 / 6.0)
    return torch.where(torch.abs(x) < 1e-3, small, 0.5 * (torch.exp(x) - torch.exp(-x)))


def _cosh(x):
    return 0.5 * (torch.exp(x) + torch.exp(-x))


def _tan(x):
    return torch.sin(x) / torch.cos(x)


def _asinh(x):
    a = torch.abs(x)
    # log1p keeps small arguments exact: asinh(a) = log1p(a + a² / (1 + sqrt(1 + a²))).
    y = torch.log1p(a + a * a / (1.0 + torch.sqrt(1.0 + a * a)))
    big = torch.log(a) + math.log(2.0)  # a² overflows past ~1e19
    return _with_sign_of(x, torch.where(a > 1e18, big, y))


def _acosh(x):
    return torch.log(x + torch.sqrt(x * x - 1.0))


def _atanh(x):
    return 0.5 * (torch.log1p(x) - torch.log1p(-x))


def _atan(x):
    a = torch.abs(x)
    big = a > 1.0
    # atan(a) = pi/2 - atan(1/a); inf -> 0. (The division never sees a zero:
    # torch-mlir's reciprocal asserts on one.)
    t = torch.where(big, 1.0 / torch.where(big, a, 1.0), a)
    for _ in range(2):  # |t| <= tan(pi/16) < 0.2 after two halvings
        t = t / (1.0 + torch.sqrt(1.0 + t * t))
    t2 = t * t
    series = 0.0
    for k in range(8, -1, -1):  # t - t³/3 + ... + t¹⁷/17
        series = (1.0 if k % 2 == 0 else -1.0) / (2 * k + 1) + t2 * series
    y = 4.0 * t * series
    return _with_sign_of(x, torch.where(big, math.pi / 2 - y, y))


def _asin(x):
    return 2.0 * _atan(x / (1.0 + torch.sqrt(1.0 - x * x)))


def _acos(x):
    return math.pi / 2 - _asin(x)


def _float_operands(*xs):
    """The operands in the op's result dtype (integers promote to the default
    float), widened to float32 when narrower; and that dtype."""
    dtype = torch.result_type(*xs)
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    compute = torch.float32 if dtype in (torch.bfloat16, torch.float16) else dtype
    return [torch.as_tensor(x).to(compute) for x in xs], dtype


def _atan2(y, x):
    (y, x), dtype = _float_operands(y, x)
    base = _atan(y / torch.where(x == 0, 1.0, x))
    half_turn = torch.where(y < 0, -math.pi, math.pi)
    result = torch.where(x < 0, base + half_turn, base)
    on_y_axis = torch.where(y > 0, math.pi / 2, torch.where(y < 0, -math.pi / 2, 0.0))
    result = torch.where(x == 0, on_y_axis, result)
    corner = torch.where(x > 0, math.pi / 4, 3 * math.pi / 4)
    both_inf = torch.isinf(x) & torch.isinf(y)
    result = torch.where(both_inf, _with_sign_of(y, corner), result)
    result = torch.where(torch.isnan(x) | torch.isnan(y), x + y, result)
    return result.to(dtype)


def _logaddexp2(a, b):
    m = torch.maximum(a, b)
    spread = torch.log1p(_exp2(-torch.abs(a - b))) * (1.0 / math.log(2.0))
    return torch.where(a == b, a + 1.0, m + spread)


def _on_floats(fn: Callable) -> Callable:
    """A unary rewrite applied to integer and bool inputs in the default float
    dtype, as torch promotes them (``-x`` of a bool tensor would not trace)."""
    def rewrite(x):
        if isinstance(x, torch.Tensor) and not x.is_floating_point():
            x = x.to(torch.get_default_dtype())
        return fn(x)
    return rewrite


def math_decompositions() -> dict[torch._ops.OperatorBase, Callable]:
    unary = {aten.log2: _log2, aten.log10: _log10, aten.exp2: _exp2, aten.expm1: _expm1,
             aten.sinh: _sinh, aten.cosh: _cosh, aten.tan: _tan, aten.asinh: _asinh,
             aten.acosh: _acosh, aten.atanh: _atanh, aten.atan: _atan, aten.asin: _asin,
             aten.acos: _acos}
    table = {op.default: _on_floats(fn) for op, fn in unary.items()}
    table[aten.atan2.default] = _atan2
    table[aten.logaddexp2.default] = _logaddexp2
    return table
