"""``step.stats``: what the last training step cost — simulated time, FLOPs
counted on the program beside the ``6 N tokens`` estimate, MFU and HFU, and
the per-chip memory breakdown (:mod:`nova.training.memory`).

The FLOPs and the time are the simulator report's (:class:`nova.sim.stats.Report`,
``bounds``: matrix FLOPs from the binary's matmul tiles, loop trip counts
included); the peak is the target's matrix peak for the parameters' dtype
(float32: a quarter of the bf16 rate on nova-t1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from nova.training.errors import TrainStepError
from nova.training.memory import MemoryBreakdown

__all__ = ["StepStats", "matrix_peak", "step_stats", "tokens_of"]


@dataclass(frozen=True)
class StepStats:
    """One step's cost on one chip.

    time_ns:         simulated time of the step.
    program_flops:   matrix FLOPs the program executed (``2 M K N`` per matmul tile).
    vector_ops:      vector element-ops the program executed (not FLOPs at the
                     matrix peak: shown beside, not in HFU).
    params:          ``N``, trainable parameters (a tied weight once).
    tokens:          tokens of the batch (:func:`tokens_of`).
    model_flops:     ``6 N tokens``: forward 2, backward 4 FLOPs per parameter
                     per token (the dense-model estimate; attention's ``QK^T``
                     and ``AV`` are not in it, an embedding lookup is).
    peak_flops:      the matrix peak (FLOP/s) for ``dtype`` of all the chips the
                     step runs on (the target's per-chip peak times the chips).
    mfu:             ``model_flops / (time * peak)``, model FLOPs utilisation.
    hfu:             ``program_flops / (time * peak)``, hardware FLOPs utilisation.
    memory:          the HBM breakdown (per chip).
    """

    time_ns: float
    program_flops: float
    vector_ops: float
    params: int
    tokens: int
    model_flops: float
    dtype: str
    peak_flops: float
    memory: MemoryBreakdown
    timing_only: bool = False

    @property
    def time_s(self) -> float:
        return self.time_ns * 1e-9

    def _utilisation(self, flops: float) -> float:
        return flops / (self.time_s * self.peak_flops) if self.time_ns > 0 else 0.0

    @property
    def mfu(self) -> float:
        return self._utilisation(self.model_flops)

    @property
    def hfu(self) -> float:
        return self._utilisation(self.program_flops)

    def summary(self) -> str:
        lines = [
            f"step time (simulated)      {self.time_ns / 1e3:12.3f} us"
            + ("   (timing only)" if self.timing_only else ""),
            f"FLOPs counted on program   {self.program_flops:12.4g}   matrix "
            f"(+ {self.vector_ops:.4g} vector element-ops)",
            f"6 N tokens                 {self.model_flops:12.4g}   "
            f"(N = {self.params:,} trainable, {self.tokens:,} tokens)",
            f"{self.dtype} matrix peak          {self.peak_flops / 1e12:12.4g} TFLOP/s",
            f"MFU (6 N tokens)           {100 * self.mfu:11.2f} %",
            f"HFU (program FLOPs)        {100 * self.hfu:11.2f} %",
            "memory per chip:",
            self.memory.table(),
        ]
        return "\n".join(lines)


def matrix_peak(target: Any, dtype: str) -> float:
    """FLOP/s of the target's matrix unit for ``dtype`` (``"f32"``, ``"bf16"``...)."""
    peak = target.peak_flops
    if dtype == "f32":
        timing = target.timing
        peak *= timing["matmul_row_cycles"] / timing["matmul_f32_row_cycles"]
    return peak


def tokens_of(shape: tuple[int, ...], integer: bool) -> int:
    """Tokens of the model's first input of ``shape``: every element of integer
    ids (``[batch, seq]``: ``batch * seq``); for a float input every row, all
    dims but the last (``[batch, features]``: ``batch`` samples;
    ``[batch, seq, d]``: ``batch * seq`` positions). For a convolution, whose
    weights serve every pixel, ``6 N tokens`` is no estimate: read the program's count."""
    if integer:
        return math.prod(shape)
    return math.prod(shape[:-1]) if len(shape) > 1 else 1


def _whole_shape(step: Any, entry: Any) -> tuple[int, ...]:
    """The global shape of an input a data-parallel step splits over its chips."""
    program = step.program
    shape = list(entry.shape)
    position = [e.index for e in program.input_entries].index(entry.index)
    if position in program.splits:
        shape = program.splits[position].global_shape(shape)
    return tuple(shape)


def _first_input(step: Any) -> Any:
    """The binary's input entry of the model's first input."""
    layout = step.layout
    n = len(layout.trainable)
    start = (n + len(layout.constant) + len(layout.slots) * n
             + len(layout.hypers) * len(layout.groups) + (1 if layout.clip else 0))
    if layout.model_inputs > 0:
        index = start
    elif layout.keywords:
        index = start + layout.batch - len(layout.keywords)
    else:
        return None
    inputs = sorted(step.program.binary.inputs, key=lambda e: e.index)
    return inputs[index]


def step_stats(step: Any) -> StepStats:
    """The stats of ``step``'s last call (a :class:`~nova.training.TrainStep`)."""
    from nova.sim.target import target_from_dict

    report = step.report
    if report is None:
        raise TrainStepError("the step has not run yet: call it (or time_step()) first")
    bounds = report.bounds
    program_flops = sum(b.matrix_flops for b in bounds)
    vector_ops = sum(b.vector_ops for b in bounds)
    layout = step.layout
    values = step._values
    params = sum(int(values[n].size) for n in layout.trainable)
    entry = _first_input(step)
    tokens = 0 if entry is None else tokens_of(_whole_shape(step, entry),
                                              entry.dtype.name.startswith(("I", "U")))
    # The peak is the matmuls' dtype: bf16 under autocast (f32 master weights).
    dtypes = {values[n].dtype.name for n in layout.trainable}
    low = layout.autocast in ("bfloat16", "float16")
    dtype = "f32" if (dtypes <= {"float32"} or not dtypes) and not low else "bf16"
    target = target_from_dict(step.program.binary.target)
    return StepStats(time_ns=report.time_ns, program_flops=program_flops, vector_ops=vector_ops,
                     params=params, tokens=tokens, model_flops=6.0 * params * tokens,
                     dtype=dtype,
                     peak_flops=matrix_peak(target, dtype) * step.program.binary.chips,
                     memory=step.memory(), timing_only=report.timing_only)
