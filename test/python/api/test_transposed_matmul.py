"""Matmuls that read an operand transposed (``a.T @ b``: a weight gradient's
``dY.T @ X``; ``a @ b.T``: a Linear's ``x @ W.T``; both at once) compile to
matrix-unit tiles that read the operand through a transposed SRAM view: no
transpose instruction runs, and the numbers are eager's."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.binary.isa import Opcode


class TransposedMatmul(torch.nn.Module):
    def __init__(self, lhs_t: bool, rhs_t: bool) -> None:
        super().__init__()
        self.lhs_t, self.rhs_t = lhs_t, rhs_t

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a.T if self.lhs_t else a) @ (b.T if self.rhs_t else b)


def _opcodes(program) -> set:
    return {ins.opcode for p in program.binary.programs for ins in p.instructions}


@pytest.mark.parametrize("lhs_t,rhs_t", [(True, False), (True, True), (False, True)],
                         ids=["lhs", "both", "rhs"])
def test_transposed_operands_match_eager_without_a_transpose(lhs_t, rhs_t):
    torch.manual_seed(0)
    m, k, n = 48, 160, 96
    a = torch.randn(k, m) if lhs_t else torch.randn(m, k)
    b = torch.randn(n, k) if rhs_t else torch.randn(k, n)
    model = TransposedMatmul(lhs_t, rhs_t)
    program = nova.compile(model, a, b, target="nova-t1")
    torch.testing.assert_close(program(a, b), model(a, b), rtol=1e-4, atol=1e-5)
    ops = _opcodes(program)
    assert Opcode.MATMUL in ops
    assert Opcode.VTRANSPOSE not in ops
