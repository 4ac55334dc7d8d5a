"""1-D and 3-D convolutions as the 2-D ones Nova lowers
(``nova-decompose-conv`` takes 2-D convolutions, grouped, dilated, strided and
transposed, but torch-mlir gives 1-D and 3-D ones their own linalg ops).

- bf16/f16: computed in f32 and rounded once (at the f32 matrix rate).
- Grouped transposed (any rank): one ungrouped transposed convolution per group.
- 1-D: a unit height, ``[N, C, L] -> [N, C, 1, L]`` and the kernel likewise;
  transposed ones too.
- 3-D: each output depth slice is the sum over the kernel's depth taps of a
  2-D convolution of one input depth slice (strided, dilated; taps in the
  padding left out) with that tap's 2-D kernel. ``D_out x K_d`` 2-D convolutions, exact up to
  the order of the sums.
- Transposed 3-D: input depth slice ``d`` and depth tap ``k`` feed output depth
  ``d * stride - padding + k * dilation``; each output depth slice is the sum of
  the transposed 2-D convolutions that land on it.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F

aten = torch.ops.aten


def _convolution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                 stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                 transposed: bool, output_padding: Sequence[int], groups: int):
    if x.dtype in (torch.bfloat16, torch.float16):
        # nova-decompose-conv takes one element type; torch's CPU kernel
        # accumulates in f32 and rounds the result once, which this does too.
        wide = aten.convolution.default(
            x.float(), weight.float(), None if bias is None else bias.float(), stride,
            padding, dilation, transposed, output_padding, groups)
        return wide.to(x.dtype)
    if transposed and groups > 1:
        # torch-mlir expands a grouped transposed kernel with a rank-5 gather;
        # each group is an ungrouped transposed convolution of its channels.
        cin, cout = x.shape[1] // groups, weight.shape[1]
        return torch.cat([
            aten.convolution.default(
                x[:, g * cin:(g + 1) * cin], weight[g * cin:(g + 1) * cin],
                None if bias is None else bias[g * cout:(g + 1) * cout], stride, padding,
                dilation, True, output_padding, 1)
            for g in range(groups)], 1)
    if x.dim() == 3:
        out = aten.convolution.default(
            x.unsqueeze(2), weight.unsqueeze(2), bias, [1, *stride], [0, *padding],
            [1, *dilation], transposed, [0, *output_padding], groups)
        return out.squeeze(2)
    if x.dim() == 5 and not transposed:
        return _conv3d(x, weight, bias, stride, padding, dilation, groups)
    if x.dim() == 5:
        return _conv_transpose3d(x, weight, bias, stride, padding, dilation, output_padding,
                                 groups)
    return NotImplemented


def _stack_depth(slices: list, like: Callable[[], torch.Tensor], bias) -> torch.Tensor:
    """Output depth slices (None: no tap reaches it, zeros) stacked, plus the bias."""
    zero = None
    for i, piece in enumerate(slices):
        if piece is None:
            if zero is None:
                zero = torch.zeros_like(like())
            slices[i] = zero
    out = torch.stack(slices, 2)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out


def _conv_transpose3d(x, weight, bias, stride, padding, dilation, output_padding, groups):
    sd, pd, dd = stride[0], padding[0], dilation[0]
    kd, length = weight.shape[2], x.shape[2]
    depth = (length - 1) * sd - 2 * pd + dd * (kd - 1) + output_padding[0] + 1

    def tap(d: int, k: int) -> torch.Tensor:
        return aten.convolution.default(x[:, :, d], weight[:, :, k], None, list(stride[1:]),
                                        list(padding[1:]), list(dilation[1:]), True,
                                        list(output_padding[1:]), groups)

    slices: list = [None] * depth
    for d in range(length):
        for k in range(kd):
            od = d * sd - pd + k * dd
            if 0 <= od < depth:
                t = tap(d, k)
                slices[od] = t if slices[od] is None else slices[od] + t
    return _stack_depth(slices, lambda: tap(0, 0), bias)


def _conv3d(x, weight, bias, stride, padding, dilation, groups):
    sd, pd, dd = stride[0], padding[0], dilation[0]
    kd, length = weight.shape[2], x.shape[2]
    depth = (length + 2 * pd - dd * (kd - 1) - 1) // sd + 1

    def tap(d: int, k: int) -> torch.Tensor:
        return aten.convolution.default(x[:, :, d], weight[:, :, k], None, list(stride[1:]),
                                        list(padding[1:]), list(dilation[1:]), False,
                                        [0, 0], groups)

    # Taps that fall in the depth padding add zeros: they are left out (no
    # padded rank-5 copy of the input).
    slices = []
    for od in range(depth):
        terms = [tap(od * sd + k * dd - pd, k) for k in range(kd)
                 if 0 <= od * sd + k * dd - pd < length]
        slices.append(sum(terms[1:], terms[0]) if terms else None)
    return _stack_depth(slices, lambda: tap(0, 0), bias)


def conv_decompositions() -> dict[torch._ops.OperatorBase, Callable]:
    return {aten.convolution.default: _convolution}
