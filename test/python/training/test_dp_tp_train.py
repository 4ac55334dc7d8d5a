"""Training on a 2-D mesh (DP x TP): a Megatron plan over the "tp" axis with
the batch split over "dp", and ZeRO-1 over the "dp" axis (each optimizer
state split over dp along a dimension the plan leaves whole). Its
resharding on the 2-D grid, which MLIR 22's shard-partition cannot do, goes
through nova.reshard (nova-materialize-reshards). 5 AdamW steps of a
4-layer GPT give the one-chip losses at every step (rtol 1e-4), on the
switch and on the ring."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh
from nova.parallel.plan import megatron_transformer_plan
from nova.training import TrainStepError

from .lm_batches import lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4)
MESH = Mesh((2, 2), ("dp", "tp"))


def _train(target: str, mesh: Mesh | None, **options):
    torch.manual_seed(0)
    model = GPT(CFG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batches = token_batches(CFG, 5)
    plan = None if mesh is None else megatron_transformer_plan(model, batch_axis="dp")
    step = nova.compile_train_step(model, lm_cross_entropy, optimizer, *batches[0],
                                   target=target, max_grad_norm=1.0, mesh=mesh, plan=plan,
                                   **options)
    return step, torch.stack([step(*b) for b in batches])


@pytest.fixture(scope="module")
def one_chip():
    return _train("nova-t1", None)


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
def test_dp2_tp2_zero1_gives_the_one_chip_losses(one_chip, target):
    base, base_losses = one_chip
    step, losses = _train(target, MESH, zero=1)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    # Parameters and optimizer state read back whole from their shards.
    ours, theirs = step.parameters(), base.parameters()
    for name in ("blocks.0.attn.q.weight", "blocks.3.mlp.fc2.weight", "tok_emb.weight"):
        torch.testing.assert_close(ours[name], theirs[name], rtol=1e-3, atol=1e-5)
    state = step.state_dict()["optimizer"]["state"]
    base_state = base.state_dict()["optimizer"]["state"]
    for key in state:
        torch.testing.assert_close(state[key]["exp_avg"], base_state[key]["exp_avg"],
                                   rtol=1e-3, atol=1e-6)
    # The update's parameters are gathered over dp only (groups [[0, 2], [1, 3]]).
    nova_ir = step.program.stages["nova"]
    gathers = [line for line in nova_ir.splitlines() if "nova.all_gather" in line]
    assert gathers and all("groups [[0, 2], [1, 3]]" in line for line in gathers)
    # Optimizer state per chip: a quarter for the tensor-parallel weights
    # (split over tp by the plan, over dp by ZeRO), a half for the rest.
    ours_state, one_chip_state = step.memory().optimizer_state, base.memory().optimizer_state
    assert one_chip_state / 4 <= ours_state <= one_chip_state / 2


def test_dp2_tp2_gives_the_one_chip_losses(one_chip):
    _, base_losses = one_chip
    _, losses = _train("nova-t1", MESH)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)


def test_zero_with_a_plan_needs_a_batch_axis():
    torch.manual_seed(0)
    model = GPT(CFG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ids, labels = token_batches(CFG, 1)[0]
    with pytest.raises(TrainStepError, match="batch_axis"):
        nova.compile_train_step(model, lm_cross_entropy, optimizer, ids, labels,
                                mesh=Mesh((2,), ("tp",)), zero=1,
                                plan=megatron_transformer_plan(model))
