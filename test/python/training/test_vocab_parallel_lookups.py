"""A vocabulary-parallel embedding (the tied ``tok_emb`` / LM head split by
rows over tp, exported as ``one_hot(ids) @ weight``) is each chip's masked
lookup of its own rows after ``nova-localize-one-hot-lookups``: the forward
a gather (rows outside the chip's range zeroed, summed by the tp
all-reduce), the backward a DMA scatter-add into the chip's rows. No chip
multiplies by a one-hot of the embedding any more. A DP2 x TP2 step of a
1-layer GPT against torch eager: the loss and every parameter's gradient,
read as its update (SGD at lr 1: ``p - p'`` is the gradient), in f32 and
under bf16 autocast, without and with Megatron's sequence parallelism (the
ids split along the sequence over tp: ``nova-sequence-parallel-embedding``
gathers them for the lookup and reduce-scatters its output, so the blocks'
LayerNorms and residual adds run on each chip's slice of the sequence)."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh
from nova.parallel.placements import Shard
from nova.parallel.plan import ParallelPlan, megatron_transformer_plan

from .lm_batches import lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=1)
MESH = Mesh((2, 2), ("dp", "tp"))


def _model():
    torch.manual_seed(0)
    return GPT(CFG)


def _vocab_parallel_plan(model, sequence_parallel=False):
    plan = megatron_transformer_plan(model, batch_axis="dp", sequence_parallel=sequence_parallel)
    return ParallelPlan({**plan.placements, "tok_emb.weight": {"tp": Shard(0)}},
                        batch_axis="dp")


@pytest.mark.parametrize("sequence_parallel", [False, True], ids=["tp", "sp"])
@pytest.mark.parametrize("autocast", [None, torch.bfloat16], ids=["f32", "bf16"])
def test_dp2_tp2_vocab_parallel_lookups_match_eager(autocast, sequence_parallel):
    (ids, labels), = token_batches(CFG, 1, batch=4)
    model = _model()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    step = nova.compile_train_step(model, lm_cross_entropy, optimizer, ids, labels, mesh=MESH,
                                   zero=1, autocast=autocast,
                                   plan=_vocab_parallel_plan(model, sequence_parallel))
    # Each chip reads its 32 rows by gather and adds into them by scatter;
    # the embedding's one-hot products (a [32, 32] x [32, 32] on each chip)
    # are gone: the only matmuls left with the chip's rows as an operand
    # are the LM head's.
    assert " accumulate on dma" in step.program.stages["nova_isa"]
    linalg = step.program.stages["linalg"]
    assert "tensor<2x16x64xi1>" not in linalg  # no one-hot of the ids over the vocabulary
    if sequence_parallel:
        # The residual stream is each chip's half of the sequence, the
        # embedding's output reduce-scattered into it.
        assert "tensor<2x8x32xf32>" in linalg
        assert "nova.reduce_scatter" in linalg
    loss = step(ids, labels)

    eager = _model()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast is not None):
        want = lm_cross_entropy(eager(ids), labels).float()
    want.backward()
    after = step.parameters()
    named = dict(eager.named_parameters())
    assert set(after) == set(named)
    if autocast is None:
        torch.testing.assert_close(loss, want.detach(), rtol=1e-4, atol=1e-5)
    else:
        torch.testing.assert_close(loss, want.detach(), rtol=2e-2, atol=0)
    for name, p in named.items():
        got = before[name] - after[name]
        if autocast is None:
            torch.testing.assert_close(got, p.grad, rtol=1e-4, atol=1e-5,
                                       msg=lambda m, name=name: f"gradient of {name}: {m}")
        else:
            scale = max(p.grad.abs().max().item(), 5e-3)
            torch.testing.assert_close(got, p.grad, rtol=5e-2, atol=2e-2 * scale,
                                       msg=lambda m, name=name: f"gradient of {name}: {m}")


def test_dense_cross_entropy_under_autocast_runs_in_float32():
    # Autocast runs F.cross_entropy in float32; the parallel loss, which
    # intercepts the call before autocast does, must too (bf16 logits).
    from nova.training.parallel_loss import dense_cross_entropy

    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(12, 50, generator=generator).to(torch.bfloat16).requires_grad_()
    target = torch.randint(0, 50, (12,), generator=generator)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = dense_cross_entropy(logits, target)
        theirs = torch.nn.functional.cross_entropy(logits, target)
    assert ours.dtype == theirs.dtype == torch.float32
    torch.testing.assert_close(ours, theirs)
    ours_grad, = torch.autograd.grad(ours, logits)
    theirs_grad, = torch.autograd.grad(theirs, logits)
    torch.testing.assert_close(ours_grad, theirs_grad)
