"""step.stats: simulated time, program FLOPs beside 6*N*tokens, MFU/HFU, and the
per-chip memory breakdown, checked against the torch model's own tensor sizes
and the binary's I/O table; the loss checked against torch eager."""

from __future__ import annotations

import copy
import inspect

import pytest
import torch

import nova
from nova.compiler.stage_times import format_times
from nova.models import GPT
from nova.models.gpt import GPTConfig
from nova.training import TrainStepError
from nova.training.memory import hbm_peak
from nova.training.step_report import tokens_of


class _Net(torch.nn.Module):
    """Two linears, a frozen bias and a buffer: every memory category is non-empty."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)
        self.fc1.bias.requires_grad_(False)
        self.register_buffer("scale", torch.tensor([0.5, 1.0, 1.5, 2.0]))

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x))) * self.scale


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def test_stats_fields_match_the_model_and_the_binary():
    model = _Net()
    reference = copy.deepcopy(model)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-2)
    x, y = torch.randn(4, 8), torch.randn(4, 4)
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer, x, y)
    with pytest.raises(TrainStepError, match="has not run yet"):
        step.stats
    # The compile's stage breakdown, in order, each stage timed.
    stages = [name for name, _ in step.compile_times]
    assert stages == ["host copies of the state, HBM check", "trace the step (make_fx)",
                      "graph rewrites (idioms, constants)", "import to linalg (torch-mlir)",
                      "nova-opt --nova-lower-to-tiles", "nova-opt --nova-tiles-to-isa",
                      "nova-translate --nova-to-binary", "load the binary (read, validate)"]
    assert all(seconds > 0 for _, seconds in step.compile_times)
    assert "total of the stages" in format_times(list(step.compile_times))
    loss = step(x, y)
    expected = torch.nn.functional.mse_loss(reference(x), y)
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-4, atol=1e-5)

    stats = step.stats
    memory = stats.memory
    frozen = [model.fc1.bias, model.scale]
    assert memory.trainable == _nbytes(trainable)
    assert memory.frozen == _nbytes(frozen)
    assert memory.parameters == _nbytes(trainable) + _nbytes(frozen)
    assert memory.gradients == 4 * sum(p.numel() for p in trainable)
    assert memory.optimizer_state == 2 * _nbytes(trainable)  # exp_avg and exp_avg_sq
    # The updated parameters and state, less any the compiler updates in place
    # (an output at its input's address shares its buffer).
    binary = step.program.binary
    outputs = sorted(binary.outputs, key=lambda e: e.index)[1:1 + 3 * len(trainable)]
    in_place = sum(e.byte_size for e in outputs
                   if e.address in {i.address for i in binary.inputs})
    assert memory.results == memory.trainable + memory.optimizer_state - in_place
    # The same sizes as the binary's I/O table: the leading inputs are the
    # parameters, then the frozen tensors, then the optimizer's slots.
    inputs = sorted(step.program.binary.inputs, key=lambda e: e.index)
    n, k = len(trainable), len(frozen)
    assert sum(e.byte_size for e in inputs[:n]) == memory.trainable
    assert sum(e.byte_size for e in inputs[n:n + k]) == memory.frozen
    assert sum(e.byte_size for e in inputs[n + k:n + k + 2 * n]) == memory.optimizer_state
    # The total is the compiler's hbm peak and every byte of it is in one category.
    assert memory.total == hbm_peak(step.program.stages) > 0
    # Small gradients live in SRAM: the activations are what the HBM
    # temporaries hold beyond the gradients' f32 size, if anything.
    assert memory.temporaries > 0
    assert memory.activations == max(0, memory.temporaries - memory.gradients)
    assert (memory.parameters + memory.optimizer_state + memory.temporaries
            + memory.results + memory.other) == memory.total
    assert memory.capacity == 32 << 30  # nova-t1

    n_params = sum(p.numel() for p in trainable)
    assert stats.params == n_params
    assert stats.tokens == 4  # a float [4, 8] input: 4 samples
    assert stats.model_flops == 6 * n_params * 4
    # 2MKN of every matmul: forward fc1 and fc2, fc2's input gradient, both weight
    # gradients (fc1's input needs none).
    forward = 2 * 4 * (8 * 16 + 16 * 4)
    assert stats.program_flops == forward + 2 * 4 * 16 * 4 + forward
    assert stats.vector_ops > 0
    assert stats.time_ns == step.report.time_ns > 0
    assert stats.dtype == "f32"
    assert 0 < stats.mfu <= 1 and 0 < stats.hfu <= 1
    assert stats.hfu == pytest.approx(stats.program_flops / (stats.time_s * stats.peak_flops))
    text = stats.summary()
    for word in ("step time", "6 N tokens", "MFU", "HFU", "gradients", "optimizer state",
                 "activations", "total (hbm peak)"):
        assert word in text


def test_lm_tokens_are_the_ids_and_a_tied_weight_counts_once():
    cfg = GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=8, vocab_size=64)
    torch.manual_seed(0)
    model = GPT(cfg)
    reference = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def loss_fn(logits, labels):
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())

    ids = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len))
    labels = torch.roll(ids, -1, dims=1)
    step = nova.compile_train_step(model, loss_fn, optimizer, ids, labels)
    loss = step(ids, labels)
    torch.testing.assert_close(loss, loss_fn(reference(ids), labels).detach(),
                               rtol=1e-4, atol=1e-5)
    stats = step.stats
    n_params = sum(p.numel() for p in model.parameters())  # the tied head once
    assert stats.params == n_params
    assert stats.tokens == 2 * cfg.seq_len
    assert stats.model_flops == 6 * n_params * 2 * cfg.seq_len
    assert stats.memory.optimizer_state == 0  # plain SGD keeps no state
    assert 0 < stats.mfu <= 1 and 0 < stats.hfu <= 1


def test_tokens_of():
    assert tokens_of((2, 16), integer=True) == 32
    assert tokens_of((2, 16, 64), integer=False) == 32
    assert tokens_of((8, 3), integer=False) == 8
    assert tokens_of((5,), integer=False) == 1


class _Lines(torch.nn.Module):
    """Two linears and a LayerNorm: the second linear's input needs a gradient."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.norm, self.fc2 = torch.nn.Linear(32, 64), torch.nn.LayerNorm(64), \
            torch.nn.Linear(64, 16)

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)).relu())


def test_backward_and_optimizer_time_goes_to_their_own_lines():
    """The profile charges each backward op to its forward op's line, clipping
    and the optimizer to their own (nova.frontend.trace_locations): the
    linears' line holds exactly their forward and backward matmul FLOPs, and
    the optimizer's update holds vector work of its own."""
    model = _Lines()
    x, y = torch.randn(128, 32), torch.randn(128, 16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer, x, y,
                                   max_grad_norm=1.0)
    step.time_step()
    by_file: dict[str, dict[str, float]] = {}
    for s in step.report.instr_stats:
        file = (s.location or "").split(" called from ")[0].split(":")[0].rsplit("/", 1)[-1]
        row = by_file.setdefault(file, {"flops": 0.0, "vector_ops": 0.0})
        row["flops"] += s.matrix_flops
        row["vector_ops"] += s.vector_ops
    # fc1: forward and weight gradient (x needs none); fc2: forward, dX and dW.
    linear_flops = 2 * 128 * (2 * 32 * 64 + 3 * 64 * 16)
    assert by_file["linear.py"]["flops"] == linear_flops
    assert sum(row["flops"] for row in by_file.values()) == linear_flops
    assert by_file["optimizers.py"]["vector_ops"] > 0
    assert by_file["train_export.py"]["vector_ops"] > 0  # clipping's norm and scale
    assert by_file["normalization.py"]["vector_ops"] > 0  # LayerNorm forward and backward


def _cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits, labels)


def test_a_loss_functions_ops_go_to_its_line_not_the_last_layers():
    """make_fx keeps only ``forward`` frames: a plain loss function's ops (and
    their backward) used to carry no line and were charged to the LM head's.
    They carry the loss function's line now, and the linear's line holds
    matmul work and its bias only."""
    model = torch.nn.Linear(32, 512)
    x, labels = torch.randn(64, 32), torch.randint(0, 512, (64,))
    step = nova.compile_train_step(model, _cross_entropy, torch.optim.SGD(model.parameters(), lr=0.1),
                                   x, labels)
    step.time_step()
    line = f"{__file__}:{_cross_entropy.__code__.co_firstlineno + 1}"
    loss_ops = sum(s.vector_ops for s in step.report.instr_stats if (s.location or "").startswith(line))
    linear_ops = sum(s.vector_ops for s in step.report.instr_stats
                     if "linear.py" in (s.location or "").split(" called from ")[0])
    # The softmax over 64 x 512 logits and its gradient: several passes.
    by_line: dict[str, float] = {}
    for s in step.report.instr_stats:
        key = (s.location or "").split(" called from ")[0]
        by_line[key] = by_line.get(key, 0.0) + s.vector_ops
    assert loss_ops > 4 * 64 * 512, (line, by_line)
    assert linear_ops < loss_ops


def test_torchs_loss_passed_as_is_leaves_later_lines_alone():
    """``torch.nn.functional.cross_entropy`` passed as the loss is charged to
    its definition and is not made a stack-trace anchor for the process: a
    later loss function that calls it keeps its own line (an anchor left by
    an earlier test charged it to functional.py in the full suite)."""
    model = torch.nn.Linear(32, 512)
    x, labels = torch.randn(64, 32), torch.randint(0, 512, (64,))
    step = nova.compile_train_step(model, torch.nn.functional.cross_entropy,
                                   torch.optim.SGD(model.parameters(), lr=0.1), x, labels)
    step.time_step()
    loss_line = f"{inspect.getsourcefile(torch.nn.functional.cross_entropy)}:" \
                f"{inspect.getsourcelines(torch.nn.functional.cross_entropy)[1]}:"
    ops = sum(s.vector_ops for s in step.report.instr_stats if (s.location or "").startswith(loss_line))
    assert ops > 4 * 64 * 512
    test_a_loss_functions_ops_go_to_its_line_not_the_last_layers()


class _Residual(torch.nn.Module):
    """x + f(norm(x)), twice: x's gradient is a sum of two, at each block."""

    def __init__(self, d: int = 32, vocab: int = 64) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(d) for _ in range(2))
        self.fcs = torch.nn.ModuleList(torch.nn.Linear(d, d) for _ in range(2))
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        for norm, fc in zip(self.norms, self.fcs):
            x = x + fc(norm(x))
        return self.head(x)


def test_residual_gradient_sums_are_not_the_loss_functions():
    """autograd sums a residual stream's two gradients while the loss's
    sequence number is still set: those [batch, d] sums take the line of the
    gradient they add to (a layer's). No [batch, d] op is the loss line's."""
    import re

    torch.manual_seed(0)
    model = _Residual()
    ids, labels = torch.randint(0, 64, (16,)), torch.randint(0, 64, (16,))
    step = nova.compile_train_step(model, _cross_entropy, torch.optim.SGD(model.parameters(), lr=0.1),
                                   ids, labels)
    loss = step(ids, labels)
    torch.testing.assert_close(loss, _cross_entropy(model(ids), labels).detach(), rtol=1e-4, atol=1e-5)
    text = step.imported.mlir
    line = _cross_entropy.__code__.co_firstlineno + 1
    loss_locs = {m.group(1) for m in re.finditer(rf'^(#loc\d+) = loc\("[^"]*test_step_report.py":{line}:',
                                                 text, re.M)}
    assert loss_locs, "the loss function's ops carry its line"
    d_sized = [l for l in text.splitlines() if "-> tensor<16x32xf32>" in l
               and re.search(r"loc\((#loc\d+)\)\s*$", l)
               and re.search(r"loc\((#loc\d+)\)\s*$", l).group(1) in loss_locs]
    assert not d_sized, d_sized
