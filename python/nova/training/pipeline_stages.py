"""Pipeline stages of a ``nova.models.GPT`` or a Hugging Face
``GPT2LMHeadModel``: runs of its blocks as ``nn.Module``s sharing the
model's parameters."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from nova.parallel.errors import PipelineError
from nova.parallel.pipeline import Stage

__all__ = ["gpt_chunks", "gpt_stages"]


class _Embed(nn.Module):
    """A GPT's token and position embeddings (the first stage's head)."""

    def __init__(self, tok: nn.Embedding, pos: nn.Embedding) -> None:
        super().__init__()
        self.tok, self.pos = tok, pos

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))


def gpt_stages(model: nn.Module, split_points: Sequence[int] | None = None,
               stages: int = 2) -> list[Stage]:
    """A ``nova.models.GPT`` cut before each block index of ``split_points``
    (``[2]``: blocks ``[:2]`` | ``[2:]``), or into ``stages`` runs of blocks as
    even as they go. The embeddings go with the first stage, ``ln_f`` and the
    LM head with the last; the stages share the model's parameters (a tied LM
    head is the first stage's token embedding, used by the last stage too).
    A ``transformers.GPT2LMHeadModel`` is cut the same way at its blocks
    (:mod:`nova.training.pipeline_hf_stages`)."""
    embed, blocks, tail = _parts(model)
    if split_points is None:
        if stages < 2 or stages > len(blocks):
            raise PipelineError(f"cannot cut {len(blocks)} blocks into {stages} stages")
        split_points = [round(len(blocks) * s / stages) for s in range(1, stages)]
    points = list(split_points)
    if points != sorted(set(points)) or not points or points[0] <= 0 or points[-1] >= len(blocks):
        raise PipelineError(f"split points {points} must be increasing block indices in "
                            f"(0, {len(blocks)})")
    bounds = [0] + points + [len(blocks)]
    runs = [blocks[a:b] for a, b in zip(bounds, bounds[1:])]
    if embed is not None:
        runs[0] = [embed] + runs[0]
    runs[-1] = runs[-1] + tail
    return [Stage(run) for run in runs]


def _parts(model: nn.Module) -> tuple[nn.Module | None, list[nn.Module], list[nn.Module]]:
    """The model's embeddings (or None), blocks and what follows them."""
    from nova.training.pipeline_hf_stages import hf_gpt2_parts, is_hf_gpt2

    if is_hf_gpt2(model):
        return hf_gpt2_parts(model)
    if not hasattr(model, "blocks") or not hasattr(model, "cfg"):
        raise PipelineError(f"cannot cut a {type(model).__name__} into stages: give a "
                            f"nova.models.GPT, a transformers GPT2LMHeadModel or a list of "
                            f"stage modules")
    if model.cfg.vocab_size is None:
        return None, list(model.blocks), [model.ln_f]
    return (_Embed(model.tok_emb, model.pos_emb), list(model.blocks),
            [model.ln_f, model.lm_head])


def gpt_chunks(model: nn.Module, split_points: Sequence[int] | None, stages: int,
               virtual: int) -> list[Stage]:
    """The model chunks of a GPT for ``stages`` chips with ``virtual`` chunks
    each: :func:`gpt_stages` cut at ``split_points`` (their count + 1 must be
    a multiple of ``virtual``), or into ``stages * virtual`` equal runs of
    blocks (Megatron: the layers must divide evenly into the virtual
    stages). ``virtual == 1``: the stages as :func:`gpt_stages` cuts them."""
    if virtual == 1 or split_points is not None:
        return gpt_stages(model, split_points, stages)
    blocks, chunks = len(_parts(model)[1]), stages * virtual
    if stages < 2 or blocks % chunks:
        raise PipelineError(f"cannot cut {blocks} blocks into {stages} stages x {virtual} "
                            f"virtual stages: interleaving needs {chunks} chunks of equal "
                            f"blocks")
    return gpt_stages(model, None, chunks)
