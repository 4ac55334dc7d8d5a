"""nova.models.GPT as a language model: token ids in, logits out, tied and
untied LM heads, compiled for one chip and checked against torch eager."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.models import GPT, GPTConfig

RTOL, ATOL = 1e-4, 1e-5
VOCAB = 96


@pytest.mark.parametrize("tie_weights,fused_qkv", [(True, False), (False, False), (True, True)],
                         ids=["tied", "untied", "tied-fused-qkv"])
def test_gpt_lm_from_token_ids_matches_torch(tie_weights: bool, fused_qkv: bool) -> None:
    torch.manual_seed(7)
    cfg = GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16, vocab_size=VOCAB,
                    tie_weights=tie_weights, fused_qkv=fused_qkv)
    model = GPT(cfg).eval()
    assert (model.lm_head.weight is model.tok_emb.weight) == tie_weights
    ids = torch.randint(0, VOCAB, (2, cfg.seq_len))
    program = nova.compile(model, ids)
    with torch.no_grad():
        expected = model(ids)
    got = program(ids)
    assert got.shape == (2, cfg.seq_len, VOCAB)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)


def test_gpt_lm_takes_sequences_shorter_than_seq_len() -> None:
    torch.manual_seed(8)
    model = GPT(GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=16, vocab_size=VOCAB)).eval()
    ids = torch.randint(0, VOCAB, (1, 8))
    program = nova.compile(model, ids)
    with torch.no_grad():
        expected = model(ids)
    torch.testing.assert_close(program(ids), expected, rtol=RTOL, atol=ATOL)


def test_gpt_lm_refuses_sequences_beyond_its_positions() -> None:
    model = GPT(GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=8, vocab_size=VOCAB))
    with pytest.raises(ValueError, match="longer than seq_len 8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_gpt_without_vocabulary_is_the_decoder_over_activations() -> None:
    model = GPT(GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=8))
    assert not hasattr(model, "tok_emb") and not hasattr(model, "lm_head")
    assert model(torch.randn(1, 8, 32)).shape == (1, 8, 32)


def test_lm_head_with_a_prime_vocabulary_is_padded_and_exact():
    """A 257-token vocabulary (prime) would tile the LM head in 1-column
    slivers; nova-pad-matmul pads it to 384 columns and slices the logits."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16, vocab_size=257)).eval()
    ids = torch.randint(0, 257, (2, 16))
    program = nova.compile(model, ids, target="nova-t1")
    torch.testing.assert_close(program(ids), model(ids), rtol=1e-4, atol=1e-5)
    assert "x384xf32" in program.stages["nova"]
