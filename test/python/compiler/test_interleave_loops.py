"""nova-interleave-loops on a program with two independent ops bound on
different engines: a matmul (matrix unit) and an elementwise chain on other
data (vector unit). The pass fuses their loops so that the sequencer's
dispatch alternates between them; the outputs still equal torch's."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import nova
from nova.compiler.driver import run_opt


class Branches(torch.nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
        return x @ w, torch.tanh(torch.sin(b) * torch.cos(b) + torch.exp(-b * b))


def _interleave(tiles: str, window: int) -> str:
    return run_opt(tiles, [f"--pass-pipeline=builtin.module(func.func("
                           f"nova-interleave-loops{{window={window}}}))"])


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    torch.manual_seed(0)
    # x scaled so that x @ w is O(1): f32 sums of 512 products then agree to 1e-5.
    args = (torch.randn(512, 512) / 512 ** 0.5, torch.randn(512, 512), torch.randn(2048, 128))
    dump = Path(tmp_path_factory.mktemp("interleave"))
    return nova.compile(Branches(), *args, dump_dir=dump), args, dump


def test_the_matmul_and_the_elementwise_chain_are_fused(compiled):
    _, _, dump = compiled
    tiles = (dump / "1-nova.mlir").read_text()
    # window=0 scans no op: the program as it was.
    assert _interleave(tiles, 4) != _interleave(tiles, 0)


def test_the_interleaved_program_matches_torch(compiled):
    program, args, _ = compiled
    ours = program(*args)
    theirs = Branches()(*args)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
