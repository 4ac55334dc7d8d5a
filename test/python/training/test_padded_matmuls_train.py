"""A training step over a vocabulary the matrix unit cannot tile evenly:
GPT-2's 50257 words (29 x 1733) and a prime 257. nova-pad-matmul pads the
LM head's forward width (N) and rows without a good divisor (M) with zeros
and splits its backward dX = dY W's contraction (K) into a whole number of
array rows and a remainder, so no matmul runs in slivers; the loss and every
parameter's gradient equal eager's."""

from __future__ import annotations

import copy
import re

import torch

import hf_zoo
import nova
from nova.models import GPT, GPTConfig


def _contractions(isa: str) -> list[int]:
    """The K of each of the program's matmul instructions (A's tile is [M, K])."""
    return [int(k) for k in re.findall(
        r"nova_isa\.matmul %\w+ : #nova_isa\.tile<\w+, \w+, \[\d+, (\d+)\]", isa)]


def test_prime_vocabulary_step_pads_the_backward_and_matches_eager():
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=1, seq_len=16, vocab_size=257))
    reference = copy.deepcopy(model)
    ids = torch.randint(0, 257, (2, 16))

    def loss_fn(logits, labels):
        return torch.nn.functional.cross_entropy(logits.reshape(-1, 257), labels.reshape(-1))

    step = nova.compile_train_step(model, loss_fn, torch.optim.SGD(model.parameters(), lr=0.1),
                                   ids, ids, keep_grads=True)
    loss = step(ids, ids)
    # dX = dY[32, 257] W[257, 64]: K = 256 + 1, two matmuls on slices (no
    # padded copy of dY), the first fed in 128-row chunks, the second one
    # row (unsplit, 257 is prime: 1-row chunks throughout). Every other K is
    # d_head's 16 or more.
    ks = _contractions(step.program.stages["nova_isa"])
    assert ks.count(1) == 1 and min(k for k in ks if k != 1) == 16
    expected = loss_fn(reference(ids), ids)
    expected.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-4, atol=1e-5)
    grads = step.grads()
    for name, param in reference.named_parameters():
        torch.testing.assert_close(grads[name], param.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_hf_gpt2_full_vocabulary_step_matches_eager():
    """Hugging Face GPT-2 with its real vocabulary (50257) and small sizes,
    sdpa and use_cache as shipped (dropout 0 so that eager is the reference)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_embd=64, n_layer=1, n_head=4, n_positions=32,
                                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    reference = copy.deepcopy(model)
    data = [dict(input_ids=torch.randint(0, 50257, (2, 16)))]
    data[0]["labels"] = data[0]["input_ids"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = nova.compile_train_step(model, None, optimizer, keep_grads=True, **data[0])
    loss = step(**data[0])
    eager_losses, eager_grads = hf_zoo.eager_steps(
        reference, lambda p: torch.optim.AdamW(p, lr=1e-3), data)
    torch.testing.assert_close(loss, eager_losses[0], rtol=1e-4, atol=0)
    assert hf_zoo.gradient_mismatches(step.grads(), eager_grads) == {}
