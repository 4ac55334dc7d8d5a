"""Integer arithmetic on bool tensors as torch-mlir emits it (abs, mul,
signed and unsigned compares, prod/amax reductions on i1), against eager.
The vector unit holds bools as 0/1 and orders them false < true."""

from __future__ import annotations

import pytest
import torch

import nova


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def _bools(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) < 0.5


CASES = {
    "atan": (torch.atan, (_bools(6, 7),)),
    "expm1": (torch.expm1, (_bools(6, 7),)),
    "hyperbolic": (lambda a: (torch.sinh(a), torch.cosh(a), torch.atanh(a * 0.5)),
                   (_bools(6, 7),)),
    "copysign": (torch.copysign, (_bools(5), _bools(5, seed=1))),
    "logit": (torch.logit, (_bools(3, 4, 5),)),
    "entr": (torch.special.entr, (_bools(20),)),
    "lt_gt": (lambda a, b: (a < b) | (a >= b).logical_not(), (_bools(4, 8), _bools(4, 8, seed=1))),
    "mul_max": (lambda a, b: (a * b, torch.maximum(a, b), torch.minimum(a, b)),
                (_bools(4, 8), _bools(4, 8, seed=2))),
    "amax_amin": (lambda a: (a.amax(1), a.amin(0)), (_bools(5, 6),)),
    # torch-mlir writes these as maxsi/minsi on i1 (signed: true < false);
    # the frontend computes them in int32, as torch orders bools.
    "clamp_min_max": (lambda a, b: (torch.clamp_max(a, b), torch.clamp_min(a, b)),
                      (_bools(5, 4), _bools(4, seed=5))),
    # Sorted as int32 (no unsigned tensors in Nova); stable, so the indices
    # are defined too.
    "sort_stable": (lambda a: torch.sort(a, dim=1, stable=True), (_bools(3, 9),)),
    "kthvalue": (lambda a: torch.kthvalue(a.int(), 3, 1).values.bool(), (_bools(3, 9),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bool_arithmetic_matches_eager(name):
    fn, args = CASES[name]
    model = _Fn(fn)
    got = nova.compile(model, *args)(*args)
    want = model(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True)


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
def test_scatter_reduce_of_bools(reduce):
    x = _bools(10, 5)
    src = _bools(5, 5, seed=3)
    index = torch.randint(0, 10, (5, 5), generator=torch.Generator().manual_seed(4))
    model = _Fn(lambda x, i, s: x.scatter_reduce(0, i, s, reduce))
    assert torch.equal(nova.compile(model, x, index, src)(x, index, src), model(x, index, src))
