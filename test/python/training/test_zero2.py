"""ZeRO stage 2 (``compile_train_step(..., mesh=Mesh((8,), ("dp",)), zero=2)``):
5 AdamW steps of a 4-layer GPT on 8 chips give the one-chip losses at every
step (rtol 1e-4), on the switch and on the ring; the gradients are
reduce-scattered (not all-reduced) and each chip holds 1/8 of them and of
the optimizer state."""

from __future__ import annotations

import re

import pytest
import torch

import nova
from nova.models import GPT
from nova.parallel import Mesh
from nova.training import TrainStepError

from .test_data_parallel_train import CFG, _train


@pytest.fixture(scope="module")
def one_chip():
    return _train("nova-t1", None)


def _non_scalar_all_reduces(nova_text: str) -> list[str]:
    """The element types and shapes of the all-reduces of more than a scalar."""
    shapes = re.findall(r"nova\.all_reduce <sum> ins\([^:]*: memref<([^,>]*)", nova_text)
    return [s for s in shapes if "x" in s or s[0].isdigit()]


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
def test_zero2_gives_the_one_chip_losses_and_shards_the_gradients(one_chip, target):
    base, base_losses = one_chip
    step, losses = _train(target, Mesh((8,), ("dp",)), zero=2)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    # The weight matrices too (biases left out, as in the DP=8 test).
    ours, theirs = step.parameters(), base.parameters()
    for name, value in theirs.items():
        if value.dim() >= 2:
            torch.testing.assert_close(ours[name], value, rtol=1e-3, atol=1e-5)
    # The state shards, read back from the eight chips, are the one-chip state.
    ours, theirs = step.optimizer_state_dict()["state"], base.optimizer_state_dict()["state"]
    for key in theirs:
        torch.testing.assert_close(ours[key]["exp_avg"], theirs[key]["exp_avg"],
                                   rtol=1e-3, atol=1e-5)

    # Every gradient of this GPT splits by 8 (dim 0 of each is 16, 32, 64 or
    # 128): each chip holds an eighth of the gradients and of the state.
    mine, full = step.memory(), base.memory()
    assert step.program.grad_shards == tuple(step.layout.trainable)
    assert mine.gradients * 8 == full.gradients
    assert mine.optimizer_state * 8 == full.optimizer_state
    assert mine.parameters == full.parameters  # stage 2 keeps the parameters whole

    text = step.program.stages["nova"]
    # The gradients' reduce-scatters (two for the tied wte/head weight, one
    # per use; none for the position embedding, below) are bucketed
    # (nova-bucket-all-reduces, chip-major): this model's fit one 25 MiB
    # bucket.
    assert text.count("nova.reduce_scatter") == 1
    # No gradient is all-reduced whole but the position embedding's (its
    # lookup's backward needs the whole sum; it is sliced after), 16 x 32.
    # The 68 gradient-norm partial sums (each chip's sum of squares of its
    # shards) share one bucket.
    assert _non_scalar_all_reduces(text) == ["16x32xf32", "68xf32"]
    # The updated parameter shards are all-gathered in buckets
    # (nova-bucket-all-gathers): this model's fit one 25 MiB bucket.
    assert text.count("nova.all_gather") == 1


def _ce_loss(logits, labels):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             labels.reshape(-1))


@pytest.mark.parametrize("zero", [3, -1, True, "2"])
def test_bad_zero_is_a_clear_error(zero):
    torch.manual_seed(0)
    model = GPT(CFG)
    ids = torch.randint(0, CFG.vocab_size, (8, CFG.seq_len))
    with pytest.raises(TrainStepError, match="zero must be 0, 1 .* or 2"):
        nova.compile_train_step(model, _ce_loss, torch.optim.AdamW(model.parameters()),
                                ids, ids, mesh=Mesh((8,), ("dp",)), zero=zero)


def test_zero_without_a_mesh_is_a_clear_error():
    torch.manual_seed(0)
    model = GPT(CFG)
    ids = torch.randint(0, CFG.vocab_size, (8, CFG.seq_len))
    with pytest.raises(TrainStepError, match="zero=2 shards over the chips of a mesh"):
        nova.compile_train_step(model, _ce_loss, torch.optim.AdamW(model.parameters()),
                                ids, ids, zero=2)


def test_zero2_without_clipping():
    """Without max_grad_norm the raw gradients feed the update directly; they
    are found from the state's update all the same (an MLP, AdamW)."""

    def train(mesh):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                    torch.nn.Linear(32, 8))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        generator = torch.Generator().manual_seed(2)
        batches = [(torch.randn(16, 16, generator=generator),
                    torch.randint(0, 8, (16,), generator=generator)) for _ in range(3)]
        step = nova.compile_train_step(model, torch.nn.functional.cross_entropy, optimizer,
                                       *batches[0], mesh=mesh, zero=2 if mesh else 0)
        return step, torch.stack([step(*b) for b in batches])

    base, base_losses = train(None)
    step, losses = train(Mesh((8,), ("dp",)))
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    text = step.program.stages["nova"]
    # Two weights and two biases, reduce-scattered in one bucket.
    assert text.count("nova.reduce_scatter") == 1
    assert _non_scalar_all_reduces(text) == []
    assert step.memory().gradients * 8 == base.memory().gradients
    assert step.memory().optimizer_state * 8 == base.memory().optimizer_state
