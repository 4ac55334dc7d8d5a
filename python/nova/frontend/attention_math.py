"""``F.scaled_dot_product_attention`` in its math form, for traced training steps.

A training trace must not reach torch's fused CPU kernels: autograd would
record ``_scaled_dot_product_flash_attention_for_cpu`` and its fused backward,
which Nova does not lower (and whose saved tensors a later decomposition of the
forward would no longer match). :func:`sdpa_math` is the same function as
matmul, softmax and matmul, so autograd derives the backward from those ops and
the whole step reaches linalg. Semantics are torch's (``math`` backend):

- ``scale`` defaults to ``1 / sqrt(E)``; as torch's math kernel does, ``q`` and
  ``k`` are each multiplied by ``sqrt(scale)`` before their product;
- ``is_causal`` is the top-left-aligned lower triangle of ``(L, S)``;
- a bool ``attn_mask`` keeps where True (False adds -inf), a float one is added;
  masks broadcast against ``(N, H, L, S)`` (sliding windows, padding, ... are
  whatever mask the model built);
- ``enable_gqa``: ``Hq`` query heads share ``Hk`` key/value heads, query head
  ``h`` reading key/value head ``h // (Hq / Hk)`` (torch's repeat_interleave).
  Done by folding each group's query heads into the sequence axis,
  ``(N, Hk, g * L, E)``, so no key or value is copied and every tensor stays
  rank 4;
- ``dropout_p`` in training drops attention weights with a mask from the
  traced program's random stream (:mod:`nova.frontend.dropout`), scaled by
  ``1 / (1 - p)``.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

F = torch.nn.functional


#: The calls a Dynamo graph records for ``F.scaled_dot_product_attention``.
SDPA_TARGETS = (F.scaled_dot_product_attention, torch.ops.aten.scaled_dot_product_attention,
                torch.ops.aten.scaled_dot_product_attention.default)


def sdpa_math(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
              attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
              is_causal: bool = False, scale: float | None = None, enable_gqa: bool = False,
              *, dropout: Callable[[torch.Tensor, float], torch.Tensor] | None = None,
              stream: Any = None) -> torch.Tensor:
    """Attention of ``query (..., Hq, L, E)`` over ``key``/``value (..., Hk, S, E/Ev)``
    (contiguous, as torch's math kernel returns it; training traces only: the
    inference decomposition lays it out as eager's kernel does, :func:`as_kernel_layout`).

    ``dropout(weights, p)`` applies dropout to the attention weights when
    ``dropout_p > 0``; ``stream`` (a :class:`nova.frontend.dropout.RandomStream`)
    draws that mask instead. One of them is required then."""
    if stream is not None:
        from nova.frontend.dropout import attention_dropout

        dropout = lambda weights, p: attention_dropout(stream, weights, p)  # noqa: E731
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: explicit attn_mask should not be set "
                         "when is_causal=True")
    L, E = query.shape[-2], query.shape[-1]
    S = key.shape[-2]
    hq = query.shape[-3] if query.dim() >= 3 else 1
    hk = key.shape[-3] if key.dim() >= 3 else 1
    groups = 1
    if enable_gqa and hq != hk:
        if hq % hk or value.shape[-3] != hk:
            raise ValueError(f"scaled_dot_product_attention with enable_gqa: {hq} query heads "
                             f"are not a multiple of {hk} key/value heads")
        groups = hq // hk
    factor = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(E))

    mask = attn_mask
    if is_causal:
        rows = torch.arange(L, device=query.device).unsqueeze(-1)
        cols = torch.arange(S, device=query.device).unsqueeze(0)
        mask = rows >= cols
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=query.dtype, device=query.device).masked_fill(
            mask.logical_not(), float("-inf"))

    q = query * factor
    if groups > 1:
        # (..., Hk * g, L, E) -> (..., Hk, g * L, E): head hk * g + j's rows j * L + l.
        q = q.reshape(*query.shape[:-3], hk, groups * L, E)
        if mask is not None:
            mask = _group_mask(mask, hk, groups, L, S)
    scores = torch.matmul(q, key.transpose(-2, -1) * factor)
    empty = None
    if mask is not None:
        scores = scores + mask
    if attn_mask is not None:
        # A row whose every key is masked: torch's kernels give zeros (and a zero
        # gradient), where softmax over -inf alone would give NaN. (A causal mask
        # always keeps the diagonal.)
        empty = scores.amax(dim=-1, keepdim=True) == float("-inf")
        scores = torch.where(empty, torch.zeros_like(scores), scores)
    weights = torch.softmax(scores, dim=-1)
    if empty is not None:
        weights = torch.where(empty, torch.zeros_like(weights), weights)
    if dropout_p > 0.0:
        if dropout is None:
            raise ValueError("sdpa_math: dropout_p > 0 needs a dropout function")
        weights = dropout(weights, dropout_p)
    out = torch.matmul(weights, value)
    if groups > 1:
        out = out.reshape(*query.shape[:-1], value.shape[-1])
    return out


def _group_mask(mask: torch.Tensor, hk: int, groups: int, L: int, S: int) -> torch.Tensor:
    """An additive mask broadcastable to ``(..., Hk * g, L, S)``, laid out for
    the grouped scores ``(..., Hk, g * L, S)``."""
    while mask.dim() < 3:
        mask = mask.unsqueeze(0)
    lead = mask.shape[:-3]
    heads = mask.shape[-3]
    mask = mask.expand(*lead, heads, L, S)
    if heads == 1:
        # Every query head reads the same mask: repeat it for the g heads of a group.
        return mask.repeat(*([1] * len(lead)), 1, groups, 1)
    return mask.reshape(*lead, hk, groups * L, S)


def as_kernel_layout(output: torch.Tensor, query: torch.Tensor, key: torch.Tensor,
                     value: torch.Tensor, attn_mask: torch.Tensor | None, dropout_p: float,
                     is_causal: bool, scale: float | None, enable_gqa: bool) -> torch.Tensor:
    """``output (N, H, L, E)`` laid out as the CPU kernel eager picks would lay it
    out: the flash kernel returns it stored as ``(N, L, H, E)``, so a model may
    ``view`` its transpose (GPT-2's and DistilBERT's ``reshape(N, L, H * E)``
    after ``transpose(1, 2)`` traces as a view when that is contiguous)."""
    if output.dim() != 4:
        return output
    choice = cpu_kernel_choice(query, key, value, attn_mask, dropout_p, is_causal, scale,
                               enable_gqa)
    if choice == torch.nn.attention.SDPBackend.FLASH_ATTENTION.value:
        output = output.transpose(1, 2).contiguous().transpose(1, 2)
    return output


def cpu_kernel_choice(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attn_mask: torch.Tensor | None, dropout_p: float, is_causal: bool,
                      scale: float | None, enable_gqa: bool) -> int:
    """The SDPA kernel eager CPU picks for these operands. Under fake tensors
    ``torch._fused_sdp_choice`` answers MATH although the traced SDPA took the flash
    kernel (DistilBERT's float mask), so the choice is asked of real tensors with the
    same sizes, strides and dtypes."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    operands = (query, key, value, attn_mask)
    if any(t is not None and not all(isinstance(d, int) for d in (*t.shape, *t.stride()))
           for t in operands):
        return torch._fused_sdp_choice(query, key, value, attn_mask, dropout_p, is_causal,
                                       scale=scale, enable_gqa=enable_gqa)
    with unset_fake_temporarily(), torch.no_grad():
        real = [None if t is None else torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
                for t in operands]
        try:
            return torch._fused_sdp_choice(*real, dropout_p, is_causal, scale=scale,
                                           enable_gqa=enable_gqa)
        except RuntimeError:  # operands no kernel takes: eager raises at the call itself
            return torch.nn.attention.SDPBackend.MATH.value
