"""Scaled dot-product attention in primitive ops, for training through
``torch.compile(backend="nova")``.

Before aot_autograd traces a Dynamo graph, its ``F.scaled_dot_product_attention``
calls are replaced by :func:`sdpa_math`: matmul, softmax and matmul, so the
forward and the backward aot_autograd derives are ops Nova lowers. Left as
SDPA, autograd records torch's fused CPU kernel, whose backward
(``_scaled_dot_product_flash_attention_for_cpu_backward``) Nova cannot lower
and which, run in eager, would read a ``logsumexp`` that Nova's forward
computes its own way: gradients would be wrong without an error.

The semantics are torch's: ``is_causal`` (top-left aligned), a boolean
``attn_mask`` (True takes part) or an additive one, both broadcast; ``scale``
(default ``1/sqrt(E)``); ``enable_gqa`` (key and value heads repeated to the
query's); a row every key of which is masked gives zeros (as torch's kernels
do, and with a zero gradient); ``dropout_p`` on the attention weights, drawn
from the training graph's random stream (:mod:`nova.frontend.dropout`).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from nova.frontend.dropout import RandomStream, dropout

F = torch.nn.functional

#: The call Dynamo records for ``F.scaled_dot_product_attention``.
SDPA_TARGETS = (F.scaled_dot_product_attention, torch.ops.aten.scaled_dot_product_attention,
                torch.ops.aten.scaled_dot_product_attention.default)


def sdpa_math(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
              attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
              is_causal: bool = False, scale: float | None = None,
              enable_gqa: bool = False, *, stream: RandomStream | None = None) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` as primitive ops (see the module);
    ``stream`` draws the dropout mask (torch's generator when None)."""
    if attn_mask is not None and is_causal:
        raise RuntimeError("scaled_dot_product_attention: an explicit attn_mask should not be "
                           "set when is_causal=True")
    length, source = query.size(-2), key.size(-2)
    if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
        groups = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(groups, dim=-3)
        value = value.repeat_interleave(groups, dim=-3)
    factor = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = torch.matmul(query, key.transpose(-2, -1)) * factor
    if is_causal:
        keep = torch.ones(length, source, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    empty = None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = torch.where(attn_mask, scores, torch.full_like(scores, float("-inf")))
        else:
            scores = scores + attn_mask
        # Rows with every key masked: zeros, and no NaN reaching the backward.
        empty = scores.amax(dim=-1, keepdim=True) == float("-inf")
        scores = torch.where(empty, torch.zeros_like(scores), scores)
    weights = torch.softmax(scores, dim=-1)
    if empty is not None:
        weights = torch.where(empty, torch.zeros_like(weights), weights)
    if dropout_p > 0.0:
        weights = (dropout(stream, weights, dropout_p) if stream is not None
                   else F.dropout(weights, dropout_p))
    output = torch.matmul(weights, value)
    return _as_fused(output, query, key, value, attn_mask, dropout_p, is_causal, scale,
                     enable_gqa)


def _as_fused(output: torch.Tensor, query: torch.Tensor, key: torch.Tensor,
              value: torch.Tensor, attn_mask: Any, dropout_p: float, is_causal: bool,
              scale: float | None, enable_gqa: bool) -> torch.Tensor:
    """``output`` laid out as the kernel torch picks would lay it out: the
    flash kernel returns ``(N, H, L, E)`` stored as ``(N, L, H, E)``, and
    models ``view`` its transpose (see ``nova.frontend.decompositions._sdpa_math``)."""
    if output.dim() != 4:
        return output
    try:
        choice = torch._fused_sdp_choice(query, key, value, attn_mask, dropout_p, is_causal,
                                         scale=scale, enable_gqa=enable_gqa)
    except RuntimeError:
        return output
    if choice == torch.nn.attention.SDPBackend.FLASH_ATTENTION.value:
        output = output.transpose(1, 2).contiguous().transpose(1, 2)
    return output
