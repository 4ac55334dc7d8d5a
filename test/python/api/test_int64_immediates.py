"""int64 constants above 2**53 through nova.compile, bit-exact against torch
eager: a constant becomes an immediate (a nova.fill value or an elementwise
scalar) that must carry its exact 64 bits to the simulator. They were f64
attributes once, which rounded away the low bits of every such constant.

Multiplies, adds, xors, ands, comparisons, selects and splat fills with
SplitMix64's constants and the int64 extremes, on inputs spread over the
whole int64 range (wrapping arithmetic, as torch computes it)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import nova
from nova.frontend.random_bits import GAMMA, MIX1, MIX2, signed64

#: Constants no f64 holds exactly (and the extremes, which it does).
G, M1, M2 = signed64(GAMMA), signed64(MIX1), signed64(MIX2)
I64_MAX, I64_MIN = 2**63 - 1, -2**63
ODD = 2**53 + 1  # the first integer an f64 rounds


class Fn(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _wide(*shape: int) -> torch.Tensor:
    """int64 values over the whole range, plus values near 2**53."""
    x = torch.randint(I64_MIN, I64_MAX, shape, dtype=torch.int64)
    x.view(-1)[:4] = torch.tensor([0, 1, -1, ODD])
    return x


def _const(value: int) -> torch.Tensor:
    return torch.full((), value, dtype=torch.int64)


def _run(fn, *args) -> torch.Tensor:
    model = Fn(fn).eval()
    program = nova.compile(model, *args, target="nova-t1")
    with torch.no_grad():
        expected = model(*args)
    got = program(*args)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert torch.equal(got, expected), f"got\n{got}\nexpected\n{expected}"
    return got


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(20261201)


@pytest.mark.parametrize("op", [
    pytest.param(lambda x: x * G, id="mul_gamma"),
    pytest.param(lambda x: G * x, id="mul_gamma_left"),
    pytest.param(lambda x: x * M1 + M2, id="mul_add"),
    pytest.param(lambda x: x + I64_MAX, id="add_max_wraps"),
    pytest.param(lambda x: x - I64_MIN, id="sub_min_wraps"),
    pytest.param(lambda x: x & I64_MAX, id="and_max"),
    pytest.param(lambda x: x & G, id="and_gamma"),
    # torch-mlir lowers no xor / or with a Python scalar: a 0-d full (which
    # fuses into the body as a constant; a torch.tensor would be a buffer).
    pytest.param(lambda x: x ^ _const(M2), id="xor"),
    pytest.param(lambda x: x | _const(I64_MIN + 1), id="or"),
    pytest.param(lambda x: (x >> 7) ^ _const(G), id="shift_xor"),
])
def test_binary_with_64bit_constant(op):
    _run(op, _wide(4, 16))


@pytest.mark.parametrize("op", [
    pytest.param(lambda x: x < ODD, id="lt_odd"),
    pytest.param(lambda x: x == ODD, id="eq_odd"),
    pytest.param(lambda x: x >= G, id="ge_gamma"),
])
def test_compare_with_64bit_constant(op):
    # Values on both sides of 2**53 + 1, where an f64 constant would round.
    x = torch.tensor([[ODD - 2, ODD - 1, ODD, ODD + 1, G - 1, G, G + 1, 0]],
                     dtype=torch.int64)
    _run(op, x)


def test_splat_fill_and_select():
    # torch.full_like / where with a constant branch: a filled tile of the
    # exact value.
    _run(lambda x: torch.where(x > 0, x, torch.full_like(x, M1)), _wide(4, 16))
    _run(lambda x: torch.full_like(x, G) + x * 0, _wide(2, 8))


def test_splitmix64_plain_multiplies():
    # SplitMix64's finaliser with plain 64-bit multiplies (the workaround of
    # 32-bit halves is no longer needed), against the textbook reference.
    def mix(z):
        z = (z ^ ((z >> 30) & ((1 << 34) - 1))) * M1
        z = (z ^ ((z >> 27) & ((1 << 37) - 1))) * M2
        return z ^ ((z >> 31) & ((1 << 33) - 1))

    seeds = _wide(4, 16)
    got = _run(lambda s: mix(s + G), seeds)
    mask = (1 << 64) - 1
    for s, g in zip(seeds.flatten().tolist(), got.flatten().tolist()):
        z = (s + GAMMA) & mask
        z = ((z ^ (z >> 30)) * MIX1) & mask
        z = ((z ^ (z >> 27)) * MIX2) & mask
        assert g & mask == z ^ (z >> 31)
