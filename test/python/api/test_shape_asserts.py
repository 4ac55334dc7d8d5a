"""Scalars read with .item() and the symbolic-shape asserts on them
(torch._check, torch._check_is_size, torch.sym_constrain_range): the program
computes with the scalar as eager does, and a failed check faults at run time
(nova.frontend.shape_asserts)."""

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


def _checked(x, n):
    k = n.item()
    torch._check(k >= 0)
    torch._check(k < 5)
    return x * k


def _constrained(x, n):
    k = n.item()
    torch.sym_constrain_range(k, min=0, max=10)
    return x + k


def _size(x, n):
    k = n.item()
    torch._check_is_size(k)
    return x[:, :1] * k


X = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("fn", [_checked, _constrained, _size], ids=lambda f: f.__name__)
def test_item_scalars_and_asserts_match_eager(fn) -> None:
    n = torch.tensor(3)
    program = nova.compile(_Fn(fn), X, n)
    torch.testing.assert_close(program(X, n), fn(X, n), rtol=1e-6, atol=0)
    torch.testing.assert_close(program(X, torch.tensor(4)), fn(X, torch.tensor(4)),
                               rtol=1e-6, atol=0)


@pytest.mark.parametrize("fn, bad", [(_checked, 7), (_checked, -1), (_constrained, 11)],
                         ids=["above", "below", "range"])
def test_a_failed_check_faults_at_run_time(fn, bad: int) -> None:
    from nova.sim.errors import EngineFaultError

    program = nova.compile(_Fn(fn), X, torch.tensor(3))
    with pytest.raises(EngineFaultError, match="outside"):
        program(X, torch.tensor(bad))
