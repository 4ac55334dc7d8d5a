"""The embedding's backward (``embedding_dense_backward``, an accumulating
index_put of the gradient's rows) as a DMA scatter-add in training steps,
against eager: repeated ids add up, in float32 and under bf16 autocast, and a
GPT whose LM head shares the embedding's weight gets both contributions in
that weight's gradient. Every parameter's gradient is compared; the models
are tiny so the file runs in seconds."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig

RTOL, ATOL = 1e-4, 1e-5
VOCAB = 24


class EmbeddingHead(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, 16)
        self.lin = torch.nn.Linear(16, 8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.tanh(self.emb(ids)))


_G = torch.Generator().manual_seed(0)
IDS = torch.tensor([[3, 5, 3, 3, 0, 23], [5, 5, 1, 3, 23, 0]])  # repeats within and across rows
TARGET = torch.randn(2, 6, 8, generator=_G)


def _grads_like_eager(step, reference: torch.nn.Module, loss_of, batch, rtol=RTOL, atol=ATOL,
                      autocast: torch.dtype | None = None) -> None:
    optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-2)
    for _ in range(2):
        loss = step(*batch)
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=autocast, enabled=autocast is not None):
            expected = loss_of(reference, *batch)
        expected.backward()
        torch.testing.assert_close(torch.as_tensor(loss), expected.detach().float(),
                                   rtol=rtol, atol=atol)
        grads = step.grads()
        for name, parameter in reference.named_parameters():
            torch.testing.assert_close(grads[name], parameter.grad, rtol=rtol, atol=atol, msg=name)
        optimizer.step()


def _mse(model, ids, target):
    return F.mse_loss(model(ids), target)


def test_embedding_backward_f32_is_a_dma_scatter() -> None:
    torch.manual_seed(0)
    model = EmbeddingHead()
    reference = copy.deepcopy(model)
    step = nova.compile_train_step(model, F.mse_loss, torch.optim.AdamW(model.parameters(), lr=1e-2),
                                   IDS, TARGET, keep_grads=True)
    assert " accumulate on dma" in step.program.stages["nova_isa"]
    _grads_like_eager(step, reference, _mse, (IDS, TARGET))


def test_embedding_backward_under_bf16_autocast() -> None:
    torch.manual_seed(1)
    model = EmbeddingHead()
    reference = copy.deepcopy(model)
    step = nova.compile_train_step(model, F.mse_loss, torch.optim.AdamW(model.parameters(), lr=1e-2),
                                   IDS, TARGET, keep_grads=True, autocast=torch.bfloat16)
    assert " accumulate on dma" in step.program.stages["nova_isa"]
    # bf16 matmuls on both sides, in different orders: bf16's tolerance.
    _grads_like_eager(step, reference, _mse, (IDS, TARGET), rtol=2e-2, atol=2e-3,
                      autocast=torch.bfloat16)


def _lm_loss(model, ids, targets):
    logits = model(ids)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def test_tied_gpt_gradients_add_the_head_and_the_embedding() -> None:
    torch.manual_seed(2)
    config = GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=8, vocab_size=40,
                       tie_weights=True)
    model = GPT(config)
    reference = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 40, (2, 8), generator=generator)
    ids[0, :4] = 7  # repeated ids
    targets = torch.randint(0, 40, (2, 8), generator=generator)

    def loss_fn(logits, t):
        return F.cross_entropy(logits.reshape(-1, 40), t.reshape(-1))

    step = nova.compile_train_step(model, loss_fn, torch.optim.AdamW(model.parameters(), lr=1e-2),
                                   ids, targets, keep_grads=True)
    # The token and the position embeddings' backwards.
    assert step.program.stages["nova_isa"].count(" accumulate on dma") >= 2
    _grads_like_eager(step, reference, _lm_loss, (ids, targets))
