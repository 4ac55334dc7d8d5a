"""Tensors of rank above the tile descriptor's 4 (collapsed to what it holds,
nova-collapse-rank) and the stacking ops (stack, roll, diag, diag_embed),
compiled and run against eager."""

from __future__ import annotations

import pytest
import torch

import nova


def _same(fn, *args, **tol):
    class M(torch.nn.Module):
        def forward(self, *xs):
            return fn(*xs)
    got = nova.compile(M(), *args)(*args)
    want = fn(*args)
    if isinstance(want, torch.Tensor):
        got, want = (got,), (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, w, **tol)


RANK6 = (2, 3, 2, 4, 3, 5)

CASES = {
    "rank6_elementwise": (lambda x, y: torch.tanh(x) * y + 1.0, (RANK6, RANK6)),
    "rank6_broadcast": (lambda x, y: x - y, (RANK6, (1, 3, 1, 4, 1, 5))),
    "rank6_sum_inner": (lambda x: x.sum(-1), (RANK6,)),
    "rank6_mean_middle": (lambda x: x.mean((1, 3)), (RANK6,)),
    "rank6_amax_outer": (lambda x: x.amax(0), (RANK6,)),
    "rank6_softmax": (lambda x: torch.softmax(x, 2), (RANK6,)),
    "rank6_permute": (lambda x: x.permute(5, 1, 0, 4, 2, 3) * 2.0, (RANK6,)),
    "rank7_elementwise": (lambda x: torch.exp(x) - x, ((2, 1, 3, 2, 2, 3, 2),)),
    "stack": (lambda x, y: torch.stack([x, y, x * y], 1), ((4, 5), (4, 5))),
    "stack_rank5": (lambda x, y: torch.stack([x, y], -1), ((2, 3, 2, 4), (2, 3, 2, 4))),
    "roll": (lambda x: torch.roll(x, (2, -1), (0, 2)), ((5, 3, 4),)),
    "roll_flat": (lambda x: torch.roll(x, 7), ((4, 6),)),
    "diag": (lambda x: torch.diag(x), ((6, 6),)),
    "diag_offset": (lambda x: torch.diag(x, 1), ((5, 7),)),
    "diag_embed": (lambda x: torch.diag_embed(x), ((3, 4),)),
    # Gathers from rank-5 tensors read a collapse of the leading dimensions.
    "trilinear_rank5_gather": (
        lambda x: torch.nn.functional.interpolate(x, size=(3, 5, 6), mode="trilinear"),
        ((2, 3, 4, 3, 5),)),
    "adaptive_avg_pool3d_rank5_gather": (
        lambda x: torch.nn.functional.adaptive_avg_pool3d(x, (2, 3, 2)), ((1, 2, 5, 4, 7),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(name):
    fn, shapes = CASES[name]
    torch.manual_seed(0)
    _same(fn, *(torch.randn(*s) for s in shapes), rtol=1e-4, atol=1e-5)


def test_rank6_var_mean():
    x = torch.randn(*RANK6)
    _same(lambda t: torch.var_mean(t, (2, 4), correction=1), x, rtol=1e-4, atol=1e-5)
