"""Tensor parallelism under bf16 autocast keeps attention split by heads:
autocast's attention batch matmuls take bf16 operands into an f32 result,
and ``nova-expand-batch-dims`` expands them as it does f32 ones, so the
heads of q, k and v are never all-gathered over tp. A DP2 x TP2 bf16 step
(ZeRO-1 over dp) of a 1-layer GPT against torch eager under
``torch.autocast("cpu", dtype=torch.bfloat16)``: the loss, every
parameter's gradient, read as its update (SGD at lr 1: ``p - p'`` is the
gradient the update used), within bf16's tolerances. (``keep_grads=True``
is not used: a bf16 DP x TP step with it fails in upstream sharding
propagation, "operand #0 does not dominate this use", before this change
too.)"""

from __future__ import annotations

import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh
from nova.parallel.plan import megatron_transformer_plan

from .lm_batches import lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=4, n_layers=1)
MESH = Mesh((2, 2), ("dp", "tp"))  # devices dp * 2 + tp: tp groups [0, 1], [2, 3]


def _model():
    torch.manual_seed(0)
    return GPT(CFG)


def test_bf16_dp2_tp2_splits_heads_and_matches_eager():
    (ids, labels), = token_batches(CFG, 1, ignored=False, batch=4)
    model = _model()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    step = nova.compile_train_step(model, lm_cross_entropy, optimizer, ids, labels,
                                   mesh=MESH, zero=1,
                                   autocast=torch.bfloat16,
                                   plan=megatron_transformer_plan(model, batch_axis="dp"))
    nova_ir = step.program.stages["nova"]
    over_tp = [line for line in nova_ir.splitlines()
               if "nova.all_gather" in line and "groups [[0, 1], [2, 3]]" in line]
    assert not over_tp, over_tp[:2]
    loss = step(ids, labels)

    eager = _model()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = lm_cross_entropy(eager(ids), labels).float()
    want.backward()
    torch.testing.assert_close(loss, want.detach(), rtol=2e-2, atol=0)
    after = step.parameters()
    named = dict(eager.named_parameters())
    assert set(after) == set(named)
    for name, p in named.items():
        # bf16 operands: ~3 significant digits per matmul, relative to the
        # gradient's scale (the key bias's is 0 up to rounding).
        scale = max(p.grad.abs().max().item(), 5e-3)
        torch.testing.assert_close(before[name] - after[name], p.grad, rtol=5e-2,
                                   atol=2e-2 * scale,
                                   msg=lambda m, name=name: f"gradient of {name}: {m}")
