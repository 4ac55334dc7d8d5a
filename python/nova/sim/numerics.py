"""Element types and the elementwise / reduction math of the vector unit, on numpy.

Everything is computed in float32; bf16 is the top 16 bits of a float32 (rounded to
nearest even on the way in), f16 is numpy's float16.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import opcodes as oc


def bf16_bits_to_f32(u16: np.ndarray) -> np.ndarray:
    return (u16.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Rounds float32 to bf16 (nearest even), NaN stays NaN; returns the uint16 bits."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        rounded = np.where(nan, np.uint16(0x7FC0), rounded)
    return rounded


def round_to(x: np.ndarray, dtype: int) -> np.ndarray:
    """Rounds float32 values to ``dtype`` and back to float32 (the value a write stores)."""
    if dtype == oc.F32:
        return np.asarray(x, dtype=np.float32)
    if dtype == oc.BF16:
        return bf16_bits_to_f32(f32_to_bf16_bits(np.asarray(x, dtype=np.float32)))
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 refined by one Newton step on erf: |err| < 1e-7.
    x = np.asarray(x, dtype=np.float64)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return (s * y).astype(np.float32)


def _f(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    return fn


_one = np.float32(1.0)
_zero = np.float32(0.0)

UNARY: dict[int, Callable[[np.ndarray], np.ndarray]] = {
    0: lambda x: x,
    1: np.negative,
    2: np.abs,
    3: np.exp,
    4: np.log,
    5: np.sqrt,
    6: lambda x: _one / np.sqrt(x),
    7: lambda x: _one / x,
    8: np.tanh,
    9: _erf,
    10: lambda x: _one / (_one + np.exp(-x)),
    11: lambda x: np.maximum(x, _zero),
}


def _cmp(op: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return lambda x, z: op(x, z).astype(np.float32)


BINARY: dict[int, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    32: np.add, 33: np.subtract, 34: np.multiply, 35: np.divide, 36: np.maximum,
    37: np.minimum, 38: np.power,
    39: _cmp(np.equal), 40: _cmp(np.not_equal), 41: _cmp(np.less), 42: _cmp(np.less_equal),
    43: _cmp(np.greater), 44: _cmp(np.greater_equal),
}


def reduce_axis(x: np.ndarray, kind: int, axis: int) -> np.ndarray:
    if kind == oc.R_SUM:
        return np.sum(x, axis=axis, keepdims=True, dtype=np.float32)
    if kind == oc.R_MAX:
        return np.max(x, axis=axis, keepdims=True)
    if kind == oc.R_MIN:
        return np.min(x, axis=axis, keepdims=True)
    if kind == oc.R_AVG:
        return np.mean(x, axis=axis, keepdims=True, dtype=np.float32)
    raise ValueError(f"unknown reduction kind {kind}")


def reduce_stack(xs: list[np.ndarray], kind: int) -> np.ndarray:
    """Reduces a list of equally shaped arrays elementwise (collectives)."""
    acc = np.array(xs[0], dtype=np.float32, copy=True)
    op = {oc.R_SUM: np.add, oc.R_AVG: np.add, oc.R_MAX: np.maximum, oc.R_MIN: np.minimum}.get(kind)
    if op is None:
        raise ValueError(f"unknown reduction kind {kind}")
    for x in xs[1:]:
        op(acc, x, out=acc)
    if kind == oc.R_AVG:
        acc /= np.float32(len(xs))
    return acc
