"""Max pooling (and 3-D average pooling) as elementwise ops: one strided slice
of the padded input per kernel offset, folded with compare-and-select (or
added up and divided by the window's element count). torch-mlir lowers
``max_pool{1,2,3}d`` to ``linalg.pooling_*_max`` (values only) or a two-result
``linalg.generic`` (with indices), neither of which Nova lowers.

bf16/f16 average pooling (1-D, 2-D, 3-D) adds its window up in f32 and rounds
the mean once, as torch's CPU kernels do: summed tap by tap in bf16, every
partial sum would round (3 % off eager on a 3x3 window).

Exact, with torch's CPU choice of index: the first maximum in the window's
row-major order, and a NaN wins (the last NaN of the window). Padding is
``-inf`` (the dtype's minimum for integers), never chosen over an element of
the window. Costs ``k`` compare-and-selects over the output for a ``k``-element
kernel.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Sequence

import torch

aten = torch.ops.aten


def _tuple(value, n: int) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    return value * n if len(value) == 1 else value


def _out_size(length: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = length + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= length + p:
        out -= 1  # the last window would start in the right padding
    return out


def _max_pool_with_indices(n: int):
    def rewrite(x: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (),
                padding: Sequence[int] = 0, dilation: Sequence[int] = 1,
                ceil_mode: bool = False):
        k = _tuple(kernel_size, n)
        s = _tuple(stride, n) if stride else k
        p, d = _tuple(padding, n), _tuple(dilation, n)
        sizes = tuple(x.shape[-n:])
        outs = [_out_size(sizes[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(n)]
        fill = (float("-inf") if x.dtype.is_floating_point else torch.iinfo(x.dtype).min)
        pads = []
        for i in reversed(range(n)):  # constant_pad_nd takes the last dim first
            needed = (outs[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1
            pads += [p[i], max(needed - sizes[i] - p[i], 0)]
        padded = aten.constant_pad_nd(x, pads, fill)
        best = index = None
        for offset in itertools.product(*(range(ki) for ki in k)):
            window = padded
            flat = None
            for i in range(n):
                start = offset[i] * d[i]
                dim = x.dim() - n + i
                window = aten.slice(window, dim, start, start + (outs[i] - 1) * s[i] + 1, s[i])
                # The element's position in the unpadded input, flattened over the pooled dims.
                pos = torch.arange(outs[i], dtype=torch.int64, device=x.device) * s[i] + (
                    start - p[i])
                pos = pos.reshape((outs[i],) + (1,) * (n - 1 - i))
                flat = pos if flat is None else flat * sizes[i] + pos
            if best is None:
                best, index = window, flat.expand(window.shape)
                continue
            take = window > best
            if x.dtype.is_floating_point:
                take = take | torch.isnan(window)
            best = torch.where(take, window, best)
            index = torch.where(take, flat, index)
        return best, index
    return rewrite


def _window_sum(padded: torch.Tensor, n: int, k, s, outs) -> torch.Tensor:
    """The sum over each pooling window (no dilation) of an already padded tensor."""
    total = None
    for offset in itertools.product(*(range(ki) for ki in k)):
        window = padded
        for i in range(n):
            dim = padded.dim() - n + i
            window = aten.slice(window, dim, offset[i], offset[i] + (outs[i] - 1) * s[i] + 1, s[i])
        total = window if total is None else total + window
    return total


def _avg_pool3d(x: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (),
                padding: Sequence[int] = 0, ceil_mode: bool = False,
                count_include_pad: bool = True, divisor_override: int | None = None):
    """torch-mlir lowers avg_pool3d to ``linalg.pooling_ndhwc_sum``, which Nova does
    not lower. The divisor is torch's: the window's elements inside the padded
    input (``count_include_pad``) or inside the input, unless overridden; it is a
    constant of the shapes, computed here on the host."""
    n = 3
    k = _tuple(kernel_size, n)
    st = _tuple(stride, n) if stride else k
    p = _tuple(padding, n)
    sizes = tuple(x.shape[-n:])
    outs = [_out_size(sizes[i], k[i], st[i], p[i], 1, ceil_mode) for i in range(n)]
    pads, extra = [], []
    for i in reversed(range(n)):  # constant_pad_nd takes the last dim first
        needed = (outs[i] - 1) * st[i] + k[i]
        pads += [p[i], max(needed - sizes[i] - p[i], 0)]
    total = _window_sum(aten.constant_pad_nd(x, pads, 0.0), n, k, st, outs)
    if divisor_override:
        return _average(total / divisor_override, x)
    # The divisor is separable: per dimension, how many of a window's positions
    # fall in the counted range (the input, plus the explicit padding when
    # count_include_pad; never ceil_mode's extra right padding).
    count = None
    for i in range(n):
        lo, hi = (-p[i], sizes[i] + p[i]) if count_include_pad else (0, sizes[i])
        start = torch.arange(outs[i], dtype=torch.int64, device=x.device) * st[i] - p[i]
        c = torch.clamp(start + k[i], max=hi) - torch.clamp(start, min=lo)
        c = c.reshape((outs[i],) + (1,) * (n - 1 - i))
        count = c if count is None else count * c
    return _average(total / count.to(total.dtype if total.is_floating_point() else torch.float32),
                    x)


def _average(mean: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    # Integer inputs average in integers, as torch does: the quotient truncated.
    return mean if x.dtype.is_floating_point else mean.to(x.dtype)


_LOW_PRECISION = (torch.bfloat16, torch.float16)


def _avg_pool2d(x: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (),
                padding: Sequence[int] = 0, ceil_mode: bool = False,
                count_include_pad: bool = True, divisor_override: int | None = None):
    if x.dtype not in _LOW_PRECISION:
        return NotImplemented  # torch-mlir's linalg.pooling_nchw_sum
    return aten.avg_pool2d.default(x.float(), kernel_size, stride, padding, ceil_mode,
                                   count_include_pad, divisor_override).to(x.dtype)


def _avg_pool3d_any(x: torch.Tensor, *args):
    if x.dtype in _LOW_PRECISION:
        return _avg_pool3d(x.float(), *args).to(x.dtype)
    return _avg_pool3d(x, *args)


def _max_pool_backward(n: int):
    """The gradient of max pooling: each output gradient added at the input
    position its index names (indices are flat within each (N, C) plane, as
    torch's forward returns them), a scatter_add Nova decomposes."""
    def backward(grad: torch.Tensor, x: torch.Tensor, kernel_size, stride, padding,
                 dilation, ceil_mode, indices: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-n]
        plane = math.prod(x.shape[-n:])
        flat_grad = grad.reshape(*lead, -1)
        zeros = torch.zeros((*lead, plane), dtype=grad.dtype, device=grad.device)
        summed = aten.scatter_add.default(zeros, len(lead), indices.reshape(*lead, -1),
                                          flat_grad)
        return summed.reshape(x.shape)
    return backward


def pooling_decompositions() -> dict[torch._ops.OperatorBase, Callable]:
    return {
        aten.max_pool2d_with_indices_backward.default: _max_pool_backward(2),
        aten.max_pool3d_with_indices_backward.default: _max_pool_backward(3),
        aten.avg_pool2d.default: _avg_pool2d,
        aten.avg_pool3d.default: _avg_pool3d_any,
        aten.max_pool2d_with_indices.default: _max_pool_with_indices(2),
        aten.max_pool3d_with_indices.default: _max_pool_with_indices(3),
    }
