"""The pieces :func:`~nova.training.pipeline_stages.gpt_stages` cuts a
Hugging Face ``transformers.GPT2LMHeadModel`` into: its embeddings, its
blocks and its final LayerNorm and LM head, as ``nn.Module``s holding the
model's own modules (so a plan names their parameters by the model's
names, and the tied head stays the token embedding's weight)."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["hf_gpt2_parts", "is_hf_gpt2"]


def is_hf_gpt2(model: nn.Module) -> bool:
    return type(model).__name__ == "GPT2LMHeadModel" and hasattr(model, "transformer")


class _Embed(nn.Module):
    """``GPT2Model``'s token and position embeddings and their dropout."""

    def __init__(self, wte: nn.Embedding, wpe: nn.Embedding, drop: nn.Module) -> None:
        super().__init__()
        self.wte, self.wpe, self.drop = wte, wpe, drop

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        return self.drop(self.wte(ids) + self.wpe(positions))


class _Block(nn.Module):
    """A ``GPT2Block`` on its hidden states alone: no mask, so its attention
    is causal as ``GPT2Model`` runs it on a batch without padding."""

    def __init__(self, block: nn.Module) -> None:
        super().__init__()
        self.block = block

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.block(hidden, use_cache=False)[0]


def hf_gpt2_parts(model: nn.Module) -> tuple[nn.Module, list[nn.Module], list[nn.Module]]:
    """``(embeddings, blocks, [ln_f, lm_head])`` of a ``GPT2LMHeadModel``."""
    t = model.transformer
    return _Embed(t.wte, t.wpe, t.drop), [_Block(b) for b in t.h], [t.ln_f, model.lm_head]
