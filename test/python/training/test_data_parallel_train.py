"""Data-parallel training steps (``compile_train_step(..., mesh=Mesh((8,), ("dp",)))``):
5 AdamW steps of a 4-layer GPT on 8 chips give the one-chip losses at every
step (rtol 1e-4), on the switch and on the ring; the gradients are
all-reduced in buckets, the parameters stay replicated and resident on
every chip."""

from __future__ import annotations

import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh
from nova.training import TrainStepError

from .lm_batches import lm_cross_entropy, token_batches

CFG = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=2, n_layers=4)
_ce = lm_cross_entropy


def _batches(n: int = 5):
    return token_batches(CFG, n)


def _train(target: str, mesh: Mesh | None, **options):
    torch.manual_seed(0)
    model = GPT(CFG)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batches = _batches()
    step = nova.compile_train_step(model, _ce, optimizer, *batches[0], target=target,
                                   max_grad_norm=1.0, mesh=mesh, **options)
    return step, torch.stack([step(*b) for b in batches])


@pytest.fixture(scope="module")
def one_chip():
    return _train("nova-t1", None)


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
def test_dp8_gives_the_one_chip_losses(one_chip, target):
    base, base_losses = one_chip
    step, losses = _train(target, Mesh((8,), ("dp",)))
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    # The weight matrices too. (Biases are left out: the key bias's gradient is
    # zero up to rounding, which AdamW turns into full-size steps; the sums'
    # order differs across chips.)
    ours, theirs = step.parameters(), base.parameters()
    for name, value in theirs.items():
        if value.dim() >= 2:
            torch.testing.assert_close(ours[name], value, rtol=1e-3, atol=1e-5)
    # Every chip holds the same parameters (read chip by chip from HBM).
    simulator = step.program._resident
    first = simulator.read(0, chip=0)
    assert all((simulator.read(0, chip=c) == first).all() for c in range(8))
    # The gradients cross the chips in buckets (nova-bucket-all-reduces): a
    # few all-reduces for 68 gradients, the loss and the label count.
    reduces = step.program.stages["nova"].count("nova.all_reduce")
    assert 1 <= reduces <= 6, reduces
    # So the 8-chip step is faster than the one-chip one on either topology
    # (simulated, deterministic: 672 us on one chip, ~180-200 us on eight).
    assert step.report.time_ns < base.report.time_ns
    # The stats count the global batch against all eight chips' peak.
    assert step.stats.tokens == base.stats.tokens
    assert step.stats.peak_flops == 8 * base.stats.peak_flops


@pytest.mark.parametrize("target", ["nova-t1", "nova-t1-ring8"])
def test_zero1_shards_the_optimizer_state_and_gives_the_one_chip_losses(one_chip, target):
    base, base_losses = one_chip
    step, losses = _train(target, Mesh((8,), ("dp",)), zero=1)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    # Every state tensor of this GPT splits by 8: each chip holds an eighth.
    assert step.memory().optimizer_state * 8 == base.memory().optimizer_state
    # The shards, read back from the eight chips, are the one-chip state.
    ours, theirs = step.optimizer_state_dict()["state"], base.optimizer_state_dict()["state"]
    assert ours.keys() == theirs.keys()
    for key in theirs:
        torch.testing.assert_close(ours[key]["exp_avg"], theirs[key]["exp_avg"],
                                   rtol=1e-3, atol=1e-5)
    # Each chip updates its shard of the parameters; all-gathers put them together.
    assert "nova.all_gather" in step.program.stages["nova"]


def test_gradients_larger_than_a_bucket_fly_in_chunks(one_chip):
    # 2 KiB buckets: the tied 64 x 32 weight's gradient from the LM head (8
    # KiB) is split into 16-row chunks by nova-split-all-reduces, each
    # all-reduced as soon as its rows exist; the embedding's own part (a
    # one-hot matmul, which nova-form-scatter makes a DMA scatter-add that
    # chunks would hide) is reduced whole, once; the numbers do not change.
    base, base_losses = one_chip
    step, losses = _train("nova-t1", Mesh((8,), ("dp",)), bucket_mb=2048 / 2**20)
    torch.testing.assert_close(losses, base_losses, rtol=1e-4, atol=0)
    reduced = [line.split("ins(")[1].split(" :")[1].split(",")[0].strip()
               for line in step.program.stages["nova"].splitlines() if "nova.all_reduce" in line]
    assert reduced.count("memref<16x32xf32") >= 4, reduced
    assert reduced.count("memref<64x32xf32") <= 1, reduced


def test_uneven_batch_is_a_clear_error():
    torch.manual_seed(0)
    model = GPT(CFG)
    ids = torch.randint(0, CFG.vocab_size, (6, CFG.seq_len))
    with pytest.raises(TrainStepError, match="does not split evenly over 8 chips"):
        nova.compile_train_step(model, _ce, torch.optim.SGD(model.parameters(), lr=0.1),
                                ids, ids, mesh=Mesh((8,), ("dp",)))
