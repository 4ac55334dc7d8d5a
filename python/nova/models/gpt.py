"""A GPT-2-style decoder (pre-LayerNorm, causal attention, GELU MLP).

With ``GPTConfig(vocab_size=V)`` it is a language model: token ids
``[B, S]`` in, token and learned position embeddings, the blocks, a final
LayerNorm and an LM head (tied to the token embedding unless
``tie_weights=False``), logits ``[B, S, V]`` out. With ``vocab_size=None``
(the default) it is the decoder stack alone, over activations
``[B, S, d_model]``: what the parallelism tests and benchmarks measure.

Weights start as GPT-2's do: every Linear and Embedding weight normal with
std 0.02, the residual projections (``attn.proj``, ``mlp.fc2``) with std
0.02 / sqrt(2 · n_layers) so that the residual stream's variance does not grow
with depth, biases zero, LayerNorms at one and zero. The first loss of a
language model is then close to ln(vocab_size), as for uniform guesses.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from nova.models.blocks import MLP, MultiHeadAttention


@dataclass(frozen=True)
class GPTConfig:
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    #: The longest sequence (the number of learned positions).
    seq_len: int = 16
    mlp_ratio: int = 4
    #: Token ids in and logits out when set; None: activations in and out.
    vocab_size: int | None = None
    #: The LM head shares the token embedding's weight (GPT-2's form).
    tie_weights: bool = True
    #: One ``qkv`` Linear split into q, k, v (nanoGPT's form) instead of three.
    fused_qkv: bool = False

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        sizes = (self.d_model, self.n_heads, self.n_layers, self.seq_len, self.mlp_ratio)
        if min(sizes) <= 0 or (self.vocab_size is not None and self.vocab_size <= 0):
            raise ValueError(f"every GPTConfig size must be positive: {self}")

    @classmethod
    def gpt2_small(cls, seq_len: int = 128, vocab_size: int | None = None) -> "GPTConfig":
        """GPT-2 small's shape (GPT-2's own vocabulary is 50257)."""
        return cls(d_model=768, n_heads=12, n_layers=12, seq_len=seq_len, vocab_size=vocab_size)


class GPTBlock(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, causal=True,
                                       fused_qkv=cfg.fused_qkv)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg.d_model, cfg.mlp_ratio * cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """The decoder: a language model over token ids when ``cfg.vocab_size``
    is set, else the block stack over activations (see the module docstring)."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        if cfg.vocab_size is not None:
            self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
            self.pos_emb = nn.Embedding(cfg.seq_len, cfg.d_model)
        self.blocks = nn.ModuleList(GPTBlock(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        if cfg.vocab_size is not None:
            self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
            if cfg.tie_weights:
                self.lm_head.weight = self.tok_emb.weight
        self._init_like_gpt2()

    @torch.no_grad()
    def _init_like_gpt2(self) -> None:
        residual = 0.02 / math.sqrt(2 * self.cfg.n_layers)
        for name, module in self.named_modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                std = residual if name.endswith(("attn.proj", "mlp.fc2")) else 0.02
                nn.init.normal_(module.weight, mean=0.0, std=std)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.cfg.vocab_size is not None:
            t = x.shape[1]
            if t > self.cfg.seq_len:
                raise ValueError(f"sequence of {t} tokens is longer than seq_len {self.cfg.seq_len}")
            positions = torch.arange(t, device=x.device)
            x = self.tok_emb(x) + self.pos_emb(positions)
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        return self.lm_head(x) if self.cfg.vocab_size is not None else x
