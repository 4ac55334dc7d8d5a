"""ZeRO-1's parameter all-gathers in buckets (``nova-bucket-all-gathers``):
a DP2 x TP2 step of a 1-layer GPT (AdamW, its state split over dp) gathers
its updated parameter shards in a few all-gathers instead of one per
parameter. Two steps against torch eager: each step's loss (the second
computed from the gathered parameters) and every parameter after each
step; and the bucketed step's losses and parameters are bitwise those of
the unbucketed one (``bucket_mb=0``): the buckets only move values.
(Gradients are compared through the updates: ``keep_grads=True`` with a
DP x TP ZeRO-1 step fails in upstream sharding propagation, "operand #0
does not dominate this use", and SGD with momentum in "has no sharding
after sharding propagation", both before this change too.)"""

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


def _model_and_optimizer():
    torch.manual_seed(0)
    model = GPT(CFG)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)


def _nova(bucket_mb: float):
    """Per step: the loss and the parameters after it."""
    model, optimizer = _model_and_optimizer()
    batches = token_batches(CFG, 2, batch=4)
    step = nova.compile_train_step(model, lm_cross_entropy, optimizer, *batches[0],
                                   mesh=MESH, zero=1, bucket_mb=bucket_mb,
                                   plan=megatron_transformer_plan(model, batch_axis="dp"))
    start = {n: p.detach().clone() for n, p in model.named_parameters()}
    trace = [(step(*b), step.parameters()) for b in batches]
    return step, start, trace


def _gathers(step) -> int:
    return sum("nova.all_gather" in line for line in step.program.stages["nova"].splitlines())


@pytest.fixture(scope="module")
def bucketed():
    return _nova(25.0)


def test_bucketed_gathers_match_eager(bucketed):
    _, _, trace = bucketed
    model, optimizer = _model_and_optimizer()
    for k, (ids, labels) in enumerate(token_batches(CFG, 2, batch=4)):
        optimizer.zero_grad()
        loss = lm_cross_entropy(model(ids), labels)
        loss.backward()
        optimizer.step()
        ours_loss, ours = trace[k]
        torch.testing.assert_close(ours_loss, loss.detach(), rtol=1e-4, atol=1e-5)
        assert set(ours) == {n for n, _ in model.named_parameters()}
        for name, p in model.named_parameters():
            # AdamW moves an element by up to lr (1e-2) per step; the key bias's
            # gradient is 0 up to rounding (softmax ignores it), so its update
            # is rounding noise divided by its own size: 1e-4 absolute.
            torch.testing.assert_close(ours[name], p.detach(), rtol=1e-4, atol=1e-4,
                                       msg=lambda m, n=name: f"step {k} {n}: {m}")


def test_buckets_only_move_values(bucketed):
    step, _, trace = bucketed
    plain, _, plain_trace = _nova(0.0)
    # One all-gather per dp-split parameter without buckets; a handful with.
    assert _gathers(step) < _gathers(plain) // 3, (_gathers(step), _gathers(plain))
    for (loss, ours), (plain_loss, theirs) in zip(trace, plain_trace):
        assert torch.equal(loss, plain_loss)
        for name in theirs:
            assert np.array_equal(ours[name].numpy(), theirs[name].numpy()), name
