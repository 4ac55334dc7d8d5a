"""Max pooling through nova.compile (nova.frontend.decompose_pooling), against
torch eager: values and indices exactly, with padding, dilation, ceil_mode,
unbatched inputs and NaN."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import nova
from nova.frontend.decompose_pooling import _max_pool_with_indices

aten = torch.ops.aten


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


CASES = [
    (2, (2, 3, 7, 9), dict(kernel_size=(3, 2), stride=(2, 1), padding=1, ceil_mode=True)),
    (2, (3, 8, 8), dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=2, stride=2, ceil_mode=True)),
]


@pytest.mark.parametrize("n,shape,kwargs", CASES)
def test_rewrite_matches_aten_with_nan(n, shape, kwargs):
    x = torch.randn(shape)
    x.view(-1)[::7] = float("nan")
    op = aten.max_pool2d_with_indices if n == 2 else aten.max_pool3d_with_indices
    want, got = op(x, **kwargs), _max_pool_with_indices(n)(x, **kwargs)
    assert torch.equal(want[0].nan_to_num(7.0), got[0].nan_to_num(7.0))
    assert torch.equal(want[1], got[1])


def test_max_pool_1d_2d_compile_and_match_eager():
    x = torch.randn(2, 3, 6, 10)
    fn = lambda t: (F.max_pool2d(t, 3, stride=2, padding=1, return_indices=True),  # noqa: E731
                    F.max_pool1d(t[:, :, 0], 2, ceil_mode=True))
    (values, indices), pooled = nova.compile(fn, x)(x)
    (want_values, want_indices), want_pooled = fn(x)
    torch.testing.assert_close(values, want_values, rtol=0, atol=0)
    assert torch.equal(indices, want_indices)
    torch.testing.assert_close(pooled, want_pooled, rtol=0, atol=0)


def test_max_pool_bfloat16_matches_eager():
    x = torch.randn(1, 2, 8, 8).to(torch.bfloat16)
    fn = lambda t: F.max_pool2d(t, 2)  # noqa: E731
    assert torch.equal(nova.compile(fn, x)(x), fn(x))
