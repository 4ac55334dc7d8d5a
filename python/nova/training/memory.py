"""Where a training step's HBM goes, per chip: parameters, gradients, optimizer
state, activations; and the compile-time error when they do not fit.

The counts come from what the step holds (its parameter and state arrays) and
from what the compile already produced: the binary's I/O table (every
argument and result of the program has an HBM address, from 0) and the
function's ``nova.hbm_peak`` (nova-plan-memory: arguments from address 0,
then globals, then the temporaries; the peak is one past the highest byte
in use at any point). No pass is added for them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from nova.frontend.train_export import StepLayout
from nova.training.errors import TrainStepMemoryError

__all__ = ["MemoryBreakdown", "check_fits", "hbm_capacity", "hbm_peak", "memory_breakdown",
           "raise_for_compile_error", "step_memory"]

_HBM_ERROR = re.compile(r"needs (\d+) bytes of hbm but target '([^']*)' has (\d+)")
_PEAK = re.compile(r"nova\.hbm_peak = (\d+)")


@dataclass(frozen=True)
class MemoryBreakdown:
    """One chip's HBM for the step, in bytes.

    parameters:      trainable parameters + frozen parameters and buffers
                     (``trainable`` + ``frozen``), the program's leading inputs.
    gradients:       one float32 gradient per trainable parameter (a tied
                     weight once), whatever the compiler does with it; on a
                     mesh with ZeRO stage 2 a gradient split over the chips
                     (``grad:<name>`` in ``shards``) counts ``1/chips`` of it.
                     Stage 1 counts full gradients: its gradients are
                     all-reduced whole and every chip holds all of them (the
                     update slices its shard out); stage 2 reduce-scatters
                     them and a chip only ever holds its shard.
    optimizer_state: the optimizer's slots (``exp_avg``, ``exp_avg_sq``,
                     ``momentum_buffer``), inputs of the program; with ZeRO
                     stage 1 or 2 a state tensor split over the chips counts
                     ``1/chips`` of it.
    results:         the updated parameters and state, and the gradients when
                     ``keep_grads``: the output buffers at addresses of their own
                     (an output aliased onto its input, updated in place, adds
                     nothing). Before compiling, all of them (no aliasing).
    temporaries:     the HBM intermediates' peak: ``hbm_peak`` minus the end of
                     the arguments and globals (saved activations, gradients,
                     scratch; small ones live in SRAM and count nowhere here).
                     None before compiling.
    activations:     ``max(0, temporaries - gradients)``: the gradients are
                     taken to be among the temporaries at the peak (with
                     ``keep_grads`` they are results and nothing is taken off).
                     What remains is the saved activations and the other
                     intermediates alive at the peak. None before compiling.
    other:           the rest of the arguments and globals: the batch, the
                     hyperparameters, the captured constants, alignment.
    total:           ``hbm_peak``, what the program needs (None before compiling).
    capacity:        the target's ``hbm_bytes`` (None when unknown).
    largest:         the biggest tensors, ``(name, bytes)``: parameters by
                     name, ``grad:<name>``, ``<slot>:<name>``.
    """

    trainable: int
    frozen: int
    gradients: int
    optimizer_state: int
    results: int
    activations: int | None = None
    temporaries: int | None = None
    other: int | None = None
    total: int | None = None
    capacity: int | None = None
    largest: tuple[tuple[str, int], ...] = ()

    @property
    def parameters(self) -> int:
        return self.trainable + self.frozen

    @property
    def resident(self) -> int:
        """Parameters + gradients + optimizer state: what no schedule avoids."""
        return self.parameters + self.gradients + self.optimizer_state

    def rows(self) -> list[tuple[str, int | None]]:
        return [("parameters", self.parameters), ("  trainable", self.trainable),
                ("  frozen + buffers", self.frozen), ("gradients", self.gradients),
                ("optimizer state", self.optimizer_state),
                ("temporaries (peak)", self.temporaries),
                ("  activations (peak)", self.activations),
                ("results (updated copies)", self.results),
                ("batch, hypers, constants", self.other), ("total (hbm peak)", self.total)]

    def table(self) -> str:
        lines = []
        for label, value in self.rows():
            if value is not None:
                lines.append(f"  {label:26s} {_bytes(value):>12s}")
        if self.capacity:
            used = self.total if self.total is not None else self.resident
            lines.append(f"  {'target hbm':26s} {_bytes(self.capacity):>12s}"
                         f"   ({100 * used / self.capacity:.3g}% used)")
        return "\n".join(lines)


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def _layout_tensors(layout: StepLayout, values: Mapping[str, np.ndarray],
                    slots: Mapping[str, Sequence[np.ndarray]],
                    shards: Mapping[str, int] | None = None) -> list[tuple[str, str, int]]:
    """(category, name, bytes) of every tensor the step holds or makes per step,
    on one chip (a tensor in ``shards`` is split over that many chips)."""
    shards = shards or {}
    tensors = [("trainable", n, int(values[n].nbytes)) for n in layout.trainable]
    tensors += [("frozen", n, int(values[n].nbytes)) for n in layout.constant]
    tensors += [("gradients", f"grad:{n}", int(values[n].size) * 4 // shards.get(f"grad:{n}", 1))
                for n in layout.trainable]
    tensors += [("optimizer_state", f"{slot}:{n}", int(a.nbytes) // shards.get(f"{slot}:{n}", 1))
                for slot in layout.slots for n, a in zip(layout.trainable, slots[slot])]
    return tensors


def memory_breakdown(layout: StepLayout, values: Mapping[str, np.ndarray],
                     slots: Mapping[str, Sequence[np.ndarray]], *, binary: Any = None,
                     shards: Mapping[str, int] | None = None,
                     peak: int | None = None, capacity: int | None = None,
                     top: int = 5) -> MemoryBreakdown:
    """The breakdown of a step (see :class:`MemoryBreakdown`); with the compiled
    ``binary`` and its ``peak`` the activations, other and total too."""
    tensors = _layout_tensors(layout, values, slots, shards)
    sums = {c: sum(b for cat, _, b in tensors if cat == c)
            for c in ("trainable", "frozen", "gradients", "optimizer_state")}
    results = sums["trainable"] + sums["optimizer_state"] + (sums["gradients"] if layout.grads
                                                             else 0)
    largest = tuple((n, b) for _, n, b in sorted(tensors, key=lambda t: -t[2])[:top])
    activations = other = temporaries = None
    if binary is not None:
        # A result the compiler aliases onto its input (an update in place)
        # shares that input's buffer: only results at addresses of their own count.
        n = len(layout.trainable)
        count = n + len(layout.slots) * n + (n if layout.grads else 0)
        outputs = sorted(binary.outputs, key=lambda e: e.index)[1:1 + count]
        taken = {e.address for e in binary.inputs}
        results = sum(e.byte_size for e in outputs if e.address not in taken)
    if binary is not None and peak is not None:
        # nova-plan-memory: arguments (inputs and results) from 0, then globals.
        ends = [e.address + e.byte_size for e in binary.io]
        ends += [c.address + len(c.data) for c in binary.constants]
        fixed = max(ends, default=0)
        temporaries = max(0, peak - fixed)
        held = sums["trainable"] + sums["frozen"] + sums["optimizer_state"] + results
        other = max(0, fixed - held)
        activations = temporaries if layout.grads else max(0, temporaries - sums["gradients"])
    return MemoryBreakdown(trainable=sums["trainable"], frozen=sums["frozen"],
                           gradients=sums["gradients"], optimizer_state=sums["optimizer_state"],
                           results=results, activations=activations,
                           temporaries=temporaries, other=other,
                           total=peak, capacity=capacity, largest=largest)


def hbm_peak(stages: Mapping[str, Any]) -> int | None:
    """The ``nova.hbm_peak`` nova-plan-memory set (the largest over functions),
    from the compile's ``nova_isa`` stage text; None when absent."""
    text = stages.get("nova_isa")
    if not isinstance(text, str):
        return None
    peaks = [int(p) for p in _PEAK.findall(text)]
    return max(peaks) if peaks else None


def hbm_capacity(target: str) -> int | None:
    """``hbm_bytes`` of target ``target`` (a name or a .json path), or None when
    its file cannot be found or read (the compiler then reports it)."""
    from nova.binary.targets import target_file
    from nova.sim.errors import TargetError
    from nova.sim.target import load_target

    path = target_file(target)
    if path is None:
        return None
    try:
        return load_target(path).hbm_bytes
    except TargetError:
        return None


def _message(head: str, breakdown: MemoryBreakdown) -> str:
    lines = [head, breakdown.table(), "  largest tensors: " + ", ".join(
        f"{name} {_bytes(b)}" for name, b in breakdown.largest)]
    return "\n".join(lines)


def check_fits(breakdown: MemoryBreakdown, target: str) -> None:
    """Raises :class:`TrainStepMemoryError` before compiling when parameters +
    gradients + optimizer state alone exceed the target's HBM."""
    if breakdown.capacity is None or breakdown.resident <= breakdown.capacity:
        return
    head = (f"the training step does not fit target '{target}': parameters, gradients and "
            f"optimizer state need {_bytes(breakdown.resident)} ({breakdown.resident} bytes) "
            f"of HBM per chip, the target has {_bytes(breakdown.capacity)} "
            f"({breakdown.capacity} bytes)")
    raise TrainStepMemoryError(_message(head, breakdown), breakdown)


def raise_for_compile_error(error: Exception, breakdown: MemoryBreakdown) -> None:
    """Re-raises the compiler's "needs N bytes of hbm" error as a
    :class:`TrainStepMemoryError` with the breakdown; other errors pass."""
    match = _HBM_ERROR.search(str(error))
    if match is None:
        return
    need, target, capacity = int(match[1]), match[2], int(match[3])
    rest = max(0, need - breakdown.resident - breakdown.results)
    detail = MemoryBreakdown(**{**breakdown.__dict__, "total": need, "capacity": capacity})
    head = (f"the training step does not fit target '{target}': the compiler's memory plan "
            f"needs {_bytes(need)} ({need} bytes) of HBM per chip, the target has "
            f"{_bytes(capacity)} ({capacity} bytes); activations, the batch and the other "
            f"temporaries take the {_bytes(rest)} beyond the tensors below")
    raise TrainStepMemoryError(_message(head, detail), detail) from error


def step_memory(step: Any) -> MemoryBreakdown:
    """The breakdown of a compiled :class:`~nova.training.TrainStep` (its
    current arrays, its binary, the compile's hbm peak)."""
    program = step.program
    peak = getattr(step, "hbm_peak", None)
    if peak is None and program is not None:
        peak = hbm_peak(program.stages)
    capacity = None
    if program is not None:
        capacity = program.binary.target.get("hbm_bytes")
    # State a data-parallel step splits over its chips (ZeRO-1 and 2) and the
    # gradients ZeRO-2 reduce-scatters, per chip.
    shards = {}
    if program is not None:
        names = step.layout.input_names
        for position, split in getattr(program, "splits", {}).items():
            if position < len(names) and ":" in names[position]:
                shards[names[position]] = split.count
        for name in getattr(program, "grad_shards", ()):
            shards[f"grad:{name}"] = program.binary.chips
    return memory_breakdown(step.layout, step._values, step._slots,
                            binary=None if program is None else program.binary,
                            shards=shards, peak=peak, capacity=capacity)
