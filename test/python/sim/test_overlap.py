"""The report's collective overlap: interval arithmetic and a DP training step."""

import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.parallel import Mesh
from nova.sim.overlap import chip_overlap, covered, union


def test_union_merges_and_sorts():
    assert union([(5, 7), (0, 2), (1, 3), (7, 8), (9, 9)]) == [(0, 3), (5, 8)]


def test_covered_counts_only_the_overlap():
    assert covered([(0, 10)], [(2, 3), (5, 12)]) == 6
    assert covered([(0, 1), (4, 6)], [(1, 4)]) == 0
    o = chip_overlap(0, [(0, 10), (5, 12)], [(10, 20), (0, 1)], dma=[(3, 5)])
    assert (o.collective_ns, o.hidden_ns, o.hidden_compute_ns) == (12, 5, 3)
    assert o.hidden_fraction == pytest.approx(5 / 12) and o.exposed_ns == 7


def test_data_parallel_step_reports_hidden_collective_time():
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=2, n_layers=2)
    model = GPT(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ids = torch.randint(0, 64, (8, 16))

    def loss_fn(logits, labels):
        return torch.nn.functional.cross_entropy(logits.reshape(-1, 64), labels.reshape(-1))

    step = nova.compile_train_step(model, loss_fn, opt, ids, ids, mesh=Mesh((8,), ("dp",)))
    r = step.time_step()
    assert len(r.overlap) == 8
    for o in r.overlap:
        assert o.collective_ns > 0 and 0 <= o.hidden_compute_ns <= o.hidden_ns <= o.collective_ns
        # Every all-reduce is busy time of the collective queue.
        assert o.collective_ns == pytest.approx(r.busy("collective", o.chip))
    assert 0 <= r.collective_hidden_fraction <= 1
    assert "hidden behind other work" in r.summary()
    # A one-chip program has no collectives and no overlap entry.
    other = GPT(cfg)
    one = nova.compile_train_step(other, loss_fn, torch.optim.AdamW(other.parameters()), ids, ids)
    assert one.time_step().overlap == ()


def test_bucket_size_is_an_option():
    """``bucket_mb`` is DDP's bucket_cap_mb: 0 all-reduces each gradient alone."""
    from nova.training import TrainStepError

    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=2, n_layers=1)
    ids = torch.randint(0, 64, (8, 16))

    def loss_fn(logits, labels):
        return torch.nn.functional.cross_entropy(logits.reshape(-1, 64), labels.reshape(-1))

    def collectives(**options):
        model = GPT(cfg)
        step = nova.compile_train_step(model, loss_fn, torch.optim.SGD(model.parameters(), lr=0.1),
                                       ids, ids, mesh=Mesh((8,), ("dp",)), **options)
        return len(step.time_step().collectives)

    assert collectives(bucket_mb=0) > collectives() + 5
    with pytest.raises(TrainStepError, match="bucket_mb must be a number of MiB >= 0"):
        collectives(bucket_mb=-1)
