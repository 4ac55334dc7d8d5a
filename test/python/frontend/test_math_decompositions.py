"""Elementwise math without a vector instruction (nova.frontend.decompose_math),
compiled and run against eager over wide ranges and the edge values
(0, ±1, ±inf, NaN, huge and tiny arguments)."""

from __future__ import annotations

import pytest
import torch

import nova

EDGES = [0.0, -0.0, 1e-7, -1e-7, 1e-4, float("inf"), -float("inf"), float("nan"), 1e20, -1e20]


def _inputs(lo: float, hi: float, edges: list[float]) -> torch.Tensor:
    return torch.cat([torch.linspace(lo, hi, 4000), torch.tensor(edges)]).reshape(1, -1)


CASES = {
    "atan": (torch.atan, _inputs(-30, 30, EDGES)),
    "asin": (torch.asin, _inputs(-1, 1, [1.0, -1.0, 1.5, float("nan")])),
    "acos": (torch.acos, _inputs(-1, 1, [1.0, -1.0, -1.5, float("nan")])),
    "asinh": (torch.asinh, _inputs(-30, 30, EDGES)),
    "acosh": (torch.acosh, _inputs(1, 50, [1.0, 0.5, float("inf")])),
    "atanh": (torch.atanh, _inputs(-0.999, 0.999, [1.0, -1.0, 0.0, 2.0])),
    "sinh": (torch.sinh, _inputs(-10, 10, [0.0, 1e-6, -1e-6])),
    "cosh": (torch.cosh, _inputs(-10, 10, [0.0])),
    "tan": (torch.tan, _inputs(-1.5, 1.5, [0.0])),
    "log2": (torch.log2, _inputs(1e-6, 100, [0.0, float("inf"), -1.0])),
    "log10": (torch.log10, _inputs(1e-6, 100, [0.0, float("inf"), -1.0])),
    "exp2": (torch.exp2, _inputs(-20, 20, [float("-inf"), float("inf")])),
    "expm1": (torch.expm1, _inputs(-10, 10, [1e-7, -1e-6, 0.0, 1e-4])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(name):
    fn, x = CASES[name]
    program = nova.compile(fn, x)
    torch.testing.assert_close(program(x), fn(x), rtol=1e-4, atol=1e-5, equal_nan=True)
