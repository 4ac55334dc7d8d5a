"""Activation recomputation (``compile_train_step(..., recompute=[...])`` and
the model's own ``torch.utils.checkpoint`` calls): bitwise the same losses
and parameters as without it, a lower activation peak, the recomputed FLOPs
counted (HFU), and dropout masks replayed in the recomputation."""

from __future__ import annotations

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import nova
from nova.frontend.errors import NovaExportError

WIDTH, HIDDEN, ROWS, BLOCKS = 32, 256, 64, 4


class Block(torch.nn.Module):
    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(WIDTH, HIDDEN), torch.nn.Linear(HIDDEN, WIDTH)
        self.drop = torch.nn.Dropout(p)

    def forward(self, x):
        return x + self.down(self.drop(torch.nn.functional.gelu(self.up(x))))


class Net(torch.nn.Module):
    def __init__(self, p: float = 0.0, own_checkpoint: bool | None = None) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(p) for _ in range(BLOCKS))
        self.own_checkpoint = own_checkpoint  # None: no checkpoint calls; else use_reentrant

    def forward(self, x):
        for block in self.blocks:
            if self.own_checkpoint is None:
                x = block(x)
            else:
                x = checkpoint(block, x, use_reentrant=self.own_checkpoint)
        return x


def _batch():
    generator = torch.Generator().manual_seed(3)
    return torch.randn(ROWS, WIDTH, generator=generator), torch.randn(ROWS, WIDTH, generator=generator)


def _train(steps: int = 3, seed: int = 0, **options):
    torch.manual_seed(0)
    net = Net(options.pop("p", 0.0), options.pop("own_checkpoint", None))
    step = nova.compile_train_step(net, torch.nn.functional.mse_loss,
                                   torch.optim.AdamW(net.parameters(), lr=1e-2), *_batch(),
                                   seed=seed, **options)
    losses = [step(*_batch()) for _ in range(steps)]
    return step, torch.stack(losses)


def _saved_bytes(block: torch.nn.Module, x: torch.Tensor) -> int:
    """Bytes torch saves for the backward inside ``block`` (its input and its
    parameters aside: a checkpoint keeps the input, parameters stay anyway)."""
    skip = {id(x)} | {id(p) for p in block.parameters()}
    seen, total = set(), 0

    def pack(t):
        nonlocal total
        key = (t.data_ptr(), t.shape)
        if id(t) not in skip and t.data_ptr() not in {p.data_ptr() for p in block.parameters()} \
                and key not in seen and t.data_ptr() != x.data_ptr():
            seen.add(key)
            total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x.detach().requires_grad_(True))
    return total


@pytest.fixture(scope="module")
def plain():
    return _train()


def test_recompute_by_name_is_bitwise_the_same_with_a_lower_peak(plain):
    names = [f"blocks.{i}" for i in range(BLOCKS)]
    base, base_losses = plain
    step, losses = _train(recompute=names)
    assert step.layout.one and not base.layout.one
    assert torch.equal(losses, base_losses)
    ours, theirs = step.parameters(), base.parameters()
    assert all(torch.equal(ours[n], theirs[n]) for n in theirs)

    # The peak drops by the activations of every recomputed block but the one
    # being recomputed at the peak.
    torch.manual_seed(0)
    net = Net()
    saved = [_saved_bytes(block, _batch()[0]) for block in net.blocks]
    drop = base.memory().activations - step.memory().activations
    assert drop >= sum(saved) - max(saved) > 0, (drop, saved)

    # The recomputation's FLOPs count in HFU, not MFU: each block's forward up
    # to its last saved tensor (the first linear; the second's output is not
    # saved) runs again.
    extra = step.stats.program_flops - base.stats.program_flops
    assert extra == BLOCKS * 2 * ROWS * WIDTH * HIDDEN
    assert step.stats.model_flops == base.stats.model_flops
    assert step.stats.hfu > step.stats.mfu


def test_peak_drops_by_the_saved_bytes_of_the_recomputed_blocks(plain):
    """Every block but the last recomputed: the backward recomputes each one
    after the later blocks' activations are gone, so the peak drops by all
    of their saved bytes (measured by torch's saved-tensor hooks)."""
    base, base_losses = plain
    names = [f"blocks.{i}" for i in range(BLOCKS - 1)]
    step, losses = _train(recompute=names)
    assert torch.equal(losses, base_losses)
    torch.manual_seed(0)
    net = Net()
    saved = sum(_saved_bytes(net.get_submodule(n), _batch()[0]) for n in names)
    drop = base.memory().activations - step.memory().activations
    assert drop >= saved > 0, (drop, saved)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_the_models_own_checkpoint_calls_are_recomputed(plain, use_reentrant):
    _, base_losses = plain
    step, losses = _train(own_checkpoint=use_reentrant)
    assert step.layout.one
    assert torch.equal(losses, base_losses)


def test_dropout_masks_are_replayed_in_the_recomputation():
    _, base_losses = _train(p=0.3, seed=5)
    step, losses = _train(p=0.3, seed=5, recompute=["blocks.1", "blocks.2"])
    assert step.layout.seed and step.layout.one
    assert torch.equal(losses, base_losses)


def test_hf_gpt2_gradient_checkpointing_is_bitwise_the_same():
    transformers = pytest.importorskip("transformers")
    # Sizes at which the saved activations outweigh the recomputed block's
    # working set (at d 32, seq 16, batch 2 they are a few KiB, and the
    # layout of the backward's temporaries decides the peak either way).
    config = transformers.GPT2Config(vocab_size=64, n_embd=64, n_layer=2, n_head=2,
                                     n_positions=32, attn_implementation="eager",
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     use_cache=False)
    ids = torch.randint(0, 64, (4, 32), generator=torch.Generator().manual_seed(1))
    results = []
    for checkpointing in (False, True):
        torch.manual_seed(0)
        model = transformers.GPT2LMHeadModel(config)
        if checkpointing:
            model.gradient_checkpointing_enable()  # reentrant by default
        model.train()
        step = nova.compile_train_step(model, None, torch.optim.AdamW(model.parameters(), lr=1e-3),
                                       input_ids=ids, labels=ids)
        results.append((torch.stack([step(input_ids=ids, labels=ids) for _ in range(2)]),
                        step.memory().temporaries, step.layout.one))
    (plain_losses, plain_peak, _), (losses, peak, recomputes) = results
    assert recomputes and torch.equal(losses, plain_losses)
    assert peak < plain_peak


def test_unknown_module_is_a_clear_error():
    with pytest.raises(NovaExportError, match="recompute: the model has no submodule 'blocks.9'"):
        _train(steps=0, recompute=["blocks.9"])


def test_hf_gpt2_default_config_with_checkpointing_matches_eager():
    """GPT-2 as shipped (sdpa attention, ``use_cache`` on, which Hugging Face
    itself turns off under checkpointing; dropout 0 so that eager is the
    reference) with gradient checkpointing: the losses and every parameter's
    gradient equal eager's."""
    transformers = pytest.importorskip("transformers")
    import hf_zoo

    def make():
        torch.manual_seed(0)
        config = transformers.GPT2Config(vocab_size=64, n_embd=64, n_layer=2, n_head=2,
                                         n_positions=32, resid_pdrop=0.0, embd_pdrop=0.0,
                                         attn_pdrop=0.0)
        model = transformers.GPT2LMHeadModel(config)
        model.gradient_checkpointing_enable()
        model.train()
        return model

    generator = torch.Generator().manual_seed(1)
    data = []
    for _ in range(2):
        ids = torch.randint(0, 64, (4, 32), generator=generator)
        data.append({"input_ids": ids, "labels": ids})
    model = make()
    assert model.config._attn_implementation == "sdpa"
    step = nova.compile_train_step(model, None, torch.optim.AdamW(model.parameters(), lr=1e-3),
                                   keep_grads=True, **data[0])
    losses, grads = [], {}
    for i, batch in enumerate(data):
        losses.append(step(**batch))
        if i == 0:
            grads = step.grads()
    eager_losses, eager_grads = hf_zoo.eager_steps(
        make(), lambda params: torch.optim.AdamW(params, lr=1e-3), data)
    assert step.layout.one, "the checkpointed blocks are recomputed"
    torch.testing.assert_close(torch.stack(losses), torch.stack(eager_losses), rtol=1e-4, atol=0)
    assert hf_zoo.gradient_mismatches(grads, eager_grads) == {}
