"""The demo job: a hand-written Nova kernel through nova-opt, until the lowering lands."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from nova.compiler import pipeline
from nova.compiler.driver import run_opt, run_opt_file
from nova.compiler.errors import NovaError
from nova.compiler.options import TargetOptions
from nova.examples import example_path

DEFAULT_EXAMPLE = "matmul_bias_gelu"


@dataclass(frozen=True)
class DemoResult:
    example: Path
    target: TargetOptions
    output: str


def run_demo(example: str = DEFAULT_EXAMPLE, target: TargetOptions = TargetOptions()) -> DemoResult:
    """Attaches ``target`` to the shipped ``example`` and checks that the result round-trips.

    The output must parse and verify again, and printing it again must give the
    same text (print -> parse -> print is a fixed point).
    """
    path = example_path(example)
    output = run_opt_file(path, [pipeline.attach_target(target)])
    reprinted = run_opt(output)
    if reprinted != output:
        raise NovaError(f"nova-opt output for {path.name} does not round-trip to the same text")
    return DemoResult(example=path, target=target, output=output)


#: The demo's model: a 2-layer GPT language model over a byte-sized vocabulary.
DEMO_CONFIG = dict(d_model=128, n_heads=4, n_layers=2, seq_len=64, vocab_size=256)


def _demo_model(seed: int, batch: int):
    """The demo GPT (random weights, LM head tied to the token embedding) and
    random token ids ``[batch, seq_len]``."""
    import torch

    from nova.models import GPT, GPTConfig

    torch.manual_seed(seed)
    config = GPTConfig(**DEMO_CONFIG)
    model = GPT(config).eval()
    ids = torch.randint(0, config.vocab_size, (batch, config.seq_len))
    return config, model, ids


@dataclass(frozen=True)
class ModelDemoResult:
    """A GPT language model compiled, run on the simulator and checked against torch."""

    config: object
    max_abs_error: float
    matches_torch: bool
    summary: str
    trace: Path | None


def run_model_demo(target: TargetOptions = TargetOptions(), *,
                   trace: str | Path | None = None, seed: int = 0) -> ModelDemoResult:
    """The main job: a 2-layer GPT language model (random weights) through the
    whole compiler, from random token ids to logits on the simulated chip,
    compared with torch eager."""
    import torch

    import nova

    config, model, ids = _demo_model(seed, batch=1)
    program = nova.compile(model, ids, target=target.name, chips=target.chips or 1)
    (y,) = program.run(ids, trace=trace is not None)
    with torch.no_grad():
        expected = model(ids)
    error = float((y - expected).abs().max())
    if trace is not None:
        program.write_trace(trace)
    return ModelDemoResult(
        config=config, max_abs_error=error,
        matches_torch=bool(torch.allclose(y, expected, rtol=1e-4, atol=1e-5)),
        summary=program.report.summary(), trace=Path(trace) if trace is not None else None)


#: Steps of ``nova demo --train``: enough for a loss curve, under a minute here
#: (about 7 s to compile, 0.1 s a step on the simulator and in torch).
TRAIN_DEMO_STEPS = 30
#: How close each step's loss must be to torch eager's (see run_train_demo).
TRAIN_DEMO_RTOL = 1e-3


@dataclass(frozen=True)
class TrainDemoStep:
    """One step of the training demo."""

    index: int
    loss: float
    torch_loss: float
    time_us: float
    mfu: float


@dataclass(frozen=True)
class TrainDemoResult:
    """Training steps of the demo GPT on the simulator beside torch's."""

    losses: tuple[float, ...]
    torch_losses: tuple[float, ...]
    step_time_us: float
    matches_torch: bool
    #: The last step's :class:`nova.training.step_report.StepStats`.
    stats: object = None
    #: The loss-curve PNG, or None (no ``plot`` asked, or matplotlib missing).
    plot: Path | None = None
    #: The largest ``|nova - torch| / |torch|`` over the steps.
    max_rel_diff: float = 0.0


def run_train_demo(target: TargetOptions = TargetOptions(), *, steps: int = TRAIN_DEMO_STEPS,
                   seed: int = 0, plot: str | Path | None = None,
                   on_step: Callable[[TrainDemoStep], None] | None = None) -> TrainDemoResult:
    """AdamW steps of the demo GPT (next-token loss on counting sequences from a
    random start, a new batch each step) compiled as one training program (:func:`nova.compile_train_step`),
    each loss compared with torch training a copy of the same model.
    ``on_step`` sees every step as it ends; ``plot`` names a PNG for the loss
    curves (written when matplotlib can be imported)."""
    import copy

    import torch
    import torch.nn.functional as F

    import nova
    from nova.training.loss_plot import write_loss_plot

    if steps < 1:
        raise NovaError(f"the training demo needs at least one step, got {steps}")
    config, model, ids = _demo_model(seed, batch=1)
    model.train()
    reference = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed + 1)

    def loss_fn(logits, labels):
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten())

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step = nova.compile_train_step(model, loss_fn, optimizer, ids, torch.roll(ids, -1, dims=1),
                                   target=target.name)
    reference_optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-3)
    losses, torch_losses = [], []
    for i in range(steps):
        # A new batch every step, a sequence that counts up (mod vocab) from a
        # random start: the model starts at ln(vocab) (GPT-2's initialisation)
        # and learns "next = this + 1" (random tokens hold nothing to learn, and
        # on one repeated batch the loss falls to ~0, where float rounding is
        # all that is left to compare).
        start = torch.randint(0, config.vocab_size, (ids.shape[0], 1), generator=generator)
        ids = (start + torch.arange(ids.shape[1])) % config.vocab_size
        targets = torch.roll(ids, -1, dims=1)
        losses.append(float(step(ids, targets)))
        reference_optimizer.zero_grad()
        loss = loss_fn(reference(ids), targets)
        loss.backward()
        reference_optimizer.step()
        torch_losses.append(loss.item())
        if on_step is not None:
            stats = step.stats
            on_step(TrainDemoStep(i, losses[-1], torch_losses[-1], stats.time_ns / 1e3,
                                  stats.mfu))
    # Two float32 trainings of the same model drift apart step by step (each
    # step's rounding moves the next one's parameters): 1e-3 after dozens of
    # steps, where one step matches to 1e-4 (test/python/training).
    worst = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(losses, torch_losses))
    ok = all(abs(a - b) <= TRAIN_DEMO_RTOL * abs(b) + 1e-5 for a, b in zip(losses, torch_losses))
    written = None if plot is None else write_loss_plot(
        plot, losses, torch_losses, title="demo GPT, AdamW: Nova vs torch eager")
    return TrainDemoResult(tuple(losses), tuple(torch_losses), step.report.time_ns / 1e3, ok,
                           stats=step.stats, plot=written, max_rel_diff=worst)


@dataclass
class ParallelRow:
    layout: str
    chips: int
    time_us: float
    all_reduces: int
    max_abs_error: float
    matches_torch: bool


def run_parallel_demo(target: str = "nova-t1", *, seed: int = 0) -> list[ParallelRow]:
    """The demo GPT (token ids of batch 4 in, logits out) on 1 chip, TP=4,
    DP=2 x TP=4 and PP=2 x 4 microbatches of ``target``, each checked against
    torch eager. Tensor parallelism splits the blocks; the embeddings and the
    tied LM head are replicated."""
    import torch

    import nova
    from nova.parallel import (Mesh, compile_parallel, compile_pipeline,
                               megatron_transformer_plan, split_stages)

    _, model, x = _demo_model(seed, batch=4)
    with torch.no_grad():
        expected = model(x)
    layouts = [
        ("1 chip", 1, lambda: nova.compile(model, x, target="nova-t1")),
        ("TP=4", 4, lambda: compile_parallel(
            model, x, mesh=Mesh((4,), ("tp",)), target=target,
            plan=megatron_transformer_plan(model, axis="tp"))),
        ("DP=2 x TP=4", 8, lambda: compile_parallel(
            model, x, mesh=Mesh((2, 4), ("dp", "tp")), target=target,
            plan=megatron_transformer_plan(model, axis="tp", batch_axis="dp"))),
        ("PP=2 x M=4", 2, lambda: compile_pipeline(
            split_stages(model, x[:1], ["blocks.1"]), x, microbatches=4, target=target)),
    ]
    rows = []
    for layout, chips, build in layouts:
        program = build()
        y = program(x)
        rows.append(ParallelRow(
            layout, chips, program.report.time_s * 1e6,
            program.stages["nova"].count("nova.all_reduce"),
            float((y - expected).abs().max()),
            bool(torch.allclose(y, expected, rtol=1e-4, atol=1e-5))))
    return rows
