"""ZeRO-1's parameter all-gathers in buckets (``nova-bucket-all-gathers``):
a DP2 x TP2 step of a 1-layer GPT (AdamW state split over dp) gathers its
updated parameter shards in a few all-gathers instead of one per parameter,
and two steps give torch eager's losses, every parameter's gradient and
every updated parameter; the bucketed step's parameters are bitwise those of
the unbucketed one (``bucket_mb=0``): the buckets only move values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh
from nova.parallel.plan import megatron_transformer_plan

from .lm_batches import lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=8, d_model=32, n_heads=4, n_layers=1)
MESH = Mesh((2, 2), ("dp", "tp"))
STEPS = 2


def _model_and_optimizer():
    torch.manual_seed(0)
    model = GPT(CFG)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)


def _nova(bucket_mb: float):
    model, optimizer = _model_and_optimizer()
    batches = token_batches(CFG, STEPS, batch=4)
    step = nova.compile_train_step(model, lm_cross_entropy, optimizer, *batches[0],
                                   mesh=MESH, zero=1, keep_grads=True, bucket_mb=bucket_mb,
                                   plan=megatron_transformer_plan(model, batch_axis="dp"))
    losses = torch.stack([step(*b) for b in batches])
    return step, losses


def _gathers(step) -> int:
    return sum("nova.all_gather" in line for line in step.program.stages["nova"].splitlines())


@pytest.fixture(scope="module")
def bucketed():
    return _nova(25.0)


def test_bucketed_gathers_match_eager(bucketed):
    step, losses = bucketed
    model, optimizer = _model_and_optimizer()
    want = []
    for ids, labels in token_batches(CFG, STEPS, batch=4):
        optimizer.zero_grad()
        loss = lm_cross_entropy(model(ids), labels)
        loss.backward()
        optimizer.step()
        want.append(loss.detach())
    torch.testing.assert_close(losses, torch.stack(want), rtol=1e-4, atol=1e-5)
    grads = step.grads()
    params = step.parameters()
    named = dict(model.named_parameters())
    assert set(grads) == set(named)
    for name, p in named.items():
        torch.testing.assert_close(grads[name], p.grad, rtol=1e-4, atol=1e-5,
                                   msg=lambda m, name=name: f"grad of {name}: {m}")
        torch.testing.assert_close(params[name], p.detach(), rtol=1e-4, atol=1e-5,
                                   msg=lambda m, name=name: f"{name}: {m}")


def test_buckets_only_move_values(bucketed):
    step, losses = bucketed
    plain, plain_losses = _nova(0.0)
    # One all-gather per dp-split parameter without buckets; a handful with.
    assert _gathers(step) < _gathers(plain) // 3, (_gathers(step), _gathers(plain))
    assert torch.equal(losses, plain_losses)
    ours, theirs = step.parameters(), plain.parameters()
    for name in theirs:
        assert np.array_equal(ours[name].numpy(), theirs[name].numpy()), name
