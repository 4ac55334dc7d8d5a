"""1-D and 3-D convolutions compiled through 2-D ones
(nova.frontend.decompose_conv), and 3-D average pooling
(nova.frontend.decompose_pooling), against eager."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
import torch.nn.functional as F

import nova

CASES = {
    "conv1d": (lambda: nn.Conv1d(3, 4, 3), (2, 3, 10)),
    "conv1d_strided_padded_dilated_grouped": (
        lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2), (2, 4, 11)),
    # One output channel per group and a single output column: unit dims
    # everywhere in the group's slices (an nova-opt abort and an
    # out-of-bounds slice from MLIR's slice folds, until the decomposition
    # stopped emitting rank-reducing slices).
    "conv1d_grouped_unit_filters": (
        lambda: nn.Conv1d(4, 2, 3, stride=3, padding=1, dilation=2, groups=2), (2, 4, 8)),
    "conv2d_grouped_strided_dilated_one_column": (
        lambda: nn.Conv2d(4, 2, 3, stride=(3, 2), padding=(2, 1), dilation=4, groups=2),
        (2, 4, 8, 8)),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(3, 2, 3, stride=2), (1, 3, 5)),
    "conv3d": (lambda: nn.Conv3d(2, 3, 2), (1, 2, 4, 4, 4)),
    "conv3d_grouped": (lambda: nn.Conv3d(2, 4, 2, groups=2), (1, 2, 4, 4, 4)),
    "conv3d_depth_strided_padded": (
        lambda: nn.Conv3d(2, 3, (3, 1, 1), stride=(2, 1, 1), padding=(1, 0, 0)), (1, 2, 5, 3, 3)),
    # Height/width stride and padding: the padded rank-5 copy collapses into
    # the 4-D tile descriptor (unit batch dropped).
    "conv3d_spatially_strided_padded": (
        lambda: nn.Conv3d(2, 3, 3, stride=(1, 2, 2), padding=1), (1, 2, 4, 6, 6)),
    "conv_transpose3d": (lambda: nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1), (1, 2, 3, 4, 4)),
    "conv_transpose3d_output_padding_dilated": (
        lambda: nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1, output_padding=1, dilation=(1, 2, 1)),
        (1, 2, 3, 4, 4)),
    "conv_transpose2d_grouped": (
        lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2), (1, 4, 4, 4)),
    "avg_pool3d": (lambda: nn.AvgPool3d(2), (2, 3, 5, 6, 7)),
    "avg_pool3d_strided_padded": (lambda: nn.AvgPool3d(3, stride=2, padding=1), (2, 3, 5, 6, 7)),
    "avg_pool3d_exclude_pad_ceil": (
        lambda: nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        (2, 3, 5, 6, 7)),
    "avg_pool3d_divisor_override": (lambda: nn.AvgPool3d(2, divisor_override=3), (1, 2, 4, 4, 4)),
    "max_pool3d": (lambda: nn.MaxPool3d(2), (1, 2, 4, 6, 6)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_convolution_matches_eager(name):
    make, shape = CASES[name]
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(*shape)
    program = nova.compile(model, x)
    torch.testing.assert_close(program(x), model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["conv1d", "conv_transpose2d_grouped", "conv3d",
                                  "conv_transpose3d"])
def test_bfloat16_matches_eager(name):
    """bf16 convolutions run in f32 and round once: bit for bit the f32
    convolution rounded to bf16, and at least as close to float64 as eager.
    (Eager's bf16 kernels do the same on some CPUs; on AVX2 its transposed
    convolutions round partial sums, up to 2x further from float64.)"""
    make, shape = CASES[name]
    torch.manual_seed(0)
    model = make().eval().to(torch.bfloat16)
    x = torch.randn(*shape).to(torch.bfloat16)
    got = nova.compile(model, x)(x)
    assert got.dtype == torch.bfloat16
    once = copy.deepcopy(model).float()(x.float()).to(torch.bfloat16)
    assert torch.equal(got, once)
    exact = copy.deepcopy(model).double()(x.double())
    assert (got.double() - exact).abs().max() <= (model(x).double() - exact).abs().max()


def test_integer_avg_pool3d_keeps_its_dtype():
    x = torch.randint(-50, 50, (1, 2, 4, 5, 5))
    pool = nn.AvgPool3d(2, stride=1, padding=1)
    got = nova.compile(pool, x)(x)
    assert got.dtype == torch.int64
    torch.testing.assert_close(got, pool(x))


def _integer_conv(op, **kw):
    class Conv(nn.Module):
        def forward(self, x, w, b):
            return op(x, w, b, **kw)
    return Conv()


@pytest.mark.parametrize("op, x, w, kw", [
    (F.conv1d, (2, 3, 9), (4, 3, 3), dict(stride=2, padding=1)),
    (F.conv2d, (1, 3, 5, 5), (4, 3, 3, 3), {}),
    (F.conv2d, (2, 4, 8, 8), (2, 2, 3, 3), dict(stride=(3, 2), padding=(2, 1), groups=2,
                                                 dilation=4)),
    (F.conv_transpose1d, (1, 3, 4), (3, 2, 3), dict(stride=2)),
    (F.conv3d, (1, 2, 4, 4, 4), (3, 2, 2, 2, 2), {}),
], ids=["conv1d", "conv2d", "conv2d_grouped_dilated", "conv_transpose1d", "conv3d"])
def test_integer_convolution_is_exact(op, x, w, kw):
    """int64 convolutions: the products and channel sums on the vector unit
    (the matrix unit takes floats), exactly eager's integers."""
    torch.manual_seed(0)
    out_channels = w[1] * kw.get("groups", 1) if op is F.conv_transpose1d else w[0]
    args = (torch.randint(-20, 20, x), torch.randint(-20, 20, w),
            torch.randint(-20, 20, (out_channels,)))
    model = _integer_conv(op, **kw)
    got = nova.compile(model, *args)(*args)
    assert got.dtype == torch.int64
    assert torch.equal(got, model(*args))


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.AvgPool1d(3, stride=2, padding=1), (2, 3, 11)),
    (lambda: nn.LocalResponseNorm(3), (1, 6, 3)),
], ids=["avg_pool1d", "local_response_norm"])
def test_integer_pooling_matches_eager(make, shape):
    x = torch.randint(-50, 50, shape)
    pool = make()
    got = nova.compile(pool, x)(x)
    assert got.dtype == pool(x).dtype
    torch.testing.assert_close(got, pool(x))


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.AvgPool1d(3, stride=2, padding=1), (2, 3, 11)),
    (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (2, 3, 9, 9)),
    (lambda: nn.AvgPool2d(2, ceil_mode=True, divisor_override=3), (1, 2, 5, 5)),
], ids=["avg_pool1d", "avg_pool2d_exclude_pad", "avg_pool2d_ceil_divisor"])
def test_bfloat16_avg_pool_rounds_once(make, shape):
    """bf16 average pooling sums its window in f32 and rounds the mean once, as
    eager's CPU kernel does: equal to eager bf16, not merely close."""
    torch.manual_seed(0)
    pool = make()
    x = torch.randn(*shape).to(torch.bfloat16)
    got = nova.compile(pool, x)(x)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got, pool(x), rtol=0, atol=0)


def test_bfloat16_avg_pool3d_rounds_once():
    # Eager has no bf16 avg_pool3d on CPU: the reference is f32, rounded once.
    torch.manual_seed(0)
    pool = nn.AvgPool3d(2, stride=1, padding=1)
    x = torch.randn(1, 2, 4, 5, 5).to(torch.bfloat16)
    got = nova.compile(pool, x)(x)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got, pool(x.float()).to(torch.bfloat16), rtol=0, atol=0)


@pytest.mark.parametrize("n, shape, kw", [
    (2, (2, 3, 6, 7), dict(kernel_size=3, stride=2, padding=1)),
    (2, (1, 2, 5, 5), dict(kernel_size=2, stride=1)),  # overlapping windows: sums
    (3, (1, 2, 4, 5, 4), dict(kernel_size=2, stride=2)),
], ids=["2d_padded", "2d_overlapping", "3d"])
def test_max_pool_backward_matches_eager(n, shape, kw):
    """aten.max_pool{2,3}d_with_indices_backward as a scatter_add of the
    output gradient at the forward's indices (no tm_tensor.scatter)."""
    torch.manual_seed(0)
    pool = F.max_pool2d if n == 2 else F.max_pool3d
    backward = (torch.ops.aten.max_pool2d_with_indices_backward if n == 2
                else torch.ops.aten.max_pool3d_with_indices_backward)
    x = torch.randn(*shape)
    out, indices = pool(x, return_indices=True, **kw)
    grad = torch.randn(out.shape)
    k, s, p = kw["kernel_size"], kw.get("stride", kw["kernel_size"]), kw.get("padding", 0)

    class Backward(nn.Module):
        def forward(self, g, x, i):
            return backward(g, x, [k] * n, [s] * n, [p] * n, [1] * n, False, i)

    model = Backward()
    torch.testing.assert_close(nova.compile(model, grad, x, indices)(grad, x, indices),
                               model(grad, x, indices))
