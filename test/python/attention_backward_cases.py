"""One ``nova.attention_backward`` as a program, and torch's gradients to check it.

Shared by test_attention_backward.py and benchmarks/attention.py: the program
takes q, k, v ([B, T, D]), the forward's output and ``grad_out``
([B, T, Dv]), all f32 or all bf16, and the log-sum-exp ([B, T], f32) and returns dQ, dK, dV
(f32), which torch computes by autograd through SDPA."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from nova.compiler.build import build_program
from nova.compiler.options import TargetOptions
from nova.runtime.program import CompiledProgram

_TYPES = {torch.float32: "f32", torch.bfloat16: "bf16"}


def backward_program_text(b: int, t: int, d: int, dtype: torch.dtype, causal: bool) -> str:
    """A function of (q, k, v, out, grad_out, lse) returning (dq, dk, dv):
    q, k, v, out and grad_out of ``dtype``, lse and the gradients f32."""
    e = _TYPES[dtype]
    x = f"tensor<{b}x{t}x{d}x{e}>"
    f = f"tensor<{b}x{t}x{d}xf32>"
    lse = f"tensor<{b}x{t}xf32>"
    scale = 1.0 / math.sqrt(d)
    return f"""
func.func @forward(%q: {x}, %k: {x}, %v: {x}, %o: {x}, %g: {x}, %l: {lse}) -> ({f}, {f}, {f}) {{
  %e0 = tensor.empty() : {f}
  %e1 = tensor.empty() : {f}
  %e2 = tensor.empty() : {f}
  %r:3 = nova.attention_backward ins(%q, %k, %v, %o, %g, %l : {x}, {x}, {x}, {x}, {x}, {lse})
      outs(%e0, %e1, %e2 : {f}, {f}, {f}) scale {scale!r} {"causal" if causal else ""} -> {f}, {f}, {f}
  return %r#0, %r#1, %r#2 : {f}, {f}, {f}
}}
"""


def compile_backward(b: int, t: int, d: int, dtype: torch.dtype, causal: bool,
                     target: str = "nova-t1") -> CompiledProgram:
    return build_program(backward_program_text(b, t, d, dtype, causal),
                         TargetOptions(name=target, chips=1), params=[])


def forward_and_grads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, grad_out: torch.Tensor,
                      causal: bool) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """out and lse in f64 from q, k, v as given (bf16 values widened), and
    torch's dQ, dK, dV through SDPA in f64 (the reference both dtypes are held to)."""
    leaves = [x.detach().double().requires_grad_() for x in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
    scores = leaves[0] @ leaves[1].transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        t = q.shape[-2]
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    grads = torch.autograd.grad(out, leaves, grad_out.double())
    return out.detach(), lse.detach(), list(grads)


def inputs(b: int, t: int, d: int, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, t, d, generator=g).to(dtype) for _ in range(3))
    return q, k, v, torch.randn(b, t, d, generator=g).to(dtype)
