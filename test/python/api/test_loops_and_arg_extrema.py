"""Programs torch-mlir lowers to scf.for loops (det and its relatives,
unrolled by nova-unroll-loops) and to coupled maximum-and-index reductions
(adaptive max pooling with indices, split by nova-erase-dead-generic-results),
compiled and run against eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import nova
from nova.compiler.errors import NovaError


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _run(fn, *args):
    got = nova.compile(_Fn(fn), *args)(*args)
    return got if isinstance(got, tuple) else (got,)


def _well_conditioned(n: int, batch=()) -> torch.Tensor:
    # torch-mlir's det eliminates without pivoting: keep the pivots away from 0.
    torch.manual_seed(n)
    return torch.randn(*batch, n, n) + 4.0 * torch.eye(n)


@pytest.mark.parametrize("fn", [torch.linalg.det, torch.logdet],
                         ids=["det", "logdet"])
@pytest.mark.parametrize("n", [2, 5, 8])
def test_det_unrolled_matches_eager(fn, n):
    x = _well_conditioned(n)
    (got,) = _run(fn, x)
    torch.testing.assert_close(got, fn(x), rtol=1e-4, atol=1e-5)


def test_slogdet_matches_eager():
    x = _well_conditioned(6)
    sign, logabs = _run(lambda t: torch.linalg.slogdet(t), x)
    want = torch.linalg.slogdet(x)
    torch.testing.assert_close(sign, want.sign)
    torch.testing.assert_close(logabs, want.logabsdet, rtol=1e-4, atol=1e-5)


def test_det_too_many_iterations_is_a_named_error():
    # A 300x300 det is a loop of 299 eliminations: above the unroll limit.
    x = _well_conditioned(300)
    with pytest.raises(NovaError, match="scf.for.*299 iterations.*at most 256"):
        nova.compile(_Fn(torch.linalg.det), x)


@pytest.mark.parametrize("shape,out", [((1, 4, 4, 3, 5), (2, 2, 2)),
                                       ((2, 6, 5, 7), (3, 2, 4)),
                                       ((1, 2, 5, 4, 6), (None, 3, None))])
def test_adaptive_max_pool3d_indices_match_eager(shape, out):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    values, indices = _run(lambda t: F.adaptive_max_pool3d(t, out, return_indices=True), x)
    want_v, want_i = F.adaptive_max_pool3d(x, out, return_indices=True)
    torch.testing.assert_close(values, want_v)
    assert indices.dtype == torch.int64
    assert torch.equal(indices, want_i)


def test_adaptive_max_pool3d_ties_pick_the_first_index_as_eager():
    # Quantised values: every window holds equal maxima; eager returns the
    # first in scan order (the smallest flat index), and so does Nova.
    torch.manual_seed(1)
    x = torch.randint(0, 3, (1, 2, 4, 4, 4)).float()
    values, indices = _run(lambda t: F.adaptive_max_pool3d(t, 2, return_indices=True), x)
    want_v, want_i = F.adaptive_max_pool3d(x, 2, return_indices=True)
    torch.testing.assert_close(values, want_v)
    assert torch.equal(indices, want_i)


def test_adaptive_max_pool3d_propagates_nan_like_eager():
    torch.manual_seed(2)
    x = torch.randn(1, 1, 4, 4, 4)
    x[0, 0, 1, 2, 3] = float("nan")
    values, indices = _run(lambda t: F.adaptive_max_pool3d(t, 2, return_indices=True), x)
    want_v, want_i = F.adaptive_max_pool3d(x, 2, return_indices=True)
    torch.testing.assert_close(values, want_v, equal_nan=True)
    assert torch.equal(indices, want_i)


def test_adaptive_max_pool3d_values_only_bf16():
    torch.manual_seed(3)
    x = torch.randn(2, 3, 5, 4, 6).to(torch.bfloat16)
    (got,) = _run(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2)), x)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got, F.adaptive_max_pool3d(x, (2, 3, 2)), rtol=0, atol=0)


# 1-D and 2-D adaptive max pooling: torch-mlir computes the index as "the
# first window position equal to the maximum", from -1 (a minsi reduction
# after nova-erase-dead-generic-results).
@pytest.mark.parametrize("fn,shape,out", [
    (F.adaptive_max_pool1d, (3, 4, 4), 3),
    (F.adaptive_max_pool1d, (2, 3, 9), 8),
    (F.adaptive_max_pool2d, (1, 4, 4, 4), (3, 2)),
    (F.adaptive_max_pool2d, (2, 3, 5, 7), (4, 6)),
], ids=["1d", "1d_overlapping", "2d", "2d_overlapping"])
def test_adaptive_max_pool_indices_match_eager(fn, shape, out):
    torch.manual_seed(4)
    x = torch.randn(*shape)
    values, indices = _run(lambda t: fn(t, out, return_indices=True), x)
    want_v, want_i = fn(x, out, return_indices=True)
    torch.testing.assert_close(values, want_v)
    assert torch.equal(indices, want_i)


def test_adaptive_max_pool2d_ties_pick_the_first_index_as_eager():
    torch.manual_seed(5)
    x = torch.randint(0, 2, (2, 2, 5, 5)).float()
    values, indices = _run(lambda t: F.adaptive_max_pool2d(t, 4, return_indices=True), x)
    want_v, want_i = F.adaptive_max_pool2d(x, 4, return_indices=True)
    torch.testing.assert_close(values, want_v)
    assert torch.equal(indices, want_i)
