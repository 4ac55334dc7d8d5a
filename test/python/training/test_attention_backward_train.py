"""A training step's attention runs fused forward and backward: nova.attention
writes the log-sum-exp, nova.attention_backward recomputes the probabilities
from it, and no T x T tensor reaches HBM. Through ``F.scaled_dot_product_attention``
and through the explicit softmax form, causal and not, f32 and bf16 autocast:
the loss and every parameter's gradient equal eager's."""
from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F

import nova

T, HEADS, D = 40, 2, 16


class _Attention(torch.nn.Module):
    """qkv projection, attention (SDPA or written out), output projection."""

    def __init__(self, causal: bool, explicit: bool) -> None:
        super().__init__()
        self.causal, self.explicit = causal, explicit
        self.qkv = torch.nn.Linear(HEADS * D, 3 * HEADS * D)
        self.proj = torch.nn.Linear(HEADS * D, HEADS * D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attend(x).square().mean()

    def attend(self, x: torch.Tensor) -> torch.Tensor:
        n, t, _ = x.shape
        q, k, v = self.qkv(x).view(n, t, 3, HEADS, D).permute(2, 0, 3, 1, 4)
        if self.explicit:
            scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(D))
            if self.causal:
                hidden = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
                scores = scores.masked_fill(hidden, float("-inf"))
            out = scores.softmax(-1) @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(out.transpose(1, 2).reshape(n, t, HEADS * D))


class _Layers(torch.nn.Module):
    """Residual attention layers, as a GPT stacks them: under bf16 autocast
    every layer reads the one converted causal mask."""

    def __init__(self, layers: int, explicit: bool) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(_Attention(True, explicit) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + layer.attend(x)
        return x.square().mean()


def _fused(step, t: int = T) -> bool:
    """Both attention ops were formed and no t x t buffer is in HBM."""
    tiles = step.program.stages["nova"]
    square = rf"memref<(?:\d+x)*{t}x{t}x(?:f32|bf16)(?:, strided<[^>]*>)?, #nova\.memory_space<hbm>>"
    return re.search(square, tiles) is None


def _assert_equals_eager(step, model: torch.nn.Module, x: torch.Tensor, loss: torch.Tensor) -> None:
    """The step's loss and every parameter's gradient equal eager's (f32)."""
    expected = model(x)
    expected.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-4, atol=1e-5)
    grads = step.grads()
    for name, param in model.named_parameters():
        torch.testing.assert_close(grads[name], param.grad, rtol=1e-4, atol=1e-5, msg=name)


def _grads(model: torch.nn.Module, x, autocast: bool) -> dict[str, torch.Tensor]:
    """Every parameter's gradient in float64 of ``model(x)`` (a loss), or of
    a Hugging Face model's own loss when ``x`` is its keyword batch."""
    model.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss = model(**x).loss if isinstance(x, dict) else model(x)
    loss.float().backward()
    return {n: p.grad.detach().double().clone() for n, p in model.named_parameters()
            if p.grad is not None}


@pytest.mark.parametrize("explicit", [False, True], ids=["sdpa", "explicit"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_f32_step_gradients_equal_eager(causal: bool, explicit: bool) -> None:
    torch.manual_seed(0)
    model = _Attention(causal, explicit)
    x = torch.randn(2, T, HEADS * D)
    step = nova.compile_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.1), x,
                                   keep_grads=True)
    loss = step(x)
    assert _fused(step)
    _assert_equals_eager(step, model, x, loss)


def _assert_as_accurate_as_eager(grads: dict[str, torch.Tensor], model: torch.nn.Module,
                                 x: torch.Tensor, chips: int = 1) -> None:
    """Every gradient no further from float64's than 1.5x eager autocast's
    (on ``chips`` data-parallel ranks: each rank's autocast gradients of its
    share of the batch, averaged in float64, as DDP reduces the f32 .grad)."""
    parts = [x] if chips == 1 else x.chunk(chips)
    shares = [_grads(model, part, autocast=True) for part in parts]
    eager = {name: sum(share[name] for share in shares) / chips for name in shares[0]}
    wide = x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
    exact = _grads(model.double(), wide, autocast=False)
    for name, e in exact.items():
        eager_error = (eager[name] - e).abs().max().item()
        error = (grads[name].double() - e).abs().max().item()
        assert error <= 1.5 * eager_error, (name, error, eager_error)


@pytest.mark.parametrize("explicit", [False, True], ids=["sdpa", "explicit"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_bf16_autocast_step_gradients_as_accurate_as_eager(causal: bool, explicit: bool) -> None:
    """Every parameter's gradient no further from float64's than 1.5x eager
    autocast's own distance (the kernel keeps P's and dS's bf16 roundings that
    eager has, and rounds neither the scores nor dP)."""
    torch.manual_seed(0)
    model = _Attention(causal, explicit)
    x = torch.randn(2, T, HEADS * D)
    step = nova.compile_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.1), x,
                                   keep_grads=True, autocast=torch.bfloat16)
    step(x)
    assert _fused(step)
    _assert_as_accurate_as_eager(step.grads(), model, x)


@pytest.mark.parametrize("explicit", [False, True], ids=["sdpa", "explicit"])
def test_bf16_layers_sharing_one_mask_all_fuse(explicit: bool) -> None:
    """Three causal layers under bf16 autocast (SDPA's mask is converted once and
    read by every layer): every layer's attention is fused, and every gradient is
    as accurate as eager's."""
    torch.manual_seed(0)
    model = _Layers(3, explicit)
    x = torch.randn(2, T, HEADS * D)
    step = nova.compile_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.1), x,
                                   keep_grads=True, autocast=torch.bfloat16)
    step(x)
    assert _fused(step)
    _assert_as_accurate_as_eager(step.grads(), model, x)


@pytest.mark.parametrize("autocast", [None, torch.bfloat16], ids=["f32", "bf16"])
def test_data_parallel_gpt_fuses_attention(autocast) -> None:
    """Nova's GPT data parallel on 2 chips: partitioning composes the head
    transposes and the matrix transposes of K^T, V^T and P^T into 4-D
    transposes, and every layer's attention forward and backward still fuse
    (no T x T tensor in HBM); the loss and every parameter's gradient equal
    eager's (f32) or are as accurate as eager autocast under DDP's
    semantics (bf16: each chip's bias gradient is a bf16 sum of its tokens,
    all-reduced in f32 as DDP reduces the f32 .grad)."""
    from nova import models
    from nova.parallel import Mesh

    torch.manual_seed(0)
    model = models.GPT(models.GPTConfig(d_model=HEADS * D, n_heads=HEADS, n_layers=2,
                                        seq_len=T, vocab_size=64))

    def loss_fn(logits, labels):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    class _Loss(torch.nn.Module):  # the eager reference as one module
        def __init__(self) -> None:
            super().__init__()
            self.gpt = model

        def forward(self, ids):
            return loss_fn(self.gpt(ids), ids)

    ids = torch.randint(0, 64, (4, T), generator=torch.Generator().manual_seed(1))
    step = nova.compile_train_step(model, loss_fn, torch.optim.SGD(model.parameters(), lr=0.1),
                                   ids, ids, keep_grads=True, autocast=autocast,
                                   mesh=Mesh((2,), ("dp",)))
    loss = step(ids, ids)
    assert _fused(step)
    grads = {f"gpt.{name}": g for name, g in step.grads().items()}
    reference = _Loss()
    if autocast is None:
        expected = reference(ids)
        expected.backward()
        torch.testing.assert_close(loss, expected.detach(), rtol=1e-4, atol=1e-5)
        for name, param in reference.named_parameters():
            torch.testing.assert_close(grads[name], param.grad, rtol=1e-4, atol=1e-5, msg=name)
    else:
        _assert_as_accurate_as_eager(grads, reference, ids, chips=2)


def test_data_parallel_stacked_qkv_matches_eager() -> None:
    """timm's qkv idiom (``view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)``) on 2
    data-parallel chips: the backward stacks dq, dk and dv into one tensor,
    which canonicalization writes as a join along the batch dimension the
    chips split (propagation asserted on it). The step partitions, attention
    stays fused, and the loss and every gradient equal eager's."""
    from nova.parallel import Mesh

    torch.manual_seed(0)
    model = _Layers(2, explicit=False)
    x = torch.randn(4, T, HEADS * D)
    step = nova.compile_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.1), x,
                                   keep_grads=True, mesh=Mesh((2,), ("dp",)))
    loss = step(x)
    assert _fused(step)
    _assert_equals_eager(step, model, x, loss)


@pytest.mark.parametrize("name", ["gpt2", "llama", "phi3"])
def test_hugging_face_default_attention_fuses(name: str) -> None:
    """Hugging Face causal LMs as shipped (sdpa; dropout off so that eager is
    the reference: Llama's and Phi-3's defaults already are). Traced, HF
    hands SDPA a [B, 1, T, T] boolean causal mask instead of ``is_causal``,
    and SDPA's math path guards the softmax against fully hidden rows: every
    attention still fuses (no T x T tensor in HBM), and the loss and every
    parameter's gradient equal eager's."""
    pytest.importorskip("transformers")
    import hf_zoo

    seq = 12  # not a head dimension of any of the three
    model = hf_zoo.build(name, dropout=0.0)
    assert model.config._attn_implementation == "sdpa"
    data = hf_zoo.batches(name, 1, seq=seq)
    step = nova.compile_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.1),
                                   keep_grads=True, **data[0])
    loss = step(**data[0])
    assert _fused(step, seq)
    eager_losses, eager_grads = hf_zoo.eager_steps(
        hf_zoo.build(name, dropout=0.0), lambda params: torch.optim.SGD(params, lr=0.1), data)
    torch.testing.assert_close(loss, eager_losses[0], rtol=1e-4, atol=1e-5)
    assert hf_zoo.gradient_mismatches(step.grads(), eager_grads) == {}


@pytest.mark.parametrize("name", ["gpt2", "llama", "phi3"])
def test_hugging_face_bf16_attention_fuses(name: str) -> None:
    """The same models under bf16 autocast: autocast's roundings of the
    scores, of dP and of the f32 softmax's output around the kernel (Llama's
    softmax backward reads the f32 P, its matmuls the rounded one), every
    attention fused, every gradient as accurate as eager autocast's (within
    1.5x its distance from float64)."""
    pytest.importorskip("transformers")
    import hf_zoo

    seq = 12
    model = hf_zoo.build(name, dropout=0.0)
    batch = hf_zoo.batches(name, 1, seq=seq)[0]
    step = nova.compile_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.1),
                                   keep_grads=True, autocast=torch.bfloat16, **batch)
    step(**batch)
    assert _fused(step, seq)
    _assert_as_accurate_as_eager(step.grads(), model, batch)


def _same_masks(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """``model``, its forward run on Nova's random stream from ``seed`` fresh
    on every call: eager draws the dropout masks a compiled step's first
    call draws (in any dtype: the keep bits come from a counter hash)."""
    from nova.frontend.dropout import RandomStream, random_stream
    from nova.frontend.random_bits import step_seed

    forward = model.forward

    def run(*args, **kwargs):
        with random_stream(RandomStream(torch.tensor(step_seed(seed, 0)))):
            return forward(*args, **kwargs)

    model.forward = run
    return model


def _hf_dropout_step(autocast, seq: int = 12):
    """Hugging Face GPT-2 as shipped (sdpa, use_cache, attn_pdrop 0.1), its
    first training step compiled, and a copy of the model to run eagerly."""
    pytest.importorskip("transformers")
    import hf_zoo

    # Room for sequences longer than one 128-row block of the kernels.
    model = hf_zoo.build("gpt2", n_positions=256)
    assert model.config._attn_implementation == "sdpa" and model.config.use_cache
    assert model.config.attn_pdrop == 0.1
    batch = hf_zoo.batches("gpt2", 1, seq=seq)[0]
    step = nova.compile_train_step(model, None, torch.optim.SGD(model.parameters(), lr=0.1),
                                   keep_grads=True, seed=5, autocast=autocast, **batch)
    loss = step(**batch)
    assert _fused(step, seq)
    # The dropout mask reaches the kernels as one byte per score.
    mask = rf"memref<(?:\d+x)*{seq}x{seq}xi1(?:, strided<[^>]*>)?, #nova\.memory_space<hbm>>"
    assert re.search(mask, step.program.stages["nova"])
    return step, loss, _same_masks(hf_zoo.build("gpt2", n_positions=256), 5), batch


@pytest.mark.parametrize("seq", [12, 200])
def test_hugging_face_default_dropout_attention_fuses_f32(seq: int) -> None:
    """GPT-2 with attention dropout as shipped: forward and backward fuse with
    the dropout mask as a kernel input, and the loss and every parameter's
    gradient equal eager's run with the same masks (Nova's random stream),
    also over several query and key blocks with a ragged last one (200)."""
    import hf_zoo

    step, loss, reference, batch = _hf_dropout_step(None, seq)
    expected = reference(**batch).loss
    expected.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-4, atol=1e-5)
    eager = {name: p.grad for name, p in reference.named_parameters() if p.grad is not None}
    assert hf_zoo.gradient_mismatches(step.grads(), eager) == {}


def test_hugging_face_default_dropout_attention_fuses_bf16() -> None:
    """The same under bf16 autocast (the mask's scale is bf16's 1 / 0.9):
    fused, and every parameter's gradient as accurate as eager autocast's
    with the same masks (within 1.5x its distance from float64)."""
    step, _, reference, batch = _hf_dropout_step(torch.bfloat16)
    _assert_as_accurate_as_eager(step.grads(), reference, batch)
