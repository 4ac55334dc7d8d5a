"""The engines' concurrency report (nova.sim.concurrency): busy, alone and
at-once times from a traced run's instances, and on a compiled training step."""

import pytest
import torch

import nova
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.sim.concurrency import concurrency, format_concurrency
from nova.sim.trace import TraceRecorder


def _trace(spans):
    t = TraceRecorder()
    for chip, track, start, end in spans:
        t.instance(chip, track, "op", 0, start, end, 0.0, -1, ())
    return t


def test_busy_alone_and_at_once_add_up():
    # matrix [0, 10), vector [5, 15), dma0 [12, 20) and dma1 [14, 16): DMA queues
    # count as one engine; nothing runs in [20, 25).
    t = _trace([(0, "matrix", 0, 10), (0, "vector", 5, 15), (0, "dma0", 12, 20),
                (0, "dma1", 14, 16)])
    (c,) = concurrency(t, 25.0)
    assert c.busy_ns == {"matrix": 10, "vector": 10, "dma": 8}
    assert c.alone_ns == {"matrix": 5, "vector": 2, "dma": 5}
    assert c.at_once_ns == {0: 5, 1: 12, 2: 8}
    assert sum(c.at_once_ns.values()) == 25
    assert c.overlap_bound_ns == 10
    table = format_concurrency([c])
    assert "matrix" in table and "busy at once" in table


def test_back_to_back_instructions_are_not_counted_as_overlap():
    t = _trace([(0, "vector", 0, 4), (0, "dma0", 4, 9), (1, "matrix", 0, 3)])
    by_chip = {c.chip: c for c in concurrency(t, 9.0)}
    assert by_chip[0].at_once_ns == {1: 9}
    assert by_chip[0].alone_ns == {"vector": 4, "dma": 5}
    assert by_chip[1].at_once_ns == {0: 6, 1: 3}


def test_a_training_steps_overlap_report_matches_its_busy_times():
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=64, seq_len=16, d_model=32, n_heads=2, n_layers=1)
    model = GPT(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ids = torch.randint(0, 64, (2, 16))

    def loss_fn(logits, labels):
        return torch.nn.functional.cross_entropy(logits.reshape(-1, 64), labels.reshape(-1))

    step = nova.compile_train_step(model, loss_fn, opt, ids, ids)
    untraced = step.time_step().time_ns
    report = step.time_step(trace=True)
    assert report.time_ns == untraced  # tracing does not change the time
    text = step.program.concurrency()
    assert "with full overlap" in text and "busy at once" in text
    assert "critical path" in step.program.critical_path(by="engine")
    (c,) = step.program._simulator.concurrency()
    # Each engine's busy time is the report's (DMA queues merged: at most their sum).
    assert c.busy_ns["matrix"] == pytest.approx(report.busy("matrix"))
    assert c.busy_ns["vector"] == pytest.approx(report.busy("vector"))
    assert 0 < c.busy_ns["dma"] <= report.busy("dma") + 1e-6
    assert sum(c.at_once_ns.values()) == pytest.approx(report.time_ns)
    assert c.overlap_bound_ns <= report.time_ns
