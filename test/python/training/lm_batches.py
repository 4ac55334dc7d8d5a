"""The language-model loss and token batches the multi-chip training tests share."""

from __future__ import annotations

import torch


def lm_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             labels.reshape(-1))


def token_batches(cfg, n: int = 5, *, ignored: bool = True, batch: int = 8):
    """``n`` (ids, labels) pairs of ``batch`` x ``cfg.seq_len`` tokens; with
    ``ignored`` some labels are -100 (the label count becomes an i64 sum)."""
    generator = torch.Generator().manual_seed(1)
    batches = []
    for _ in range(n):
        ids = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len), generator=generator)
        labels = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len), generator=generator)
        if ignored:
            labels[::3, :4] = -100
        batches.append((ids, labels))
    return batches


def eager_microbatched(model, optimizer, batches, microbatches: int = 4) -> torch.Tensor:
    """torch itself, micro-batch by micro-batch (gradients accumulated, the
    loss their mean), one optimizer step a batch: each step's loss."""
    losses = []
    for ids, labels in batches:
        optimizer.zero_grad()
        total = 0
        for i, l in zip(ids.chunk(microbatches), labels.chunk(microbatches)):
            loss = lm_cross_entropy(model(i), l) / microbatches
            loss.backward()
            total = total + loss.detach()
        optimizer.step()
        losses.append(total)
    return torch.stack(losses)
