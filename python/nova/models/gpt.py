"""A GPT-2-style decoder (pre-LayerNorm, causal attention, GELU MLP)."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from nova.models.blocks import MLP, MultiHeadAttention


@dataclass(frozen=True)
class GPTConfig:
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    seq_len: int = 16
    mlp_ratio: int = 4

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if min(self.d_model, self.n_heads, self.n_layers, self.seq_len, self.mlp_ratio) <= 0:
            raise ValueError(f"every GPTConfig field must be positive: {self}")

    @classmethod
    def gpt2_small(cls, seq_len: int = 128) -> "GPTConfig":
        return cls(d_model=768, n_heads=12, n_layers=12, seq_len=seq_len)


class GPTBlock(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, causal=True)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg.d_model, cfg.mlp_ratio * cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Decoder stack over embeddings (the token embedding lookup is left to the host)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.blocks = nn.ModuleList(GPTBlock(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)
