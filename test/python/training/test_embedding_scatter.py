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


def test_data_parallel_embedding_backward_is_a_dma_scatter() -> None:
    """Data parallel over 2 chips: after partitioning the bounds-checked read
    of the ids is fused into the one-hot's body, and the embeddings'
    backwards are still scatter-adds on each chip (then all-reduced), not
    [vocab x tokens] matmuls. The loss and every parameter's gradient as
    eager's over the whole batch, read as the update of SGD at lr 1
    (``keep_grads=True`` with a mesh fails in sharding propagation, before
    this change too)."""
    from nova.parallel import Mesh

    torch.manual_seed(2)
    config = GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=8, vocab_size=40,
                       tie_weights=True)
    model = GPT(config)
    reference = copy.deepcopy(model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    generator = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 40, (4, 8), generator=generator)
    ids[0, :4] = 7  # repeated ids
    targets = torch.randint(0, 40, (4, 8), generator=generator)
    step = nova.compile_train_step(model, _lm_loss_of_logits, torch.optim.SGD(model.parameters(), lr=1.0),
                                   ids, targets, mesh=Mesh((2,), ("dp",)))
    assert step.program.stages["nova_isa"].count(" accumulate on dma") >= 2
    loss = step(ids, targets)
    expected = _lm_loss(reference, ids, targets)
    expected.backward()
    torch.testing.assert_close(torch.as_tensor(loss), expected.detach(), rtol=RTOL, atol=ATOL)
    after = step.parameters()
    for name, parameter in reference.named_parameters():
        torch.testing.assert_close(before[name] - after[name], parameter.grad, rtol=RTOL,
                                   atol=ATOL, msg=name)


def _lm_loss_of_logits(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
