"""Mixed precision in a pipeline (``compile_pipeline_train_step(...,
autocast=torch.bfloat16)``): each stage's forward and loss traced under
``torch.autocast("cpu", dtype=torch.bfloat16)``, master weights and
gradients float32. One SGD step at lr 1 (so ``p - p'`` is the gradient the
update used) of a 2-layer GPT, 2 stages, 4 micro-batches, against torch
eager under autocast accumulating the same micro-batches: the loss and
every parameter's gradient, on one chip per stage and on a 2 x 2 DP x TP
mesh per stage (8 chips), there also with the tied embedding / LM head split
over tp (vocabulary-parallel), with ZeRO-1 too (the gradients accumulated as
dp shards). bf16 rounds differently op by op (Nova's fused
kernels, eager's ATen ones), hence bf16's tolerances."""

from __future__ import annotations

import re

import pytest
import torch

from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh, PipelineError
from nova.parallel.placements import Shard
from nova.parallel.plan import ParallelPlan, megatron_transformer_plan
from nova.training.pipeline_train import compile_pipeline_train_step

from .lm_batches import lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=2)
MICRO = 4


def _model():
    torch.manual_seed(0)
    return GPT(CFG)


def _autocast_pass(model, ids, labels) -> torch.Tensor:
    """One batch micro-batch by micro-batch under autocast, eagerly: the
    gradients of the mean micro-batch loss accumulated; that mean."""
    losses = []
    for x, y in zip(ids.chunk(MICRO), labels.chunk(MICRO)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = lm_cross_entropy(model(x), y).float()
        (loss / MICRO).backward()
        losses.append(loss.detach())
    return torch.stack(losses).mean()


def _eager(ids, labels):
    """The mean micro-batch loss and every parameter's gradient, eager under autocast."""
    model = _model()
    loss = _autocast_pass(model, ids, labels)
    return loss, {n: p.grad.clone() for n, p in model.named_parameters()}


def _plan(model, vocab_parallel: bool, sequence_parallel: bool = False):
    """Megatron's plan over tp, the batch over dp; ``vocab_parallel``: the
    tied embedding / LM head split by rows over tp too."""
    plan = megatron_transformer_plan(model, batch_axis="dp",
                                     sequence_parallel=sequence_parallel)
    if not vocab_parallel:
        return plan
    return ParallelPlan({**plan.placements, "tok_emb.weight": {"tp": Shard(0)}},
                        batch_axis="dp")


@pytest.mark.parametrize("mesh,vocab_parallel,zero,sp", [
    (None, False, 0, False), (Mesh((2, 2), ("dp", "tp")), False, 0, False),
    (Mesh((2, 2), ("dp", "tp")), True, 0, True), (Mesh((2, 2), ("dp", "tp")), True, 1, False)],
    ids=["pp2", "pp2dp2tp2", "pp2dp2tp2-vocab-parallel-sp", "pp2dp2tp2-vocab-parallel-zero1"])
def test_bf16_pipeline_matches_eager_autocast(mesh, vocab_parallel, zero, sp):
    """``sp``: Megatron's sequence parallelism inside the stages too (the
    ids and stage-boundary activations split along the sequence over tp)."""
    (ids, labels), = token_batches(CFG, 1, ignored=False)
    model = _model()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    plan = _plan(model, vocab_parallel, sp) if mesh is not None else None
    step = compile_pipeline_train_step(model, lm_cross_entropy, optimizer, ids, labels,
                                       stages=2, microbatches=MICRO, mesh=mesh, plan=plan,
                                       autocast=torch.bfloat16, zero=zero)
    assert "bf16" in step.stages["nova"]  # the matmuls run in bf16
    # zero=1: each B reduce-scatters its gradients over dp and accumulates
    # the optimizer state's dp shard, not the whole gradient.
    # With sequence parallelism the row-parallel outputs are reduce-scattered.
    assert ("nova.reduce_scatter" in step.stages["nova"]) == bool(zero or sp)
    if sp:
        assert step.deferred == ["", ""]
    if vocab_parallel:
        # Each tp chip's rows looked up by gather, their gradient scattered
        # (not a gather of the split table, which read out of range).
        assert " accumulate on dma" in step.stages["nova_isa"]
    loss = step(ids, labels)
    want_loss, want_grads = _eager(ids, labels)
    torch.testing.assert_close(loss, want_loss, rtol=2e-2, atol=0)
    after = step.parameters()
    assert set(after) == set(want_grads)
    for name, grad in want_grads.items():
        ours = before[name] - after[name]
        # bf16 operands: ~3 significant digits per matmul, relative to the
        # gradient's scale (the key bias's is 0 up to rounding: softmax ignores it).
        scale = max(grad.abs().max().item(), 5e-3)
        torch.testing.assert_close(ours, grad, rtol=5e-2, atol=2e-2 * scale,
                                   msg=lambda m, name=name: f"{name}: {m}")


def _eager_steps(ids, labels, lr: float, steps: int):
    """Each step's mean micro-batch loss and the parameters after each step:
    eager under autocast, SGD at ``lr`` on the same batch every step."""
    model = _model()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses, params = [], []
    for _ in range(steps):
        optimizer.zero_grad()
        losses.append(_autocast_pass(model, ids, labels))
        optimizer.step()
        params.append({n: p.detach().clone() for n, p in model.named_parameters()})
    return losses, params


def _casts_a_parameter(mlir: str, params: int) -> bool:
    """Whether a truncf generic reads one of the first ``params`` arguments."""
    lines = mlir.splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"linalg.generic .*ins\(%arg(\d+) : tensor<[^>]*f32>\)", line)
        if m and int(m.group(1)) < params and "arith.truncf" in "\n".join(lines[i:i + 3]):
            return True
    return False


@pytest.mark.parametrize("mesh", [None, Mesh((2, 2), ("dp", "tp"))],
                         ids=["pp2", "pp2dp2tp2-vocab-parallel-zero1"])
def test_weights_cast_once_per_step(mesh):
    """Each stage's bf16 weight copies come from its W body, once per step
    before the step's first F, and every F and B of the step takes them (F
    casts no parameter itself). The second step casts the weights its first
    updated: two SGD steps on one batch against eager, each step's loss and
    the second step's parameter change (the gradient at the updated weights)."""
    (ids, labels), = token_batches(CFG, 1, ignored=False)
    model = _model()
    lr = 0.5
    plan = _plan(model, True) if mesh is not None else None
    step = compile_pipeline_train_step(
        model, lm_cross_entropy, torch.optim.SGD(model.parameters(), lr=lr), ids, labels,
        stages=2, microbatches=MICRO, mesh=mesh, plan=plan, autocast=torch.bfloat16,
        zero=1 if mesh is not None else 0)
    for lowered in step._lowered:
        assert "W" in lowered
        params = len(lowered["W"][1].arg_types)
        assert _casts_a_parameter(lowered["W"][0].mlir, params)
        assert not _casts_a_parameter(lowered["F"][0].mlir, params)
    ours = [step(ids, labels)]
    middle = step.parameters()
    ours.append(step(ids, labels))
    after = step.parameters()
    want, params = _eager_steps(ids, labels, lr, 2)
    assert abs(want[1] - want[0]) > 0.1  # the second step sees the update
    for got, loss in zip(ours, want):
        torch.testing.assert_close(got, loss, rtol=2e-2, atol=0)
    for name in params[0]:
        ours_change = middle[name] - after[name]
        want_change = params[0][name] - params[1][name]
        scale = max(want_change.abs().max().item(), 5e-3 * lr)
        torch.testing.assert_close(ours_change, want_change, rtol=5e-2, atol=2e-2 * scale,
                                   msg=lambda m, name=name: f"{name}: {m}")


def test_bad_autocast_dtype():
    (ids, labels), = token_batches(CFG, 1, ignored=False)
    model = _model()
    with pytest.raises(PipelineError, match="autocast must be torch.bfloat16"):
        compile_pipeline_train_step(model, lm_cross_entropy, torch.optim.SGD(model.parameters(),
                                                                             lr=1.0),
                                    ids, labels, autocast=torch.float64)
