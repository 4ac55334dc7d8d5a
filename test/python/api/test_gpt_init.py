"""nova.models.GPT starts as GPT-2 does: its first language-model loss is that
of uniform guesses, ln(vocab_size)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from nova.models import GPT, GPTConfig


@pytest.mark.parametrize("cfg", [
    GPTConfig(d_model=128, n_heads=4, n_layers=2, seq_len=64, vocab_size=256),  # the README's
    GPTConfig(d_model=64, n_heads=4, n_layers=4, seq_len=16, vocab_size=1000,
              tie_weights=False, fused_qkv=True),
])
def test_the_first_loss_is_within_ten_percent_of_ln_vocab(cfg):
    torch.manual_seed(0)
    model = GPT(cfg)
    tokens = torch.randint(0, cfg.vocab_size, (4, cfg.seq_len + 1))
    logits = model(tokens[:, :-1])
    loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten()).item()
    assert abs(loss - math.log(cfg.vocab_size)) <= 0.1 * math.log(cfg.vocab_size), loss


def test_weights_follow_gpt2s_initialisation():
    torch.manual_seed(0)
    cfg = GPTConfig(d_model=256, n_heads=4, n_layers=8, seq_len=64, vocab_size=512)
    model = GPT(cfg)
    residual = 0.02 / math.sqrt(2 * cfg.n_layers)
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            assert p.abs().max().item() == 0.0, name
        elif "ln" in name:
            assert torch.equal(p, torch.ones_like(p)), name
        else:
            std = residual if name.endswith(("attn.proj.weight", "mlp.fc2.weight")) else 0.02
            assert abs(p.std().item() - std) < 0.1 * std, (name, p.std().item(), std)
            assert abs(p.mean().item()) < 0.1 * std, name
    assert model.lm_head.weight is model.tok_emb.weight
