"""Megatron tensor parallelism of a GPT block through the shard dialect."""

from __future__ import annotations

import torch

from nova.models.gpt import GPTBlock, GPTConfig
from nova.parallel import Mesh, compile_parallel, megatron_block_plan


def test_megatron_block_tp4_matches_torch() -> None:
    torch.manual_seed(0)
    model = GPTBlock(GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16)).eval()
    x = torch.randn(2, 16, 64)
    program = compile_parallel(model, x, mesh=Mesh((4,), ("tp",)),
                               plan=megatron_block_plan(axis="tp"))
    # One all-reduce after attention's output projection, one after fc2.
    assert program.stages["nova"].count("nova.all_reduce") == 2
    # Each chip computes one of the 4 heads and a quarter of the MLP.
    spmd = program.stages["linalg"]
    assert "tensor<2x1x16x16xf32>" in spmd and "tensor<32x64xf32>" in spmd
    assert "tensor<2x4x16x16xf32>" not in spmd and "tensor<32x256xf32>" not in spmd
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(program(x), expected, rtol=1e-4, atol=1e-5)


def test_tp_beyond_the_head_count_still_matches_torch() -> None:
    """TP=8 on 4 heads: q/k/v columns do not split into whole heads, so the
    heads are gathered (all-gather), attention runs replicated, and each chip
    slices its part back out for the row-parallel projection (shard.all_slice,
    addressed by chip id). Slower than TP=4, but exact."""
    torch.manual_seed(3)
    model = GPTBlock(GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16)).eval()
    x = torch.randn(2, 16, 64)
    program = compile_parallel(model, x, mesh=Mesh((8,), ("tp",)),
                               plan=megatron_block_plan(axis="tp"))
    # q, k and v gathered in one bucket (nova-bucket-all-gathers).
    assert program.stages["nova"].count("nova.all_gather") == 1
    assert "nova.chip_id" in program.stages["linalg"]
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(program(x), expected, rtol=1e-4, atol=1e-5)
