"""nova.attention_backward (flash attention's backward) gives torch's gradients.

The op alone, as a program of (q, k, v, out, grad_out, lse): dQ, dK and dV
against torch's autograd through SDPA, causal and not, f32 (the forward's
tolerances against float64) and bf16 (no less accurate than eager bf16
against float64). Sequence lengths cover one block, several key blocks with
the pipelined score slots wrapping, and a length that is not a multiple of the
128-row block."""
from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from attention_backward_cases import compile_backward, forward_and_grads, inputs


def _no_score_matrix_in_hbm(program, t: int) -> bool:
    hbm = rf"memref<(?:\d+x)*{t}x{t}x(?:f32|bf16)(?:, strided<[^>]*>)?, #nova\.memory_space<hbm>>"
    return re.search(hbm, program.stages["nova"]) is None


def _run(program, q, k, v, out, grad_out, lse):
    return [r.float() for r in program.run(q, k, v, out.to(q.dtype), grad_out, lse.float())]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("t", [64, 384, 200, 768])
def test_f32_gradients_match_torch(t: int, causal: bool) -> None:
    # An odd count: batches go in pairs. T = 768 (21 or 36 pairs a batch, 3
    # batches in one stream): dK/dV and dQ written mid-stream, the key blocks'
    # accumulators reused, the next batch's scores issued before this batch's
    # last gradients.
    b, d = (3, 32) if t in (64, 768) else (2, 32)
    q, k, v, grad_out = inputs(b, t, d, torch.float32, seed=t)
    out, lse, expected = forward_and_grads(q, k, v, grad_out, causal)
    program = compile_backward(b, t, d, torch.float32, causal)
    assert _no_score_matrix_in_hbm(program, t)
    got = _run(program, q, k, v, out, grad_out, lse)
    for name, g, e in zip(("dq", "dk", "dv"), got, expected):
        torch.testing.assert_close(g, e.float(), rtol=1e-4, atol=1e-5, msg=name)


def test_f32_gradients_with_one_buffer_set() -> None:
    # d_head 128 at T = 1536: two batches' dQ^T do not fit the accumulator
    # together, so each batch's loads wait for the previous batch's pairs.
    b, t, d = 2, 1536, 128
    q, k, v, grad_out = inputs(b, t, d, torch.float32, seed=1)
    out, lse, expected = forward_and_grads(q, k, v, grad_out, causal=True)
    program = compile_backward(b, t, d, torch.float32, causal=True)
    dqt = f"memref.alloc() : memref<{d}x{t}xf32, #nova.memory_space<acc>>"
    assert program.stages["nova"].count(dqt) == 1
    got = _run(program, q, k, v, out, grad_out, lse)
    for name, g, e in zip(("dq", "dk", "dv"), got, expected):
        torch.testing.assert_close(g, e.float(), rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.parametrize("causal", [True, False])
def test_bf16_gradients_as_accurate_as_eager(causal: bool) -> None:
    b, t, d = 2, 256, 64
    q, k, v, grad_out = inputs(b, t, d, torch.bfloat16, seed=7)
    out, lse, exact = forward_and_grads(q, k, v, grad_out, causal)
    program = compile_backward(b, t, d, torch.bfloat16, causal)
    assert _no_score_matrix_in_hbm(program, t)
    assert "memref<128x128xbf16, #nova.memory_space<sram>>" in program.stages["nova"]  # P, dS
    got = _run(program, q, k, v, out, grad_out, lse)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    eager_out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
    eager = torch.autograd.grad(eager_out, leaves, grad_out)
    for name, g, e, x in zip(("dq", "dk", "dv"), got, eager, exact):
        eager_error = (e.double() - x).abs().max().item()
        error = (g.double() - x).abs().max().item()
        assert error <= 1.5 * eager_error, (name, error, eager_error)
