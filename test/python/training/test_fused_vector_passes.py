"""Fewer vector passes in the training step (issue 39 item 3): cross-entropy's
backward without its one-hot gradient and row sum
(:mod:`nova.frontend.decompose_losses`) and AdamW with its scalars folded
(:class:`nova.training.optimizers.AdamWRule`), against torch eager."""

from __future__ import annotations

import copy

import pytest
import torch

import nova
from nova.frontend.decompose_losses import loss_decompositions
from nova.frontend.train_export import trace_functional
from nova.binary.targets import target_file
from nova.sim.target import load_target

aten = torch.ops.aten
RTOL, ATOL = 1e-4, 1e-5


def _ce_grad(x: torch.Tensor, target: torch.Tensor, **options) -> tuple[torch.Tensor, ...]:
    x = x.requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(x, target, **options)
    if loss.dim():
        loss = (loss * torch.linspace(0.5, 1.5, loss.numel())).sum()
    return torch.autograd.grad(loss, x)


@pytest.mark.parametrize("options", [dict(), dict(reduction="sum"), dict(reduction="none"),
                                     dict(ignore_index=3)], ids=["mean", "sum", "none", "ignore3"])
def test_fused_cross_entropy_backward_is_torchs_bit_for_bit(options):
    """On real tensors the fused decomposition gives what torch's two
    decompositions give, bit for bit, and eager's gradient to rounding; ignored
    rows (-100, or a chosen index) included."""
    torch.manual_seed(0)
    x, target = torch.randn(7, 11), torch.randint(0, 11, (7,))
    target[2] = options.get("ignore_index", -100)
    expected, = _ce_grad(x.clone(), target, **options)
    table = loss_decompositions()
    logsm = torch.log_softmax(x, 1)
    total = (target != options.get("ignore_index", -100)).sum().float()
    reduction = {"none": 0, "mean": 1, "sum": 2}[options.get("reduction", "mean")]
    go = torch.linspace(0.5, 1.5, 7) if reduction == 0 else torch.tensor(1.0)
    g = table[aten.nll_loss_backward.default](go, logsm, target, None, reduction,
                                              options.get("ignore_index", -100), total)
    ours = table[aten._log_softmax_backward_data.default](g, logsm, 1, torch.float32)
    from torch._decomp import decompositions as torch_decomp

    theirs = torch_decomp._log_softmax_backward_data(
        torch_decomp.nll_loss_backward(go, logsm, target, None, reduction,
                                       options.get("ignore_index", -100), total),
        logsm, 1, torch.float32)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    torch.testing.assert_close(ours, expected, rtol=1e-6, atol=1e-8)


def _sums_over_classes(graph: torch.fx.Graph, classes: int) -> int:
    return sum(1 for n in graph.nodes if n.target == aten.sum.dim_IntList
               and n.args[0].meta["val"].shape[-1] == classes and n.args[1] in ([1], [-1]))


def test_traced_cross_entropy_backward_has_no_row_sum():
    """In the joint graph the logits gradient reads no [rows, classes] one-hot
    gradient and sums none: the only sum over the classes is the forward's."""
    x, target = torch.randn(6, 10), torch.randint(0, 10, (6,))
    graph = trace_functional(lambda a, t: _ce_grad(a, t), [x, target]).graph
    graph.eliminate_dead_code()
    assert _sums_over_classes(graph, 10) == 1


def _exps_over(graph: torch.fx.Graph, shape: tuple[int, ...]) -> int:
    return sum(1 for n in graph.nodes if n.target == aten.exp.default
               and tuple(n.meta["val"].shape) == shape)


def test_traced_cross_entropy_takes_one_exp_per_logit():
    """The backward reuses the forward's exps (times a per-row exp(-lse)):
    one exp over the [rows, classes] logits in the joint graph, not two, and
    no log-probabilities tensor is left (nll_loss picks x[target] - max - lse)."""
    x, target = torch.randn(6, 10), torch.randint(0, 10, (6,))
    graph = trace_functional(lambda a, t: _ce_grad(a, t), [x, target]).graph
    graph.eliminate_dead_code()
    assert _exps_over(graph, (6, 10)) == 1
    assert not any(n.target == aten.sub.Tensor and tuple(n.meta["val"].shape) == (6, 10)
                   and n.args[1].meta["val"].shape == (6, 1)
                   and n.args[1].target == aten.log.default for n in graph.nodes)


@pytest.mark.parametrize("options", [dict(), dict(reduction="sum"), dict(reduction="none"),
                                     dict(ignore_index=3)], ids=["mean", "sum", "none", "ignore3"])
def test_cross_entropy_from_kept_parts_matches_eager(options):
    """The loss nll_loss takes from log_softmax's kept parts, and the gradient
    from its exps, against eager on real tensors (ignored rows included)."""
    torch.manual_seed(0)
    x, target = torch.randn(7, 11) * 4, torch.randint(0, 11, (7,))
    target[2] = options.get("ignore_index", -100)
    table = loss_decompositions()
    ignore = options.get("ignore_index", -100)
    reduction = {"none": 0, "mean": 1, "sum": 2}[options.get("reduction", "mean")]
    logsm = table[aten._log_softmax.default](x, 1, False)
    loss, total = table[aten.nll_loss_forward.default](logsm, target, None, reduction, ignore)
    expected = torch.nn.functional.cross_entropy(x, target, **options)
    # Within two roundings at the logits' scale (the loss) and at 1 (the
    # probabilities): eager's vectorized exp and log differ in the last bit
    # between CPUs (AVX2, AVX-512), and a row whose target holds nearly all
    # the mass has a loss of 6e-4 computed from logits near 10.
    eps = torch.finfo(torch.float32).eps
    torch.testing.assert_close(loss, expected, rtol=1e-6, atol=2 * eps * x.abs().max().item())
    go = torch.linspace(0.5, 1.5, 7) if reduction == 0 else torch.tensor(1.0)
    g = table[aten.nll_loss_backward.default](go, logsm, target, None, reduction, ignore, total)
    grad = table[aten._log_softmax_backward_data.default](g, logsm, 1, torch.float32)
    expected_grad, = _ce_grad(x.clone(), target, **options)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-6, atol=2 * eps)


def test_class_weights_keep_torchs_decomposition():
    """With class weights (a gradient whose row sum is not one value) the
    backward stays torch's, sum included, and still matches eager."""
    x, target = torch.randn(6, 10), torch.randint(0, 10, (6,))
    weight = torch.rand(10) + 0.5
    graph = trace_functional(lambda a, t: _ce_grad(a, t, weight=weight), [x, target]).graph
    graph.eliminate_dead_code()
    assert _sums_over_classes(graph, 10) == 2


class _Head(torch.nn.Module):
    """Embedding, one hidden linear with GELU, LayerNorm and an LM head."""

    def __init__(self, vocab: int = 48, d: int = 16) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.fc = torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(torch.nn.functional.gelu(self.fc(self.emb(ids)))))


def _loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             labels.reshape(-1))


def _data(steps: int, vocab: int = 48) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(5)
    batches = []
    for _ in range(steps):
        ids = torch.randint(0, vocab, (2, 8), generator=generator)
        labels = torch.randint(0, vocab, (2, 8), generator=generator)
        labels[1, :2] = -100
        batches.append((ids, labels))
    return batches


def test_f32_step_every_gradient_and_update_match_eager():
    """Two AdamW steps with clipping (which does clip): the loss, every
    parameter's gradient (the clipped one the optimizer used) and every updated
    parameter and moment against torch, f32 rtol 1e-4."""
    torch.manual_seed(0)
    model = _Head()
    reference = copy.deepcopy(model)
    options = dict(lr=1e-2, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), **options)
    ref_optimizer = torch.optim.AdamW(reference.parameters(), **options)
    batches = _data(2)
    step = nova.compile_train_step(model, _loss, optimizer, *batches[0], max_grad_norm=0.5,
                                   keep_grads=True)
    for ids, labels in batches:
        loss = step(ids, labels)
        ref_optimizer.zero_grad()
        expected = _loss(reference(ids), labels)
        expected.backward()
        norm = torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)
        assert norm > 0.5
        ref_optimizer.step()
        torch.testing.assert_close(loss, expected.detach(), rtol=RTOL, atol=ATOL)
        grads, params = step.grads(), step.parameters()
        for name, value in reference.named_parameters():
            torch.testing.assert_close(grads[name], value.grad, rtol=RTOL, atol=ATOL,
                                       msg=lambda m: f"grad {name}: {m}")
            torch.testing.assert_close(params[name], value.detach(), rtol=RTOL, atol=ATOL,
                                       msg=lambda m: f"param {name}: {m}")
    state = step.optimizer_state_dict()["state"]
    ref_state = ref_optimizer.state_dict()["state"]
    for key, ours in state.items():
        for slot in ("exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(ours[slot], ref_state[key][slot], rtol=RTOL, atol=ATOL)


def test_bf16_autocast_every_gradient_matches_eager_autocast():
    """bf16 autocast: the loss and every parameter's gradient against torch's
    CPU autocast on the same model (bf16 matmuls round in another order:
    each gradient within 2e-2 of torch's in norm)."""
    torch.manual_seed(0)
    model = _Head()
    reference = copy.deepcopy(model)
    ids, labels = _data(1)[0]
    step = nova.compile_train_step(model, _loss, torch.optim.SGD(model.parameters(), lr=0.1),
                                   ids, labels, keep_grads=True, autocast=torch.bfloat16)
    loss = step(ids, labels)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = _loss(reference(ids), labels)
    expected.float().backward()
    torch.testing.assert_close(loss, expected.detach().float(), rtol=1e-2, atol=0)
    grads = step.grads()
    for name, value in reference.named_parameters():
        drift = (grads[name] - value.grad).norm() / value.grad.norm()
        assert drift < 2e-2, (name, float(drift))


def test_adamw_moves_each_tensor_once():
    """AdamW's one pass (nova-tile joins the moments' loop into the update's,
    nova-forward-copies drops the reloads): each parameter, gradient and
    moment crosses HBM once in, and the parameter and moments once out, 28
    bytes per f32 parameter (the hyperparameters' scalars aside)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(256, 512)
    x, y = torch.randn(64, 256), torch.randn(64, 512)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer, x, y)
    report = step.time_step()
    from nova.sim.report_profile import profile_rows

    rows = [r for r in profile_rows(report, by="op") if "training/optimizers.py" in r.key]
    assert len(rows) == 1, [r.key for r in profile_rows(report, by="op")]
    params = sum(p.numel() for p in model.parameters())
    assert 28 * params <= rows[0].bytes <= 28 * params + 4096, rows[0].bytes / params


def test_clip_factor_folds_into_adamw():
    """With clipping, the clip's factor is folded into AdamW's moments: the
    scaled gradients are never stored, so the clip and AdamW together move at
    most 28 bytes per parameter (each gradient is read once), the clip costs
    the vector unit two passes over the gradients (square, sum) and AdamW 14
    (m and v in two two-stage instructions each, sqrt at 4, + eps, the
    division at 4 with the step's factor, the decayed parameter minus the
    update); 3 and 15 before the factor was folded."""
    torch.manual_seed(0)
    model = torch.nn.Linear(256, 512)
    x, y = torch.randn(64, 256), torch.randn(64, 512)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer, x, y,
                                   max_grad_norm=1.0)
    report = step.time_step()
    params = sum(p.numel() for p in model.parameters())
    target = load_target(target_file("nova-t1"))
    pass_ns = params / target.vector_lanes * 1e3 / target.clock_mhz

    def work(place: str) -> tuple[float, float]:
        stats = [s for s in report.instr_stats if s.location and place in s.location]
        return sum(s.vector_ns for s in stats) / pass_ns, sum(s.hbm_bytes for s in stats)

    update_passes, update_bytes = work("training/optimizers.py")
    clip_passes, clip_bytes = work("frontend/train_export.py")
    assert 24 * params <= update_bytes + clip_bytes <= 28 * params + 4096
    assert 14 <= update_passes < 14.5, update_passes  # instruction overheads: 16 cycles each
    assert 2 <= clip_passes < 2.5, clip_passes
