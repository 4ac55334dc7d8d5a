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


_AXES = [0.0, 1.0, -1.0, 2.5, -2.5, float("inf"), -float("inf"), float("nan")]


def _grid():
    """Every pair of a range and the axis/infinity/NaN edges: (y, x)."""
    torch.manual_seed(0)
    ys = torch.cat([torch.randn(300) * 10, torch.tensor(_AXES)])
    xs = torch.cat([torch.randn(300) * 10, torch.tensor(_AXES)])
    y, x = torch.meshgrid(ys[-len(_AXES):], xs[-len(_AXES):], indexing="ij")
    return torch.cat([ys, y.flatten()]).reshape(1, -1), torch.cat([xs, x.flatten()]).reshape(1, -1)


@pytest.mark.parametrize("name,fn", [("atan2", torch.atan2), ("logaddexp2", torch.logaddexp2)])
def test_binary_matches_eager_on_edges(name, fn):
    y, x = _grid()
    program = nova.compile(fn, y, x)
    torch.testing.assert_close(program(y, x), fn(y, x), rtol=1e-4, atol=1e-5, equal_nan=True)


def test_atan2_integer_and_bfloat16_operands():
    yi, xi = torch.tensor([[3, -3, 0, 5, -7]]), torch.tensor([[-2, -2, -4, 0, 1]])
    got = nova.compile(torch.atan2, yi, xi)(yi, xi)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, torch.atan2(yi, xi))
    y, x = (t.to(torch.bfloat16) for t in _grid())
    got = nova.compile(torch.atan2, y, x)(y, x)
    assert got.dtype == torch.bfloat16
    # Computed in float32 and rounded once: equal to eager's kernel.
    torch.testing.assert_close(got, torch.atan2(y, x), rtol=1.6e-2, atol=1e-5, equal_nan=True)
