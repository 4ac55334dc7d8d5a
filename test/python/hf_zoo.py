"""Tiny Hugging Face models in their default configuration, for the tests.

Ten architectures (``ARCHITECTURES``), each built from a config with only the
sizes set: sdpa attention, ``use_cache`` and dropout as shipped, random weights
(nothing downloaded). ``build(name)`` gives the model, ``example(name)`` a
batch of keyword inputs including the ``labels`` its own loss reads, so a test
trains it with ``model(**batch).loss``::

    model = hf_zoo.build("llama", dropout=0.0)      # dropout 0: eager is the reference
    batch = hf_zoo.example("llama")                 # {"input_ids": ..., "labels": ...}
    step = nova.compile_train_step(model, None, opt, **batch)

``dropout=0.0`` sets every dropout probability of the config (and ``layerdrop``)
to 0, which is what comparing against eager needs; ``None`` keeps the shipped
values. ``padded=True`` (causal LMs) adds an ``attention_mask`` with padding.
Llama, Phi-3 and Gemma-2 use grouped-query attention (2 key/value heads for 4
query heads); Gemma-2's first layer attends through a sliding window (4)
shorter than the sequence (8).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

VOCAB = 64
SEQ = 8
BATCH = 2
IMAGE = 8          # ViT: 8 x 8 images, 4 x 4 patches
NUM_LABELS = 3     # ViT / sequence classification


@dataclass(frozen=True)
class Architecture:
    """One architecture: its model class, the sizes of its tiny config, and
    the kind of batch it takes."""
    config_class: str
    model_class: str
    sizes: dict[str, Any]
    kind: str                      # "causal", "seq2seq", "masked", "classify", "image"
    extra: dict[str, Any] = field(default_factory=dict)


ARCHITECTURES: dict[str, Architecture] = {
    "gpt2": Architecture("GPT2Config", "GPT2LMHeadModel", dict(
        vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=32), "causal"),
    "llama": Architecture("LlamaConfig", "LlamaForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32), "causal"),
    "opt": Architecture("OPTConfig", "OPTForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, ffn_dim=64, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=32, word_embed_proj_dim=32), "causal"),
    "phi3": Architecture("Phi3Config", "Phi3ForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
        original_max_position_embeddings=32,
        # The shipped special tokens (32000) lie outside a 64-token vocabulary.
        pad_token_id=0, bos_token_id=1, eos_token_id=2), "causal"),
    "gemma2": Architecture("Gemma2Config", "Gemma2ForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        max_position_embeddings=32, sliding_window=4), "causal"),
    "t5": Architecture("T5Config", "T5ForConditionalGeneration", dict(
        vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1,
        num_heads=4,
        # T5Config ships no decoder start token; T5 uses the pad id (0) for it.
        decoder_start_token_id=0), "seq2seq"),
    "bart": Architecture("BartConfig", "BartForConditionalGeneration", dict(
        vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=32), "seq2seq"),
    "vit": Architecture("ViTConfig", "ViTForImageClassification", dict(
        image_size=IMAGE, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64, num_labels=NUM_LABELS), "image"),
    "roberta": Architecture("RobertaConfig", "RobertaForMaskedLM", dict(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=32), "masked"),
    "distilbert": Architecture("DistilBertConfig", "DistilBertForMaskedLM", dict(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
        max_position_embeddings=32), "masked"),
}

#: More architectures the tests use beyond the ten (not in the models table):
#: Mistral's sliding window (4) shorter than the sequence (8), on every layer.
EXTRA: dict[str, Architecture] = {
    "mistral": Architecture("MistralConfig", "MistralForCausalLM", dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
        sliding_window=4), "causal"),
}
_ALL = {**ARCHITECTURES, **EXTRA}

#: Sequence-classification variants (``build(name, head="classify")``).
CLASSIFIERS = {
    "roberta": "RobertaForSequenceClassification",
    "distilbert": "DistilBertForSequenceClassification",
}

CAUSAL = [name for name, arch in ARCHITECTURES.items() if arch.kind == "causal"]

#: Smaller sizes for the tests that run a model op by op on the nova device
#: (``model.to("nova")``), where every distinct op and shapes compiles its own
#: program (~0.6 s each) and AdamW runs eight ops per parameter shape: one
#: layer, an MLP as wide as the model, a vocabulary of 32, so that every weight
#: is [32, 32], [32] or one of the attention projections' shapes. Pass the same
#: ``vocab_size`` to ``example``/``batches`` as ``vocab``::
#:
#:     model = hf_zoo.build("gpt2", dropout=0.0, **hf_zoo.FEW_SHAPES["gpt2"])
#:     data = hf_zoo.batches("gpt2", 3, vocab=hf_zoo.FEW_SHAPES["gpt2"]["vocab_size"])
FEW_SHAPES: dict[str, dict[str, Any]] = {
    "gpt2": dict(vocab_size=32, n_layer=1, n_inner=32),
    "llama": dict(vocab_size=32, num_hidden_layers=1, intermediate_size=32),
}


def _transformers():
    import pytest

    return pytest.importorskip("transformers")


def _no_dropout(config) -> None:
    # Every float attribute that is a dropout probability (attn_pdrop,
    # hidden_dropout_prob, dropout_rate, seq_classif_dropout, layerdrop, ...).
    for key, value in list(vars(config).items()):
        if isinstance(value, float) and ("drop" in key):
            setattr(config, key, 0.0)


def config(name: str, *, dropout: float | None = None, **overrides: Any):
    """The tiny default config of ``name``; ``dropout=0.0`` zeroes every
    dropout probability, another float sets every nonzero one to it."""
    arch = _ALL[name]
    transformers = _transformers()
    cfg = getattr(transformers, arch.config_class)(**{**arch.sizes, **overrides})
    if dropout is not None:
        if dropout == 0.0:
            _no_dropout(cfg)
        else:
            for key, value in list(vars(cfg).items()):
                if isinstance(value, float) and "drop" in key and key != "layerdrop" and value:
                    setattr(cfg, key, dropout)
    return cfg


def build(name: str, *, dropout: float | None = None, head: str | None = None,
          seed: int = 0, train: bool = True, **overrides: Any) -> torch.nn.Module:
    """``name``'s model from its tiny default config, weights drawn with
    ``torch.manual_seed(seed)``, in training mode unless ``train=False``."""
    transformers = _transformers()
    arch = _ALL[name]
    cfg = config(name, dropout=dropout,
                 **({"num_labels": NUM_LABELS} if head == "classify" else {}), **overrides)
    cls_name = CLASSIFIERS[name] if head == "classify" else arch.model_class
    torch.manual_seed(seed)
    model = getattr(transformers, cls_name)(cfg)
    return model.train(train)


def example(name: str, *, batch: int = BATCH, seq: int = SEQ, seed: int = 1,
            labels: bool = True, padded: bool = False, head: str | None = None,
            vocab: int = VOCAB) -> dict[str, torch.Tensor]:
    """Keyword inputs for ``name``'s model: token ids (avoiding the special
    ids 0-2) or pixel values, plus ``labels`` for the model's own loss
    (T5 and BART derive their decoder inputs from the labels; with
    ``labels=False`` they get ``decoder_input_ids``). Causal
    and masked LMs get ``-100`` on some positions. ``padded=True`` right-pads
    row 0 (``attention_mask`` 0 over its last 3 positions, labels -100 there).
    ``vocab`` is the model's ``vocab_size`` when a test sets a smaller one."""
    arch = _ALL[name]
    generator = torch.Generator().manual_seed(seed)
    out: dict[str, torch.Tensor] = {}
    if arch.kind == "image":
        out["pixel_values"] = torch.randn(batch, 3, IMAGE, IMAGE, generator=generator)
        if labels:
            out["labels"] = torch.randint(0, NUM_LABELS, (batch,), generator=generator)
        return out
    ids = torch.randint(3, vocab, (batch, seq), generator=generator)
    out["input_ids"] = ids
    if padded:
        mask = torch.ones(batch, seq, dtype=torch.int64)
        mask[0, seq - 3:] = 0
        out["attention_mask"] = mask
    if not labels:
        if arch.kind == "seq2seq":
            # Without labels the decoder's inputs are given (inference).
            out["decoder_input_ids"] = torch.randint(3, vocab, (batch, seq), generator=generator)
        return out
    if head == "classify":
        out["labels"] = torch.randint(0, NUM_LABELS, (batch,), generator=generator)
    elif arch.kind == "seq2seq":
        target = torch.randint(3, vocab, (batch, seq), generator=generator)
        target[0, -2:] = -100
        out["labels"] = target
    elif arch.kind == "masked":
        target = torch.full((batch, seq), -100, dtype=torch.int64)
        target[:, 1::3] = ids[:, 1::3]
        out["labels"] = target
    else:
        target = ids.clone()
        target[0, :2] = -100
        if padded:
            target[out["attention_mask"] == 0] = -100
        out["labels"] = target
    return out


def batches(name: str, n: int, **kwargs: Any) -> list[dict[str, torch.Tensor]]:
    """``n`` different examples (seeds 1 .. n) of the same shapes."""
    return [example(name, seed=1 + i, **kwargs) for i in range(n)]


def eager_steps(model: torch.nn.Module, make_optimizer: Callable[[Any], torch.optim.Optimizer],
                data: list[dict[str, torch.Tensor]]
                ) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
    """Eager reference: one optimizer step per batch with the model's own
    loss; returns the losses and every parameter's gradient at the first step."""
    optimizer = make_optimizer(model.parameters())
    losses, first_grads = [], {}
    for i, batch in enumerate(data):
        optimizer.zero_grad()
        loss = model(**batch).loss
        loss.backward()
        if i == 0:
            first_grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()
                           if p.grad is not None}
        optimizer.step()
        losses.append(loss.detach())
    return losses, first_grads


#: The gradient criterion of the training cells: per parameter, max |ours - eager|
#: <= GRAD_RTOL * max |eager|, plus GRAD_ATOL for gradients that are zero in exact
#: arithmetic (a key projection's bias: softmax ignores a shift shared by a row
#: of scores), where both sides hold only rounding noise (~1e-10).
GRAD_RTOL = 1e-3
GRAD_ATOL = 1e-6


def gradient_mismatches(grads: dict[str, torch.Tensor], eager: dict[str, torch.Tensor]
                        ) -> dict[str, tuple[float, float]]:
    """Parameters whose gradient misses the criterion (or is missing):
    ``{name: (max |delta|, max |eager|)}``."""
    bad = {}
    for name, expected in eager.items():
        got = grads.get(name)
        scale = float(expected.abs().max())
        if got is None:
            bad[name] = (float("inf"), scale)
            continue
        delta = float((got - expected).abs().max())
        if delta > GRAD_RTOL * scale + GRAD_ATOL:
            bad[name] = (delta, scale)
    return bad

