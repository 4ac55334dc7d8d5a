"""Tensor-parallel training steps (``compile_train_step(..., mesh=Mesh((n,), ("tp",)),
plan=...)``): the plan places the parameters, sharding propagation carries it
through the backward and the update, and 5 AdamW steps of a 4-layer GPT give
the one-chip losses at every step (rtol 1e-4), on the switch and on the ring;
with the tied embedding / LM head split along the vocabulary (vocab-parallel
head, parallel cross-entropy) too."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh
from nova.parallel.placements import Shard
from nova.parallel.plan import ParallelPlan, megatron_transformer_plan
from nova.training import TrainStepError
from nova.training.parallel_loss import dense_cross_entropy

from .lm_batches import lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4)
_ce = lm_cross_entropy


def _batches(n: int = 5):
    return token_batches(CFG, n)


def _train(target: str, chips: int | None, vocab: bool = False, **options):
    torch.manual_seed(0)
    model = GPT(CFG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batches = _batches()
    mesh = plan = None
    if chips:
        mesh = Mesh((chips,), ("tp",))
        plan = megatron_transformer_plan(model)
        if vocab:
            plan = ParallelPlan({**plan.placements, "tok_emb.weight": {"tp": Shard(0)}})
    step = nova.compile_train_step(model, _ce, optimizer, *batches[0], target=target,
                                   max_grad_norm=1.0, mesh=mesh, plan=plan, **options)
    return step, torch.stack([step(*b) for b in batches])


@pytest.fixture(scope="module")
def one_chip():
    return _train("nova-t1", None)


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
def test_tp2_gives_the_one_chip_losses(one_chip, target):
    base, base_losses = one_chip
    step, losses = _train(target, 2)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    # The parameters, read back from each chip's shard and put together.
    ours, theirs = step.parameters(), base.parameters()
    for name in ("blocks.0.attn.q.weight", "blocks.3.mlp.fc2.weight"):
        torch.testing.assert_close(ours[name], theirs[name], rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
def test_tp4_vocab_parallel_head_gives_the_one_chip_losses(one_chip, target):
    _, base_losses = one_chip
    step, losses = _train(target, 4, vocab=True)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    # No chip holds the full logits: the largest tensor of the vocabulary is a quarter.
    spmd = step.program.stages["linalg"]
    assert "tensor<128x16xf32>" in spmd and "tensor<128x64xf32>" not in spmd


def test_dense_cross_entropy_matches_torch():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(12, 7, generator=generator, requires_grad=True)
    target = torch.randint(0, 7, (12,), generator=generator)
    target[::4] = -100
    for reduction in ("mean", "sum", "none"):
        ours = dense_cross_entropy(logits, target, reduction=reduction)
        theirs = torch.nn.functional.cross_entropy(logits, target, reduction=reduction)
        torch.testing.assert_close(ours, theirs)
    ours_grad, = torch.autograd.grad(dense_cross_entropy(logits, target), logits)
    theirs_grad, = torch.autograd.grad(torch.nn.functional.cross_entropy(logits, target), logits)
    torch.testing.assert_close(ours_grad, theirs_grad)


def test_iota_on_a_split_vocabulary_counts_from_each_chips_offset():
    # one_hot(labels) over a split vocabulary: torch.arange on the split dim
    # used to count from 0 on every chip (silently wrong losses).
    def picked(y, t):
        one_hot = t.reshape(-1).unsqueeze(-1) == torch.arange(64)
        return (one_hot.to(y.dtype) * y.reshape(-1, 64)).sum(-1).mean()

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64, bias=False))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, t = torch.randn(8, 16, 32), torch.randint(0, 64, (8, 16))
    expected = picked(model(x), t)
    step = nova.compile_train_step(model, picked, optimizer, x, t, mesh=Mesh((2,), ("tp",)),
                                   plan=ParallelPlan({"0.weight": {"tp": Shard(0)}}))
    torch.testing.assert_close(step(x, t), expected.detach(), rtol=1e-5, atol=1e-6)


def test_plan_errors():
    model = GPT(CFG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batch = _batches(1)[0]
    with pytest.raises(TrainStepError, match="plan= needs mesh="):
        nova.compile_train_step(model, _ce, optimizer, *batch,
                                plan=megatron_transformer_plan(model))
    with pytest.raises(TrainStepError, match="not parameters or buffers"):
        nova.compile_train_step(model, _ce, optimizer, *batch, mesh=Mesh((2,), ("tp",)),
                                plan=ParallelPlan({"nope.weight": {"tp": Shard(0)}}))
    with pytest.raises(TrainStepError, match="does not split evenly"):
        nova.compile_train_step(model, _ce, optimizer, *batch, mesh=Mesh((3,), ("tp",)),
                                plan=megatron_transformer_plan(model))
    with pytest.raises(TrainStepError, match="zero=1 shards over the data-parallel axis"):
        nova.compile_train_step(model, _ce, optimizer, *batch, mesh=Mesh((2,), ("tp",)),
                                plan=megatron_transformer_plan(model), zero=1)

