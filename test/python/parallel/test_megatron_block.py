"""Megatron tensor parallelism of a GPT block: not yet partitionable."""

from __future__ import annotations

import pytest
import torch

from nova.compiler.errors import NovaError
from nova.models.gpt import GPTBlock, GPTConfig
from nova.parallel import Mesh, compile_parallel, megatron_block_plan


@pytest.mark.xfail(raises=NovaError, strict=True,
                   reason="MLIR 22 sharding-propagation: tensor.collapse_shape/expand_shape "
                          "have no ShardingInterface, and LayerNorm's keep-dim reduction "
                          "(result map (d0, d1, d2) -> (d0, d1, 0)) is rejected as an "
                          "invalid sharding interface implementation")
def test_megatron_block_tp4_matches_torch() -> None:
    torch.manual_seed(0)
    model = GPTBlock(GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16)).eval()
    x = torch.randn(2, 16, 64)
    program = compile_parallel(model, x, mesh=Mesh((4,), ("tp",)),
                               plan=megatron_block_plan(axis="tp"))
    assert program.stages["nova"].count("nova.all_reduce") == 2
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(program(x), expected, rtol=1e-4, atol=1e-5)
