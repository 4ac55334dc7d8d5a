"""Megatron sequence parallelism in a training step
(``compile_train_step(..., plan=megatron_transformer_plan(model,
sequence_parallel=True))``): the token ids (``input0``) split along the
sequence over tp, the LayerNorms, residual adds and their backward run on each
chip's slice of the sequence, and the collectives are SP's: an all-gather of
the sequence before each column-parallel layer (and its input gradient
reduce-scattered), a reduce-scatter after each row-parallel layer (and its
output gradient all-gathered). 5 AdamW steps of a 4-layer GPT give the
one-chip losses (rtol 1e-4), on the switch and on the ring, and on a 2 x 2
DP x TP mesh with ZeRO-1."""

from __future__ import annotations

import re

import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh
from nova.parallel.placements import Shard
from nova.parallel.plan import ParallelPlan, megatron_transformer_plan
from nova.training import TrainStepError

from .lm_batches import lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4)


def _train(target: str, mesh: Mesh | None = None, *, batch: int = 2, batch_axis=None,
           **options):
    torch.manual_seed(0)
    model = GPT(CFG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batches = token_batches(CFG, 5, batch=batch)
    plan = None
    if mesh is not None:
        plan = megatron_transformer_plan(model, batch_axis=batch_axis, sequence_parallel=True)
    step = nova.compile_train_step(model, lm_cross_entropy, optimizer, *batches[0],
                                   target=target, max_grad_norm=1.0, mesh=mesh, plan=plan,
                                   **options)
    return step, torch.stack([step(*b) for b in batches])


def _collectives(step) -> list[tuple[str, str, str]]:
    """(kind, operand type, replica groups) of every collective of the step."""
    spmd = step.program.stages["linalg"]
    return re.findall(r"nova\.(all_gather|reduce_scatter|all_reduce)\b[^:]*: (memref<[^>]*>)"
                      r"[^\n]*?groups (\[\[[0-9, \]\[]*\]\])", spmd)


@pytest.fixture(scope="module")
def one_chip():
    return _train("nova-t1")


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
def test_tp2_sequence_parallel_gives_the_one_chip_losses(one_chip, target):
    base, base_losses = one_chip
    step, losses = _train(target, Mesh((2,), ("tp",)))
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    ours, theirs = step.parameters(), base.parameters()
    # Split weights, and replicated ones whose gradients are summed over tp
    # (a LayerNorm's, the position embedding, a row-parallel bias).
    for name in ("blocks.0.attn.q.weight", "blocks.3.mlp.fc2.weight", "blocks.1.ln1.weight",
                 "pos_emb.weight", "blocks.2.attn.proj.bias", "tok_emb.weight"):
        torch.testing.assert_close(ours[name], theirs[name], rtol=1e-3, atol=1e-5)
    kinds = [kind for kind, _, _ in _collectives(step)]
    # Per block: the sequence all-gathered before q/k/v and before fc1, the
    # outputs of proj and fc2 reduce-scattered (forward); the output
    # gradients of fc2 and proj all-gathered, the input gradients of fc1
    # and of q + k + v (summed first) reduce-scattered (backward). Plus the
    # final LayerNorm's output gathered for the (replicated) LM head, and the
    # token ids and the embedding's output gradient gathered for the
    # embedding's backward.
    assert kinds.count("reduce_scatter") == 4 * CFG.n_layers
    assert kinds.count("all_gather") == 4 * CFG.n_layers + 3
    # No activation is all-reduced: the all-reduces are the gradients of
    # the replicated parameters (one bucket) and the clipping norm's partial
    # sums (0-d).
    for kind, operand, _ in _collectives(step):
        if kind == "all_reduce":
            assert re.fullmatch(r"memref<(\d+x)?f32, #nova.memory_space<hbm>", operand), operand
    # Each chip holds its half of the sequence: the residual stream is 2 x 8 x 32.
    assert "tensor<2x8x32xf32>" in step.program.stages["linalg"]


def test_dp2_tp2_sequence_parallel_zero1_gives_the_one_chip_losses():
    # A batch of 4 (2 per data-parallel replica).
    _, base_losses = _train("nova-t1", batch=4)
    step, losses = _train("nova-t1", Mesh((2, 2), ("dp", "tp")), batch=4, batch_axis="dp",
                          zero=1)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    collectives = _collectives(step)
    tp_groups = "[[0, 1], [2, 3]]"
    # The sequence is gathered and reduce-scattered within each tp group.
    assert any(k == "all_gather" and g == tp_groups for k, _, g in collectives)
    assert any(k == "reduce_scatter" and g == tp_groups for k, _, g in collectives)


def test_step_input_names():
    model = GPT(CFG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batch = token_batches(CFG, 1, batch=2)[0]
    plan = megatron_transformer_plan(model, sequence_parallel=True)
    # The step's inputs are ids and labels: input0 and input1; there is no input2.
    bad = ParallelPlan({**plan.placements, "input2": {"tp": Shard(1)}})
    with pytest.raises(TrainStepError, match=r"nor inputs of the step \(input0, input1\)"):
        nova.compile_train_step(model, lm_cross_entropy, optimizer, *batch,
                                mesh=Mesh((2,), ("tp",)), plan=bad)
    with pytest.raises(TrainStepError, match=r"input0: dimension 1 of shape \[2, 16\] does not "
                                             r"split evenly over 3 chips"):
        nova.compile_train_step(model, lm_cross_entropy, optimizer, *batch,
                                mesh=Mesh((3,), ("tp",)), plan=plan)
