"""Ready-made tensor-parallel plans for Hugging Face models, in PyTorch's
vocabulary (``parallelize_module`` plans; :func:`nova.parallel.torch_plan`
translates them)."""

from __future__ import annotations

import torch
from torch.distributed.tensor import Replicate
from torch.distributed.tensor.parallel import ColwiseParallel, ParallelStyle, RowwiseParallel

from nova.parallel.torch_styles import FusedColwiseParallel


def gpt2_tp_plan(model: torch.nn.Module | None = None, *,
                 vocab: bool = True) -> dict[str, ParallelStyle]:
    """Megatron tensor parallelism of ``transformers.GPT2LMHeadModel``
    (``model`` may be a ``GPT2Model``: then the paths have no
    ``transformer.`` and there is no ``lm_head``).

    Each block's fused ``attn.c_attn`` (q, k, v: 3 * n_embd outputs) is
    :class:`FusedColwiseParallel`: each chip gets its heads of q, k and v;
    ``attn.c_proj`` row parallel; ``mlp.c_fc`` column, ``mlp.c_proj`` row
    parallel: one all-reduce after attention and one after the MLP. With
    ``vocab`` the ``lm_head`` is column parallel (the vocabulary split, the
    logits gathered) and so, through the tied weight, the token embedding
    ``wte`` (vocab-parallel: one all-reduce)."""
    base = model is not None and type(model).__name__ == "GPT2Model"
    prefix = "" if base else "transformer."
    plan: dict[str, ParallelStyle] = {
        f"{prefix}h.*.attn.c_attn": FusedColwiseParallel(parts=3),
        f"{prefix}h.*.attn.c_proj": RowwiseParallel(),
        f"{prefix}h.*.mlp.c_fc": ColwiseParallel(),
        f"{prefix}h.*.mlp.c_proj": RowwiseParallel(),
    }
    if vocab:
        plan[f"{prefix}wte"] = RowwiseParallel(input_layouts=Replicate())
        if not base:
            plan["lm_head"] = ColwiseParallel(output_layouts=Replicate())
    return plan


def llama_tp_plan(*, vocab: bool = True) -> dict[str, ParallelStyle]:
    """Tensor parallelism of ``transformers.LlamaForCausalLM`` (torchtitan's
    plan without sequence parallelism): ``q_proj``, ``k_proj``, ``v_proj``,
    ``gate_proj``, ``up_proj`` column parallel, ``o_proj`` and ``down_proj``
    row parallel. With grouped-query attention the chips must divide
    ``num_key_value_heads`` (checked when compiling); each chip repeats its
    own key/value heads (:mod:`nova.parallel.rewrites`). With ``vocab`` the
    token embedding is vocab-parallel (row parallel) and ``lm_head`` column
    parallel, its logits gathered."""
    layer = "model.layers.*."
    plan: dict[str, ParallelStyle] = {
        f"{layer}self_attn.q_proj": ColwiseParallel(),
        f"{layer}self_attn.k_proj": ColwiseParallel(),
        f"{layer}self_attn.v_proj": ColwiseParallel(),
        f"{layer}self_attn.o_proj": RowwiseParallel(),
        f"{layer}mlp.gate_proj": ColwiseParallel(),
        f"{layer}mlp.up_proj": ColwiseParallel(),
        f"{layer}mlp.down_proj": RowwiseParallel(),
    }
    if vocab:
        plan["model.embed_tokens"] = RowwiseParallel(input_layouts=Replicate())
        plan["lm_head"] = ColwiseParallel(output_layouts=Replicate())
    return plan
