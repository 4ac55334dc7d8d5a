"""``F.scaled_dot_product_attention`` in training: its math form
(:mod:`nova.frontend.attention_math`) against torch's kernel, values and
gradients, for every argument a model passes (causal, bool and additive masks,
a sliding window shorter than the sequence, ``scale``, grouped-query attention
with and without a mask); a compiled step's gradients equal eager's; and
``dropout_p`` in training draws its mask on Nova's generator: kept fraction
within 3 sigma of ``1 - p``, kept weights scaled by ``1 / (1 - p)``."""

from __future__ import annotations

import math

import pytest
import torch

import nova
from nova.frontend.attention_math import sdpa_math

F = torch.nn.functional
N, L, S, E = 2, 8, 8, 16


def _qkv(hq: int = 4, hk: int = 4, s: int = S, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(N, hq, L, E, generator=g, dtype=torch.float64),
            torch.randn(N, hk, s, E, generator=g, dtype=torch.float64),
            torch.randn(N, hk, s, E, generator=g, dtype=torch.float64))


def _sliding(window: int) -> torch.Tensor:
    i = torch.arange(L).unsqueeze(-1)
    j = torch.arange(S).unsqueeze(0)
    return (j <= i) & (j > i - window)


def _padding_additive() -> torch.Tensor:
    mask = torch.zeros(N, 1, L, S, dtype=torch.float64)
    mask[0, :, :, -3:] = torch.finfo(torch.float64).min
    return mask


CASES = {
    "plain": dict(),
    "causal": dict(is_causal=True),
    "bool_mask": dict(attn_mask=torch.rand(L, S, generator=torch.Generator().manual_seed(3)) > 0.3),
    "additive_mask": dict(attn_mask=_padding_additive()),
    "sliding_window": dict(attn_mask=_sliding(3)),
    "scale": dict(is_causal=True, scale=0.3),
    "gqa_causal": dict(is_causal=True, enable_gqa=True, heads=(4, 2)),
    "gqa_per_head_mask": dict(attn_mask=torch.randn(N, 4, L, S, dtype=torch.float64),
                              enable_gqa=True, heads=(4, 1)),
    "gqa_bool_window": dict(attn_mask=_sliding(4), enable_gqa=True, heads=(6, 2)),
    # Row 2 masks every key: torch's kernels give zeros and a zero gradient there.
    "fully_masked_row": dict(attn_mask=torch.ones(L, S, dtype=torch.bool).index_fill(
        0, torch.tensor([2]), False)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_math_form_matches_torch_values_and_gradients(case):
    kwargs = dict(CASES[case])
    hq, hk = kwargs.pop("heads", (4, 4))
    inputs = [t.requires_grad_() for t in _qkv(hq, hk)]
    expected = F.scaled_dot_product_attention(*inputs, **kwargs)
    got = sdpa_math(*inputs, **kwargs)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    weight = torch.randn_like(expected)
    expected_grads = torch.autograd.grad((expected * weight).sum(), inputs)
    got_grads = torch.autograd.grad((got * weight).sum(), inputs)
    for g, e in zip(got_grads, expected_grads):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12)


class _Attention(torch.nn.Module):
    """A Linear producing q, k, v, then SDPA (the issue's 10-line case)."""

    def __init__(self, heads: int = 2, kv_heads: int = 2, dropout_p: float = 0.0, **kwargs):
        super().__init__()
        self.heads, self.kv_heads, self.dropout_p, self.kwargs = heads, kv_heads, dropout_p, kwargs
        self.qkv = torch.nn.Linear(16, 8 * (heads + 2 * kv_heads))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, l, _ = x.shape
        q, k, v = self.qkv(x).split([8 * self.heads, 8 * self.kv_heads, 8 * self.kv_heads], -1)
        q = q.view(n, l, self.heads, 8).transpose(1, 2)
        k = k.view(n, l, self.kv_heads, 8).transpose(1, 2)
        v = v.view(n, l, self.kv_heads, 8).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout_p,
                                             enable_gqa=self.heads != self.kv_heads, **self.kwargs)
        return out.transpose(1, 2).reshape(n, l, -1).square().sum()


@pytest.mark.parametrize("kwargs", [
    dict(is_causal=True), dict(), dict(attn_mask=_sliding(3)),
    dict(attn_mask=torch.zeros(L, S).masked_fill(~_sliding(5), float("-inf"))),
    dict(is_causal=True, heads=4, kv_heads=2)], ids=["causal", "full", "bool", "additive", "gqa"])
def test_compiled_step_gradients_equal_eager(kwargs):
    torch.manual_seed(0)
    model = _Attention(**kwargs)
    x = torch.randn(2, L, 16)
    step = nova.compile_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.1), x,
                                   keep_grads=True)
    loss = step(x)
    expected = model(x)
    expected.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-4, atol=1e-5)
    grads = step.grads()
    for name, param in model.named_parameters():
        torch.testing.assert_close(grads[name], param.grad, rtol=1e-4, atol=1e-5)


class _AttentionWeights(torch.nn.Module):
    """Attention whose value is a parameter: ``d loss / d v[.., s, 0]`` is the
    kept-and-scaled attention weight of key ``s`` (one query, uniform weights)."""

    def __init__(self, heads: int, keys: int, p: float) -> None:
        super().__init__()
        self.p = p
        self.v = torch.nn.Parameter(torch.zeros(N, heads, keys, 1))

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        k = torch.zeros(*self.v.shape[:-1], q.shape[-1])
        return F.scaled_dot_product_attention(q, k, self.v, dropout_p=self.p).sum()


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_sdpa_dropout_keeps_one_minus_p_and_scales(p):
    heads, keys = 4, 256
    model = _AttentionWeights(heads, keys, p)
    q = torch.zeros(N, heads, 1, 8)
    step = nova.compile_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.0), q,
                                   keep_grads=True, seed=5)
    assert step.layout.seed
    step(q)
    weights = step.grads()["v"].flatten()
    kept = weights != 0
    # Every weight is 1 / keys; a kept one is scaled by 1 / (1 - p).
    torch.testing.assert_close(weights[kept], torch.full_like(weights[kept], 1 / keys / (1 - p)),
                               rtol=1e-6, atol=0)
    n = weights.numel()
    sigma = math.sqrt(n * p * (1 - p))
    assert abs(int(kept.sum()) - n * (1 - p)) <= 3 * sigma
    # Another call draws another mask.
    step(q)
    assert not torch.equal(step.grads()["v"].flatten() != 0, kept)
