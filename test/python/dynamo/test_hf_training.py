"""Hugging Face models in their default configuration (sdpa attention,
``use_cache`` as shipped, the model's own loss from ``labels=``), only the
sizes set and dropout 0, trained by torch.compile(backend="nova") with a plain
torch.optim.AdamW loop: the loss is eager's at every step and every
parameter's gradient at step 1 is eager's (max |d| <= 1e-3 * max |eager grad|,
or within 1e-8 for gradients that are zero up to rounding: a key projection's
bias, to which softmax is invariant)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import nova.dynamo
from nova.dynamo import backend

transformers = pytest.importorskip("transformers")


def _no_dropout(config):
    for name, value in list(vars(config).items()):
        if isinstance(value, float) and ("dropout" in name or name.endswith("_pdrop")):
            setattr(config, name, 0.0)
    return config


MODELS = {
    "gpt2": lambda t: t.GPT2LMHeadModel(_no_dropout(t.GPT2Config(
        n_layer=2, n_embd=32, n_head=4, vocab_size=64, n_positions=32))),
    "llama": lambda t: t.LlamaForCausalLM(_no_dropout(t.LlamaConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=64))),
    "gemma2": lambda t: t.Gemma2ForCausalLM(_no_dropout(t.Gemma2Config(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, vocab_size=64, sliding_window=4))),
    "bart": lambda t: t.BartForConditionalGeneration(_no_dropout(t.BartConfig(
        d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64, encoder_layers=1,
        decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
        vocab_size=64, max_position_embeddings=32))),
}


def _train(name: str, padded: bool = False, steps: int = 3) -> None:
    torch.manual_seed(0)
    model = MODELS[name](transformers).train()
    reference = copy.deepcopy(model)
    ids = torch.randint(3, 64, (2, 10))
    kwargs = {}
    if padded:
        mask = torch.ones(2, 10, dtype=torch.long)
        mask[1, 7:] = 0
        kwargs["attention_mask"] = mask
    compiled = torch.compile(model, backend=backend)
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (model, reference)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(steps):
            losses = []
            for net, optimizer in zip((compiled, reference), optimizers):
                optimizer.zero_grad()
                loss = net(ids, labels=ids, **kwargs).loss
                loss.backward()
                losses.append(loss.item())
                if step == 0 and net is reference:
                    for (pname, p), q in zip(model.named_parameters(),
                                             reference.parameters()):
                        assert (p.grad is None) == (q.grad is None), pname
                        if q.grad is None:
                            continue
                        bound = max(1e-3 * q.grad.abs().max().item(), 1e-8)
                        assert (p.grad - q.grad).abs().max().item() <= bound, pname
                optimizer.step()
            assert losses[0] == pytest.approx(losses[1], rel=1e-4), step
    for row in nova.dynamo.report():
        assert row.eager_reason is None, row.label
        # Only the empty KV cache's copies run in eager (tensors without elements).
        assert all("without elements" in why for _, why in row.eager_ops), row.eager_ops


@pytest.mark.parametrize("name", list(MODELS))
def test_hf_model_trains_like_eager(name: str) -> None:
    _train(name)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_hf_padded_batch_trains_like_eager(name: str) -> None:
    _train(name, padded=True)
