"""Training through torch.compile(backend="nova") with F.scaled_dot_product_attention:
SDPA is traced in primitive ops (nova.frontend.attention_math), so the forward and
the backward run whole on Nova and every gradient is eager's; dropout (nn.Dropout
and SDPA's dropout_p) draws its masks from Nova's counter-based generator."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F

import nova.dynamo
from nova.dynamo import backend

RTOL, ATOL = 1e-4, 1e-5


class Attention(torch.nn.Module):
    """The issue's 10-line module: a Linear makes q, k, v, then SDPA."""

    def __init__(self, heads: int = 4, kv_heads: int = 4, **sdpa) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.sdpa = heads, kv_heads, sdpa
        self.qkv = torch.nn.Linear(32, 8 * (heads + 2 * kv_heads))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        n, length, _ = x.shape
        q, k, v = self.qkv(x).view(n, length, -1, 8).transpose(1, 2).split(
            [self.heads, self.kv_heads, self.kv_heads], dim=1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.sdpa)


def _bool_mask() -> torch.Tensor:
    mask = torch.rand(2, 1, 8, 8) > 0.4
    mask[0, 0, 3] = False  # a row with every key masked: zeros, as torch's kernels give
    return mask


CASES = {
    "causal": (dict(is_causal=True), None),
    "non-causal": (dict(), None),
    "bool-mask": (dict(), _bool_mask),
    "additive-mask": (dict(scale=0.3), lambda: torch.randn(1, 4, 8, 8)),
    "gqa": (dict(heads=4, kv_heads=2, is_causal=True, enable_gqa=True), None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_sdpa_gradients_are_eager_and_nothing_runs_in_eager(case) -> None:
    sdpa, make_mask = CASES[case]
    torch.manual_seed(0)
    sizes = {k: sdpa.pop(k) for k in ("heads", "kv_heads") if k in sdpa}
    model = Attention(**sizes, **sdpa)
    x = torch.randn(2, 8, 32)
    mask = make_mask() if make_mask else None
    reference = copy.deepcopy(model)
    reference(x, mask).square().sum().backward()
    compiled = torch.compile(model, backend=backend)
    out = compiled(x, mask)
    out.square().sum().backward()
    torch.testing.assert_close(out, reference(x, mask), rtol=RTOL, atol=ATOL)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=RTOL, atol=ATOL, msg=name)
    rows = nova.dynamo.report()
    assert [r.kind for r in rows] == ["forward", "backward"]
    assert all(r.eager_ops == [] and r.eager_reason is None and r.partitions == 1
               for r in rows)


class DropoutAttention(Attention):
    def __init__(self, p: float, attention_p: float) -> None:
        super().__init__(dropout_p=attention_p)
        self.drop = torch.nn.Dropout(p)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.drop(super().forward(x, mask))


def test_dropout_runs_on_nova_at_the_configured_probability() -> None:
    """nn.Dropout after SDPA: the kept fraction is within 3 sigma of 1 - p,
    kept values are scaled by 1 / (1 - p), the gradient is masked the same
    way, nothing runs in eager, and the same torch seed gives the same values."""
    torch.manual_seed(1)
    p = 0.3
    model = DropoutAttention(p, 0.0).train()
    x = torch.randn(2, 8, 32)
    plain = model.drop
    model.drop = torch.nn.Identity()
    expected = model(x).detach()
    model.drop = plain
    compiled = torch.compile(model, backend=backend)
    torch.manual_seed(5)
    out = compiled(x)
    kept = out != 0
    fraction = kept.float().mean().item()
    sigma = math.sqrt(p * (1 - p) / out.numel())
    assert abs(fraction - (1 - p)) < 3 * sigma
    torch.testing.assert_close(out[kept], expected[kept] / (1 - p), rtol=RTOL, atol=ATOL)
    out.sum().backward()
    torch.manual_seed(5)
    again = compiled(x)
    torch.testing.assert_close(again, out)
    torch.manual_seed(6)
    assert not torch.equal(compiled(x), out)
    assert all(r.eager_ops == [] and r.eager_reason is None for r in nova.dynamo.report())


def test_sdpa_dropout_p_is_drawn_on_nova() -> None:
    """SDPA's dropout_p masks the attention weights: with v the identity, the
    output is the kept weights scaled by 1 / (1 - p), row sums average 1."""
    p = 0.25

    class Weights(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            v = torch.eye(16).expand(4, 2, 16, 16)
            return F.scaled_dot_product_attention(self.q(x), x, v, dropout_p=p)

    torch.manual_seed(2)
    model = Weights()
    x = torch.randn(4, 2, 16, 8)
    weights = torch.softmax(model.q(x) @ x.transpose(-2, -1) / math.sqrt(8), -1).detach()
    out = torch.compile(model, backend=backend)(x)
    kept = out != 0
    fraction = kept.float().mean().item()
    assert abs(fraction - (1 - p)) < 3 * math.sqrt(p * (1 - p) / out.numel())
    torch.testing.assert_close(out[kept], weights[kept] / (1 - p), rtol=RTOL, atol=ATOL)
    out.sum().backward()
    assert model.q.weight.grad is not None and torch.isfinite(model.q.weight.grad).all()
    assert all(r.eager_ops == [] and r.eager_reason is None for r in nova.dynamo.report())


def test_an_eager_backward_kernel_reads_what_its_eager_forward_saved(monkeypatch) -> None:
    """Without the SDPA rewrite, autograd records torch's fused attention,
    whose backward kernel Nova cannot lower: the kernel and the forward op
    whose logsumexp it reads both run in eager (nova.dynamo.training.paired_in_eager),
    so the gradients are eager's; the rest runs on Nova."""
    import nova.dynamo.training as training

    monkeypatch.setattr(training, "rewrite_for_training", lambda gm: (gm, False))
    torch.manual_seed(0)
    model = Attention(is_causal=True)
    x = torch.randn(2, 8, 32)
    reference = copy.deepcopy(model)
    reference(x).square().sum().backward()
    torch.compile(model, backend=backend)(x).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=RTOL, atol=ATOL, msg=name)
    forward, backward = nova.dynamo.report()
    assert any("flash_attention" in op for op, _ in forward.eager_ops)
    assert any("flash_attention" in op and op.endswith("_backward")
               for op, _ in backward.eager_ops)
    assert forward.partitions >= 1 and backward.partitions >= 1
