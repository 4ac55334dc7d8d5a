"""The weights' gradients once per step in a pipeline (``defer_weight_grads``,
the default with saved activations; :mod:`nova.parallel.pipeline_wgrad`):
each micro-batch's backward computes what the input's gradient needs
(``Bx``), and one ``G`` per stage computes every weight's gradient over all
the micro-batches' tokens. Every parameter's gradient is compared with
eager's (SGD with lr 1: a step moves each parameter by its gradient), on one
chip per stage and on a DP x TP mesh per stage, where G reduces over dp
once a step instead of once a micro-batch. A stage whose weights' gradients
are not the micro-batches' summed (a statistic over the batch) keeps its
per-micro-batch backward and says why."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh
from nova.parallel.plan import megatron_transformer_plan
from nova.training.pipeline_train import compile_pipeline_train_step

from .lm_batches import lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=4)
M = 4


def _eager_grads(model, ids, labels) -> dict[str, torch.Tensor]:
    model.zero_grad()
    for i, l in zip(ids.chunk(M), labels.chunk(M)):
        (lm_cross_entropy(model(i), l) / M).backward()
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def _step_grads(autocast=None, **options):
    torch.manual_seed(0)
    model = GPT(CFG)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    ids, labels = token_batches(CFG, 1, ignored=False)[0]
    if autocast is not None:
        with torch.autocast("cpu", dtype=autocast):
            expected = _eager_grads(model, ids, labels)
    else:
        expected = _eager_grads(model, ids, labels)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    step = compile_pipeline_train_step(model, lm_cross_entropy, optimizer, ids, labels,
                                       stages=2, microbatches=M, autocast=autocast,
                                       **options)
    step(ids, labels)
    after = step.parameters()
    got = {n: before[n] - after[n] for n in before}
    return step, got, expected


def test_every_gradient_matches_eager():
    step, got, expected = _step_grads()
    assert step.deferred == ["", ""]
    for name, g in expected.items():
        torch.testing.assert_close(got[name], g, rtol=1e-4, atol=1e-6, msg=name)


def _dp_collectives(lines) -> int:
    """Float reductions over dp (the loss's token count, an i64, is the
    micro-batch's own)."""
    return sum(1 for line in lines if "groups [[0, 2], [1, 3], [4, 6], [5, 7]]" in line
               and ("nova.reduce_scatter" in line or "nova.all_reduce" in line)
               and "i64" not in line)


@pytest.mark.parametrize("autocast", [None, torch.bfloat16], ids=["f32", "bf16"])
def test_on_a_mesh_every_gradient_matches_eager_and_dp_reduces_once(autocast):
    """PP2 x DP2 x TP2 with ZeRO-1. bf16: each weight's gradient is one bf16
    matmul over the step's tokens (eager rounds each micro-batch's to bf16
    and sums in f32), within bf16's rounding of eager's. The per-micro-batch
    backward (Bx) reduces nothing over dp: G does, once a step, at most once
    per gradient."""
    torch.manual_seed(0)
    step, got, expected = _step_grads(
        autocast=autocast, mesh=Mesh((2, 2), ("dp", "tp")), zero=1,
        plan=megatron_transformer_plan(GPT(CFG), batch_axis="dp"))
    assert step.deferred == ["", ""]
    for s, bodies in enumerate(step._lowered):
        assert _dp_collectives(bodies["Bx"][1].lines) == 0
        assert 0 < _dp_collectives(bodies["G"][1].lines) <= len(step.infos[s].params)
    chip0 = step.stages["nova"].split("func.func @chip1")[0].splitlines()
    assert _dp_collectives(chip0) == _dp_collectives(step._lowered[0]["G"][1].lines)
    if autocast is None:
        for name, g in expected.items():
            torch.testing.assert_close(got[name], g, rtol=1e-4, atol=1e-6, msg=name)
        return
    for name, g in expected.items():
        # (+1e-6: the keys' bias has no gradient but rounding noise.)
        scale = float(g.abs().max())
        torch.testing.assert_close(got[name], g, rtol=0, atol=2e-2 * scale + 1e-6, msg=name)


class _BatchStatistic(nn.Module):
    """``x + w * mean over the batch of x``: the weight's gradient reads a
    statistic of the micro-batch, which a step's batch would change."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.full((d,), 0.5))
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return self.lin(x + self.w * x.mean(dim=0, keepdim=True))


def test_a_batch_statistic_keeps_the_per_microbatch_backward():
    torch.manual_seed(0)
    stages = [_BatchStatistic(8), _BatchStatistic(8)]
    params = [p for s in stages for p in s.parameters()]
    before = [p.detach().clone() for p in params]
    x, y = torch.randn(8, 8), torch.randn(8, 8)

    def loss_fn(out, t):
        return ((out - t) ** 2).mean()

    for p in params:
        p.grad = None
    for xi, yi in zip(x.chunk(M), y.chunk(M)):
        (loss_fn(stages[1](stages[0](xi)), yi) / M).backward()
    expected = [p.grad.clone() for p in params]
    with torch.no_grad():
        for p, b in zip(params, before):
            p.copy_(b)
    step = compile_pipeline_train_step(stages, loss_fn, torch.optim.SGD(params, lr=1.0), x, y,
                                       microbatches=M)
    assert all(step.deferred), step.deferred  # each stage says why not
    step(x, y)
    got = step.parameters()
    names = [f"stage{s}.{n}" for s, stage in enumerate(stages) for n, _ in stage.named_parameters()]
    for name, b, g in zip(names, before, expected):
        torch.testing.assert_close(b - got[name], g, rtol=1e-4, atol=1e-6, msg=name)


def test_hf_gpt2_defers_conv1d_transposed_activations():
    """Hugging Face GPT-2 (``hf_zoo``: its default configuration, the sizes
    small, dropout 0). ``Conv1D``'s weight gradient is ``x^T @ dy``, and the
    partition a mesh uses saves the transposed activation ``[d, tokens]``,
    which grows along dimension 1 with the batch: G concatenates the
    micro-batches' along it (strided copies), split over dp along it too.
    PP2 x DP2, f32, every gradient against eager."""
    pytest.importorskip("transformers")
    import hf_zoo

    generator = torch.Generator().manual_seed(1)
    ids, labels = (torch.randint(0, hf_zoo.VOCAB, (2 * M, hf_zoo.SEQ), generator=generator)
                   for _ in range(2))
    model = hf_zoo.build("gpt2", dropout=0.0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    for x, y in zip(ids.chunk(M), labels.chunk(M)):
        (lm_cross_entropy(model(input_ids=x).logits, y) / M).backward()
    expected = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    model = hf_zoo.build("gpt2", dropout=0.0)
    step = compile_pipeline_train_step(model, lm_cross_entropy,
                                       torch.optim.SGD(model.parameters(), lr=1.0), ids, labels,
                                       stages=2, microbatches=M, mesh=Mesh((2,), ("dp",)))
    assert step.deferred == ["", ""]
    for bodies in step._lowered:
        assert any(dim == 1 for _, _, dim in bodies["G"][0].sources)
    step(ids, labels)
    after = step.parameters()
    assert set(after) == set(expected)
    for name, g in expected.items():
        torch.testing.assert_close(before[name] - after[name], g, rtol=1e-4, atol=1e-6,
                                   msg=name)


def test_concatenation_dimension_and_strided_copies():
    """A boundary value grows along exactly one dimension, ``m`` times; the
    chip's copies into the step's buffer are strided views along it."""
    from nova.parallel import PipelineError
    from nova.parallel.pipeline_merge import ChipFunction
    from nova.parallel.pipeline_wgrad import concat_dim

    assert concat_dim((16, 32), (64, 32), 4) == 0
    assert concat_dim((128, 16), (128, 64), 4) == 1
    assert concat_dim((4, 4), (16, 16), 4) is None      # grows along two
    assert concat_dim((16, 32), (48, 32), 4) is None    # not m times
    assert concat_dim((16, 32), (16, 32), 4) is None
    fn = ChipFunction(0, [], [], {})
    hbm = "#nova.memory_space<hbm>"
    fn.concat(["%a", "%b"], f"memref<4x6xf32, {hbm}>", 1)
    views = [l.strip() for l in fn.lines if "memref.subview" in l]
    assert views[1].endswith(f"[0, 3] [4, 3] [1, 1] : memref<4x6xf32, {hbm}> to "
                             f"memref<4x3xf32, strided<[6, 1], offset: 3>, {hbm}>")
    assert sum("nova.dma_start" in l for l in fn.lines) == 2
    with pytest.raises(PipelineError, match="along dimension 1"):
        fn.concat(["%a", "%b", "%c", "%d"], f"memref<4x6xf32, {hbm}>", 1)
