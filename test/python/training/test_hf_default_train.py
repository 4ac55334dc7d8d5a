"""Hugging Face models in their default configuration trained by
``nova.compile_train_step(model, None, optimizer, **batch)``, as
docs/training.md shows it: sdpa attention (grouped-query attention in Llama,
Phi-3 and Gemma-2; Gemma-2's sliding window of 4 over 8 tokens), ``use_cache``
as shipped (the KV cache the loss does not read is dropped), the model's own
loss from ``labels=``. The ten architectures of docs/models.md (and padded
GPT-2 / Llama batches) are its cells (test/python/api/test_models_table.py);
here: Mistral's sliding window, sequence classification, tied weights,
layer drop and the shipped dropout. Dropout probabilities are 0 so that eager
is the reference (the dropout tests below keep them). Per model: 3 AdamW steps, the
loss equal to eager's at every step (rtol 1e-4) and every parameter's gradient
at step 1 within ``hf_zoo.gradient_mismatches``' bound (1e-3 of eager's
largest)."""

from __future__ import annotations

import copy

import pytest
import torch

import hf_zoo
import nova
from nova.frontend.errors import NovaExportError

STEPS = 3


def _adamw(params):
    return torch.optim.AdamW(params, lr=1e-2)


def _train_and_compare(model: torch.nn.Module, data: list[dict[str, torch.Tensor]]) -> None:
    reference = copy.deepcopy(model)
    step = nova.compile_train_step(model, None, _adamw(model.parameters()), keep_grads=True,
                                   **data[0])
    losses, grads = [], {}
    for i, batch in enumerate(data):
        losses.append(step(**batch))
        if i == 0:
            grads = step.grads()
    eager_losses, eager_grads = hf_zoo.eager_steps(reference, _adamw, data)
    torch.testing.assert_close(torch.stack(losses), torch.stack(eager_losses), rtol=1e-4, atol=0)
    assert sorted(grads) == sorted(dict(reference.named_parameters()))
    assert hf_zoo.gradient_mismatches(grads, eager_grads) == {}


@pytest.mark.parametrize("padded", [False, True], ids=["full", "padded"])
def test_mistral_sliding_window_trains_like_eager(padded):
    model = hf_zoo.build("mistral", dropout=0.0)
    _train_and_compare(model, hf_zoo.batches("mistral", STEPS, padded=padded))


@pytest.mark.parametrize("name", list(hf_zoo.CLASSIFIERS))
def test_sequence_classification_trains_like_eager(name):
    model = hf_zoo.build(name, dropout=0.0, head="classify")
    _train_and_compare(model, hf_zoo.batches(name, STEPS, head="classify"))


def test_compiling_leaves_a_multiply_tied_model_intact():
    # T5's shared embedding is also encoder/decoder.embed_tokens and lm_head:
    # the trace must restore the very parameter object under every name.
    model = hf_zoo.build("t5", dropout=0.0)
    shared = model.shared.weight
    nova.compile_train_step(model, None, _adamw(model.parameters()), **hf_zoo.example("t5"))
    assert model.shared.weight is shared
    assert model.encoder.embed_tokens.weight is shared
    assert model.decoder.embed_tokens.weight is shared
    assert model.lm_head.weight is shared


def test_layer_drop_that_would_skip_layers_is_an_error():
    # OPT draws torch.rand([]) per layer and skips the layer below layerdrop: a
    # compiled step cannot choose its layers per call (layerdrop 0, the default,
    # never skips and trains above).
    model = hf_zoo.build("opt", dropout=0.0)
    model.model.decoder.layerdrop = 0.5
    with pytest.raises(NovaExportError, match="random draw"):
        nova.compile_train_step(model, None, _adamw(model.parameters()), **hf_zoo.example("opt"))


def test_default_dropout_same_seed_same_losses():
    # GPT-2 as shipped: resid/embd/attn dropout 0.1, the attention's through
    # scaled_dot_product_attention(dropout_p=0.1), all on Nova's generator.
    data = hf_zoo.batches("gpt2", STEPS)

    def compiled(seed: int):
        model = hf_zoo.build("gpt2")
        assert model.config.attn_pdrop == 0.1
        step = nova.compile_train_step(model, None, _adamw(model.parameters()), seed=seed,
                                       **data[0])
        assert step.layout.seed
        return step

    first, again = compiled(0), compiled(0)
    start = again.state_dict()
    losses = torch.stack([first(**batch) for batch in data])
    torch.testing.assert_close(torch.stack([again(**batch) for batch in data]), losses,
                               rtol=0, atol=0)
    # The same weights under another seed: other masks, other losses.
    start["random"] = {"seed": 1, "calls": 0}
    again.load_state_dict(start)
    assert not torch.equal(torch.stack([again(**batch) for batch in data]), losses)
    # And dropout does act: eager without dropout differs.
    eager, _ = hf_zoo.eager_steps(hf_zoo.build("gpt2", dropout=0.0), _adamw, data)
    assert not torch.allclose(losses, torch.stack(eager), rtol=1e-4)


def test_a_parameter_outside_the_model_state_is_an_error_not_a_constant():
    # A parameter reached around the module's attributes would be a constant of
    # the step: no gradient, no update. Refused, naming the line.
    hidden = torch.nn.Linear(4, 4)

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (self.a(x) + hidden(x)).sum()

    model = Model()
    with pytest.raises(NovaExportError, match=r"(?s)read a parameter of shape \[4, 4\].*hidden\(x\)"):
        nova.compile_train_step(model, None, _adamw(model.parameters()), torch.randn(2, 4))
