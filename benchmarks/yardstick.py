"""Honest numpy yardsticks: float32 throughout, normal magnitudes, one run per figure.

A numpy side that a benchmark divides by must compute what it claims to:
* float32 only — under NumPy 2 a float32 array divided by an ``np.float64`` scalar
  (``np.sqrt(64)``) becomes float64, twice the bytes and a different BLAS; keep
  scalars as ``np.float32`` (:func:`f32`) and check every activation (:func:`check`);
* normal magnitudes — activations that shrink layer after layer end in denormals,
  which run ~100x slower on x86 (a GPT-2 yardstick's layer 3 took 3.0 s instead of
  ~33 ms) and then in zeros, which multiply fast and measure nothing;
  :func:`renormalise` rescales a layer's output as the model's LayerNorm would;
* every ratio from one run — both sides measured in the same process, printed
  together (:func:`best_of`).
"""

from __future__ import annotations

import time
from typing import Callable, Iterable

import numpy as np

TINY = np.finfo(np.float32).tiny  # smallest normal float32


def f32(value: float) -> np.float32:
    """A float32 scalar: multiplying a float32 array by it keeps float32."""
    return np.float32(value)


def check(name: str, x: np.ndarray) -> None:
    """Asserts ``x`` is float32, finite and has no denormal (nonzero below ``tiny``) values."""
    assert x.dtype == np.float32, f"{name}: dtype {x.dtype}, expected float32 (float64 promotion?)"
    assert np.isfinite(x).all(), f"{name}: non-finite values"
    a = np.abs(x)[x != 0]
    assert a.size, f"{name}: all zeros"
    assert a.min() > TINY, f"{name}: denormal values (min |x| {a.min():.3g} < {TINY:.3g})"


def check_all(named: Iterable[tuple[str, np.ndarray]]) -> int:
    """Checks every ``(name, array)``; returns how many were checked."""
    n = 0
    for name, x in named:
        check(name, x)
        n += 1
    return n


def renormalise(x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Zero mean, unit variance along the last axis, in float32 (a LayerNorm without
    affine): keeps a deep stack's activations at normal magnitudes."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + f32(eps))


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time (s) of ``repeat`` calls of ``fn``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
