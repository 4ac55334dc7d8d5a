"""A Hugging Face ``GPT2LMHeadModel`` in its default configuration (sdpa
attention, only the sizes made small: ``hf_zoo``) trained through the 3-D
pipeline as a user writes it: the model itself given to
``compile_pipeline_train_step`` (cut at its blocks, the embeddings with the
first stage, ``ln_f`` and the tied LM head with the last), PP2 x DP2 x TP2
(8 chips), a plan in ``torch.distributed.tensor.parallel`` styles, ZeRO-1.
The loss and every parameter against eager, micro-batch by micro-batch:
f32 (3 AdamW steps) and bf16 autocast (one SGD step at lr 1, so ``p - p'``
is the gradient), each with saved activations and with ``recompute=True``.

Dropout probabilities are 0 for the comparisons, as in
test_hf_default_train: Nova draws dropout masks from its own generator, so
eager with dropout is no reference. With the shipped dropout (0.1) a
pipeline is refused by name: its bodies have no random stream yet."""

from __future__ import annotations

import pytest
import torch

import hf_zoo
from nova.parallel import Mesh, PipelineError
from nova.training.pipeline_train import compile_pipeline_train_step

from .lm_batches import lm_cross_entropy

pytest.importorskip("transformers")

MESH = Mesh((2, 2), ("dp", "tp"))
MICRO = 4


def _batches(n: int):
    generator = torch.Generator().manual_seed(1)
    shape = (2 * MICRO, hf_zoo.SEQ)
    return [(torch.randint(0, hf_zoo.VOCAB, shape, generator=generator),
             torch.randint(0, hf_zoo.VOCAB, shape, generator=generator)) for _ in range(n)]


def _plan(model):
    """Megatron's MLP split and the vocabulary-parallel tied embedding / LM
    head over tp, the batch over dp. (``gpt2_tp_plan``'s fused ``c_attn``
    split is stored re-laid-out, which a pipeline refuses: below.)"""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    from nova.parallel import torch_plan

    return torch_plan(model, "tp", {
        "transformer.h.*.mlp.c_fc": ColwiseParallel(),
        "transformer.h.*.mlp.c_proj": RowwiseParallel(),
        "transformer.wte": RowwiseParallel(input_layouts=Replicate()),
        "lm_head": ColwiseParallel(output_layouts=Replicate())}, batch_axis="dp")


def _loss(model, ids, labels, autocast):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        return lm_cross_entropy(model(input_ids=ids).logits, labels).float()


def _eager(optimizer_of, batches, autocast: bool):
    """Eager, micro-batch by micro-batch: each step's mean loss, the model."""
    model = hf_zoo.build("gpt2", dropout=0.0)
    optimizer = optimizer_of(model)
    losses = []
    for ids, labels in batches:
        optimizer.zero_grad()
        total = 0
        for x, y in zip(ids.chunk(MICRO), labels.chunk(MICRO)):
            loss = _loss(model, x, y, autocast) / MICRO
            loss.backward()
            total = total + loss.detach()
        optimizer.step()
        losses.append(total)
    return torch.stack(losses), model


def _compiled(optimizer_of, batches, autocast: bool, recompute: bool):
    model = hf_zoo.build("gpt2", dropout=0.0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    step = compile_pipeline_train_step(
        model, lm_cross_entropy, optimizer_of(model), *batches[0], stages=2,
        microbatches=MICRO, mesh=MESH, plan=_plan(model), zero=1, recompute=recompute,
        autocast=torch.bfloat16 if autocast else None)
    return step, torch.stack([step(*b) for b in batches]), before


def _check_path(step, recompute: bool, shards: bool) -> None:
    """The path the test is about: 8 chips, each Bx taking the saved tensors
    of its F's it reads and G the weights' gradients once per step (or B
    recomputing), and with ``shards`` the gradients as ZeRO-1's dp shards
    (reduce-scattered over dp); without, whole (``partition_bodies``' f32
    fallback)."""
    assert step.recompute == recompute
    assert step.stages["nova"].count("func.func @chip") == 8
    assert ("nova.reduce_scatter" in step.stages["nova"]) == shards
    if not recompute:
        # Conv1D's saved x^T [d, tokens]: G concatenates it along dimension 1.
        assert step.deferred == ["", ""]
        F = step._lowered[0]["F"][1]
        bx_body, Bx = step._lowered[0]["Bx"]
        saved = F.result_types[1:]
        if "W" in step._lowered[0]:  # autocast: the weights' copies come from W
            w_body, W = step._lowered[0]["W"]
            from_f = iter(saved)
            saved = [W.result_types[i] if i >= 0 else next(from_f) for i in w_body.saved]
        assert Bx.arg_types[:len(bx_body.saved)] == [saved[j] for j in bx_body.saved]


@pytest.mark.parametrize("recompute", [False, True], ids=["saved", "recompute"])
def test_f32_adamw_steps_match_eager(recompute):
    adamw = lambda model: torch.optim.AdamW(model.parameters(), lr=1e-2)  # noqa: E731
    batches = _batches(3)
    step, losses, _ = _compiled(adamw, batches, False, recompute)
    # f32 saved: sharding propagation cannot place the weights' gradients as
    # dp shards, so every stage keeps whole gradients (the f32 fallback).
    _check_path(step, recompute, shards=recompute)
    want_losses, eager = _eager(adamw, batches, False)
    torch.testing.assert_close(losses, want_losses, rtol=1e-4, atol=0)
    ours, theirs = step.parameters(), dict(eager.named_parameters())
    assert set(ours) == set(theirs)
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value.detach(), rtol=1e-3, atol=1e-4,
                                   msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("recompute", [False, True], ids=["saved", "recompute"])
def test_bf16_gradients_match_eager_autocast(recompute):
    sgd = lambda model: torch.optim.SGD(model.parameters(), lr=1.0)  # noqa: E731
    batches = _batches(1)
    step, losses, before = _compiled(sgd, batches, True, recompute)
    _check_path(step, recompute, shards=True)
    assert "bf16" in step.stages["nova"]
    want_losses, eager = _eager(sgd, batches, True)
    torch.testing.assert_close(losses, want_losses, rtol=2e-2, atol=0)
    after = step.parameters()
    assert set(after) == set(before)
    for name, p in eager.named_parameters():
        grad = before[name] - p.detach()       # eager's update at lr 1
        ours = before[name] - after[name]
        scale = max(grad.abs().max().item(), 5e-3)
        torch.testing.assert_close(ours, grad, rtol=5e-2, atol=2e-2 * scale,
                                   msg=lambda m, name=name: f"{name}: {m}")


def test_shipped_dropout_and_fused_qkv_split_are_refused():
    batches = _batches(1)
    model = hf_zoo.build("gpt2")                      # dropout as shipped: 0.1
    assert model.config.attn_pdrop == 0.1
    with pytest.raises(PipelineError, match="dropout in training mode"):
        compile_pipeline_train_step(model, lm_cross_entropy,
                                    torch.optim.AdamW(model.parameters()), *batches[0],
                                    microbatches=MICRO)
    # The ready-made plan splits the fused c_attn per head (stored re-laid-out).
    from nova.parallel import gpt2_tp_plan, torch_plan
    from nova.training.errors import TrainStepError

    model = hf_zoo.build("gpt2", dropout=0.0)
    with pytest.raises(TrainStepError, match="re-laid-out"):
        compile_pipeline_train_step(model, lm_cross_entropy,
                                    torch.optim.AdamW(model.parameters()), *batches[0],
                                    microbatches=MICRO, mesh=MESH,
                                    plan=torch_plan(model, "tp", gpt2_tp_plan(),
                                                    batch_axis="dp"))
