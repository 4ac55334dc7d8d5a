"""Bool comparisons, bool mul, bool max/min and integer matmuls through
nova.compile (nova.frontend.decompose_dtypes), against torch eager, exactly."""

from __future__ import annotations

import pytest
import torch

import nova


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


def _bools(*shape):
    return torch.rand(*shape) > 0.5


def _ints(*shape):
    return torch.randint(-50, 50, shape, dtype=torch.int64)


def _same(fn, *args):
    want = fn(*args)
    got = nova.compile(fn, *args)(*args)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert torch.equal(g, w), (g, w)


@pytest.mark.parametrize("fn", [torch.ge, torch.gt, torch.le, torch.lt, torch.mul,
                                torch.maximum, torch.minimum],
                         ids=lambda f: f.__name__)
def test_bool_binary_ops_match_eager(fn):
    _same(fn, _bools(3, 8), _bools(3, 8))


def test_bool_comparison_with_a_scalar_and_reductions_match_eager():
    x = _bools(4, 8)
    _same(lambda t: (t > False, t <= True), x)
    _same(lambda t: (torch.amax(t, 1), torch.amin(t, 0)), x)
    _same(lambda t: torch.max(t, 1), x)


def test_integer_matmuls_match_eager():
    _same(torch.mm, _ints(3, 5), _ints(5, 4))
    _same(torch.bmm, _ints(2, 3, 5), _ints(2, 5, 4))
    _same(lambda c, a, b: torch.addmm(c, a, b), _ints(3, 4), _ints(3, 5), _ints(5, 4))
    _same(torch.matmul, _ints(2, 3, 5), _ints(5, 4))


def test_float_ops_keep_their_lowering():
    # The rewrites leave other dtypes to the matrix engine and the vector unit.
    a, b = torch.randn(3, 5), torch.randn(5, 4)
    torch.testing.assert_close(nova.compile(torch.mm, a, b)(a, b), a @ b,
                               rtol=1e-4, atol=1e-5)
    x = torch.randn(3, 8)
    torch.testing.assert_close(nova.compile(torch.gt, x, 0.1)(x, 0.1), x > 0.1)
