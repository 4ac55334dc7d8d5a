"""A GPT block with nanoGPT's fused ``qkv`` Linear (one projection of
3 * d_model outputs split into q, k and v) gives eager's outputs on 1 chip,
on 8 chips with data parallelism, and with DP x TP where tensor parallelism
splits only the MLP (the split of the fused projection stays replicated)."""

from __future__ import annotations

import torch

import nova
from nova.models.gpt import GPTBlock, GPTConfig
from nova.parallel import (Mesh, ParallelPlan, compile_parallel, data_parallel_plan,
                           megatron_mlp_plan)

RTOL, ATOL = 1e-4, 1e-5
CONFIG = GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=16, fused_qkv=True)


def _block_and_input(seed: int) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    model = GPTBlock(CONFIG).eval()
    assert hasattr(model.attn, "qkv") and not hasattr(model.attn, "q")
    x = torch.randn(8, CONFIG.seq_len, CONFIG.d_model)
    with torch.no_grad():
        expected = model(x)
    return model, x, expected


def test_fused_qkv_block_matches_torch_on_one_chip() -> None:
    model, x, expected = _block_and_input(0)
    program = nova.compile(model, x, target="nova-t1")
    torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)


def test_fused_qkv_block_data_parallel_8_chips_matches_torch() -> None:
    model, x, expected = _block_and_input(1)
    program = compile_parallel(model, x, mesh=Mesh((8,), ("dp",)),
                               plan=data_parallel_plan("dp"))
    # Every chip holds one sequence of the batch and the whole block: no collective.
    assert len(program.chip_params) == 8
    assert program.stages["nova"].count("nova.all_reduce") == 0
    torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)


def test_fused_qkv_block_dp2_x_tp4_mlp_split_matches_torch() -> None:
    """The MLP is Megatron-split over ``tp`` (fc1 column parallel: torch's
    ``[out, in]`` weight and the bias split along dim 0; fc2 row parallel:
    weight split along dim 1, bias replicated); qkv and proj are replicated;
    the batch is split over ``dp``."""
    model, x, expected = _block_and_input(2)
    mlp = megatron_mlp_plan("mlp.fc1", "mlp.fc2", axis="tp")
    plan = ParallelPlan(mlp.placements, batch_axis="dp")
    program = compile_parallel(model, x, mesh=Mesh((2, 4), ("dp", "tp")), plan=plan)
    # One all-reduce, after fc2; attention runs whole on every chip of a dp row.
    assert program.stages["nova"].count("nova.all_reduce") == 1
    hidden = CONFIG.mlp_ratio * CONFIG.d_model
    spmd = program.stages["linalg"]
    assert f"tensor<{hidden // 4}x{CONFIG.d_model}xf32>" in spmd
    assert f"tensor<{3 * CONFIG.d_model}x{CONFIG.d_model}xf32>" in spmd
    torch.testing.assert_close(program(x), expected, rtol=RTOL, atol=ATOL)
