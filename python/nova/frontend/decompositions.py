"""The decomposition table applied to the exported program before torch-mlir
imports it: torch-mlir's own, with PyTorch's decompositions where torch-mlir's
lose accuracy or fail."""

from __future__ import annotations

from typing import Callable

import torch

from nova.frontend.attention_math import as_kernel_layout
from nova.frontend.decompose_conv import conv_decompositions
from nova.frontend.decompose_dtypes import dtype_decompositions
from nova.frontend.decompose_indexing import indexing_decompositions
from nova.frontend.decompose_losses import loss_decompositions
from nova.frontend.decompose_math import math_decompositions
from nova.frontend.decompose_pooling import pooling_decompositions
from nova.frontend.zero_size import zero_size_decompositions

aten = torch.ops.aten


def decomposition_table() -> dict[torch._ops.OperatorBase, Callable]:
    """torch-mlir's table, plus:

    - PyTorch's GELU decomposition: torch-mlir lowers tanh-GELU with
      sqrt(2/pi) rounded to 0.797724, off by 1e-4 relative, while torch's
      keeps the exact constant;
    - scaled_dot_product_attention through PyTorch's math path, laid out the
      way the exported graph expects (see :func:`_sdpa_math`);
    - cumsum/cumprod, sort/topk, scatters and index_put, and argmax/argmin and
      max/min with indices, as elementwise ops and single-result reductions
      (torch-mlir lowers them to ``tm_tensor`` ops or to two-result
      ``linalg.generic``s, which Nova does not take; see
      :mod:`nova.frontend.decompose_indexing`);
    - bool comparisons, bool mul, max and min, and integer matmuls in the
      types the units take (:mod:`nova.frontend.decompose_dtypes`);
    - max pooling (with its indices) as strided slices folded with
      compare-and-select (:mod:`nova.frontend.decompose_pooling`);
    - 1-D and 3-D convolutions as 2-D ones (:mod:`nova.frontend.decompose_conv`);
    - inverse trigonometric and hyperbolic functions, log2/log10/exp2/expm1 in
      the vector unit's exp/log/sqrt (:mod:`nova.frontend.decompose_math`);
    - ``roll`` without the empty slices torch-mlir's lowering makes of a
      whole turn (:mod:`nova.frontend.zero_size`);
    - cross-entropy's backward (``nll_loss_backward`` into
      ``_log_softmax_backward_data``) without its one-hot gradient and row sum
      (:mod:`nova.frontend.decompose_losses`).
    """
    from torch._decomp import get_decompositions
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    table = dict(get_decomposition_table())
    table.update(get_decompositions([aten.gelu]))
    table[aten.scaled_dot_product_attention.default] = _sdpa_math
    table.update(indexing_decompositions())
    table.update(dtype_decompositions(table))
    table.update(pooling_decompositions())
    table.update(conv_decompositions())
    table.update(math_decompositions())
    table.update(zero_size_decompositions())
    table.update(loss_decompositions())
    return table


def additive_mask(attn_mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """As torch's own SDPA does before its kernels: the math kernel adds the
    mask to the scores, so a bool mask's True keeps and False becomes -inf."""
    if attn_mask is None or attn_mask.dtype != torch.bool:
        return attn_mask
    return torch.zeros_like(attn_mask, dtype=dtype).masked_fill(attn_mask.logical_not(),
                                                                 float("-inf"))


def sdpa_math_kernel(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                     is_causal: bool = False, scale: float | None = None,
                     enable_gqa: bool = False) -> torch.Tensor:
    """SDPA as PyTorch's math kernel (matmul, softmax, matmul), in the
    kernel's own contiguous ``(N, H, L, E)`` layout."""
    output, _ = aten._scaled_dot_product_attention_math.default(
        query, key, value, attn_mask=additive_mask(attn_mask, query.dtype), dropout_p=dropout_p,
        is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
    return output


def _sdpa_math(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
               is_causal: bool = False, scale: float | None = None,
               enable_gqa: bool = False) -> torch.Tensor:
    """``aten.scaled_dot_product_attention`` as PyTorch's math kernel
    (matmul, softmax, matmul), which reaches linalg.

    torch.export traces SDPA with the strides of the kernel CPU would pick:
    the flash kernel returns ``(N, H, L, E)`` stored as ``(N, L, H, E)``, so
    ``out.transpose(1, 2)`` is contiguous and the model's next ``view``
    (GPT-2's and Llama's ``reshape(N, L, H * E)``) was traced as a view.
    torch-mlir's table decomposes SDPA into the math kernel, whose result is
    contiguous ``(N, H, L, E)``, and that view then fails ("Cannot view a
    tensor with shape [2, 16, 64] and strides (64, 128, 1)"). Here the result
    is laid out as the kernel CPU picks would have laid it out.
    """
    attn_mask = additive_mask(attn_mask, query.dtype)
    output = sdpa_math_kernel(query, key, value, attn_mask, dropout_p, is_causal, scale,
                              enable_gqa)
    return as_kernel_layout(output, query, key, value, attn_mask, dropout_p, is_causal,
                            scale, enable_gqa)

