"""Transformer building blocks written out in plain torch ops."""
from __future__ import annotations

import math

import torch
from torch import nn


class MLP(nn.Module):
    """Linear -> GELU -> Linear, the transformer feed-forward block."""

    def __init__(self, d_model: int, d_hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention with an optional causal mask.

    By default queries, keys and values have their own projections (as in
    LLaMA), so splitting each projection's output features splits the heads:
    Megatron tensor parallelism needs no re-layout of a fused QKV weight.
    ``fused_qkv=True`` is nanoGPT's and GPT-2's form instead: one ``qkv``
    Linear of ``3 * d_model`` outputs, split into q, k and v."""

    def __init__(self, d_model: int, n_heads: int, causal: bool = True,
                 fused_qkv: bool = False) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.causal = causal
        self.fused_qkv = fused_qkv
        if fused_qkv:
            self.qkv = nn.Linear(d_model, 3 * d_model)
        else:
            self.q = nn.Linear(d_model, d_model)
            self.k = nn.Linear(d_model, d_model)
            self.v = nn.Linear(d_model, d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        if self.fused_qkv:
            qkv = self.qkv(x).split(c, dim=-1)
        else:
            qkv = (self.q(x), self.k(x), self.v(x))
        q, k, v = (p.view(b, t, self.n_heads, self.d_head).transpose(1, 2) for p in qkv)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d_head))
        if self.causal:
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
        att = torch.softmax(scores, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class LayerNorm(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


class RMSNorm(nn.Module):
    """RMSNorm as in LLaMA: x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Softmax(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


class GELU(nn.Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(x, approximate=self.approximate)


class SiLU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.silu(x)
