"""Payload math the vector unit has no instruction for, expanded by upstream's
math-expand-ops in nova-linalg-normalize (hyperbolic functions and tan as
exp / log / sqrt / sin / cos), against eager."""

from __future__ import annotations

import pytest
import torch

import nova

CASES = {
    "sinh": (torch.sinh, lambda: torch.randn(4, 8)),
    "cosh": (torch.cosh, lambda: torch.randn(4, 8)),
    "tan": (torch.tan, lambda: torch.rand(4, 8) * 2.4 - 1.2),
    "asinh": (torch.asinh, lambda: torch.randn(4, 8) * 3),
    "acosh": (torch.acosh, lambda: torch.rand(4, 8) * 5 + 1.01),
    "atanh": (torch.atanh, lambda: torch.rand(4, 8) * 1.8 - 0.9),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_expanded_math_matches_eager(name):
    fn, make = CASES[name]

    class Op(torch.nn.Module):
        def forward(self, x):
            return fn(x)

    torch.manual_seed(0)
    x = make()
    program = nova.compile(Op(), x, target="nova-t1")
    torch.testing.assert_close(program(x), fn(x), rtol=1e-4, atol=1e-5)


def test_reciprocal_of_integers_and_bools_is_inf_at_zero_as_eager():
    # torch-mlir's integer reciprocal asserts a nonzero input; Nova divides
    # in float (1 / 0 = inf, as eager), on the vector unit's recip.
    class Reciprocal(torch.nn.Module):
        def forward(self, i, b):
            return torch.reciprocal(i), torch.reciprocal(b)

    i = torch.tensor([[0, 1, -2, 3, 7]])
    b = torch.tensor([True, False, True])
    model = Reciprocal()
    for got, want in zip(nova.compile(model, i, b)(i, b), model(i, b)):
        torch.testing.assert_close(got, want)
