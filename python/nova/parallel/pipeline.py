"""Pipeline parallelism (GPipe forward) of a module stack over 2+ chips.

    from nova.parallel.pipeline import compile_pipeline, split_gpt
    program = compile_pipeline(split_gpt(gpt, k=1), x, microbatches=4,
                               target="nova-t1")
    y = program(x)                      # == gpt(x); program.report.time_s

Design:

1. The model is cut into stages, each its own ``nn.Module``: at module
   boundaries or ``pipe_split()`` markers in its forward with PyTorch's
   pipeline frontend (:func:`split_stages`), or by hand for the GPT
   (:func:`split_gpt`: ``blocks[:k]`` | ``blocks[k:] + ln_f``).
2. Each stage is exported at the *microbatch* shape and lowered with the
   existing single-chip pipeline up to the ``nova`` (tiles) level
   (``nova-lower-to-tiles`` for the target at ``chips = stages``).
3. ``nova-opt --nova-merge-stages=microbatches=M`` (C++,
   lib/Schedule/MergeStages.cpp) takes the stage modules
   nested in one module and builds one ``func.func`` per stage with
   ``nova.chips = array<i64: s>``, all with the same signature (every stage's
   parameters, then the ``M`` microbatch inputs; ``M`` outputs). Stage ``s``
   runs its body ``M`` times; microbatch ``i``'s activation crosses from stage
   ``s`` to ``s + 1`` as ``nova.send ... to s+1 channel i`` /
   ``nova.recv ... from s channel i`` of an HBM buffer (+ ``nova.wait``): a
   stage sends microbatch ``i`` and goes on with ``i + 1`` while the next
   stage computes ``i`` (the simulator's send is buffered), i.e. the GPipe
   forward schedule.
4. The merged module goes through the existing ``nova-tiles-to-isa`` (which
   plans memory per function and lowers send/recv/wait to ISA with
   semaphores) and ``nova-translate --nova-to-binary`` (one program per chip
   set, docs/binary-format.md).

Inputs are written to every chip (the binary has one I/O table); the outputs
are read from the last stage's chip and concatenated along the batch.

Simulated (benchmarks/pipeline_parallel.py, GPT d_model 64, 4 layers, seq 16,
batch 4, k = 2; q, k and v as separate projections): 1 chip 128.99 us;
PP=2 x M=4 98.16 us on nova-t1 (switch), 98.67 us on nova-t1-ring8 (2 chips),
1.31x, max |err| 8e-7 vs torch. The
ideal GPipe bound is (M + 1) / (2 M) of the time at the same per-microbatch
efficiency; a microbatch of 1 uses the matrix unit less well than batch 4.
Training (backward, 1F1B / GPipe, per-stage updates) is
:mod:`nova.training.pipeline_train`. Not done here: more than one microbatch in flight per
buffer (each microbatch has its own activation buffers), weights are written
to every chip (the I/O table is shared by all programs).
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from nova.compiler.build import Stages, build_program
from nova.compiler.options import TargetOptions
from nova.frontend import import_model
from nova.frontend.state import param_arrays
from nova.parallel.errors import PipelineError
from nova.parallel.target_chips import check_chips


class Stage(nn.Module):
    """A run of modules applied in order (a pipeline stage)."""

    def __init__(self, modules: Sequence[nn.Module]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(modules)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def split_gpt(model: nn.Module, k: int | None = None) -> list[Stage]:
    """Two stages of a ``nova.models.gpt.GPT``: ``blocks[:k]`` and
    ``blocks[k:] + ln_f`` (``k`` defaults to half the blocks)."""
    blocks = list(model.blocks)
    k = len(blocks) // 2 if k is None else k
    if not 0 < k < len(blocks):
        raise PipelineError(f"split point {k} must leave blocks on both stages "
                         f"({len(blocks)} blocks)")
    return [Stage(blocks[:k]), Stage(blocks[k:] + [model.ln_f])]


def split_stages(model: nn.Module, example: torch.Tensor,
                 split_points: Sequence[str] | None = None) -> list[nn.Module]:
    """Cuts any single-input model into pipeline stages with PyTorch's own
    pipeline frontend (``torch.distributed.pipelining.pipeline``, which
    traces the model with torch.export): before each submodule named in
    ``split_points`` (``["blocks.2"]``), or, when ``split_points`` is None, at
    every ``torch.distributed.pipelining.pipe_split()`` call in the model's
    forward (a user marker). ``example`` is one microbatch."""
    from torch.distributed.pipelining import SplitPoint, pipeline

    names = {name for name, _ in model.named_modules()}
    spec = None
    if split_points is not None:
        unknown = [p for p in split_points if p not in names]
        if unknown:
            raise PipelineError(f"split points {unknown} are not submodules of the model")
        spec = {point: SplitPoint.BEGINNING for point in split_points}
    # torch's frontend rewrites the split submodules' forward in place: work
    # on a copy so that the caller's model stays compilable.
    with warnings.catch_warnings():
        # torch's pytree deprecation (LeafSpec), raised inside its frontend.
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        pipe = pipeline(copy.deepcopy(model), mb_args=(example,), split_spec=spec)
    if pipe.num_stages < 2:
        raise PipelineError("the model splits into one stage: name a split point or call "
                         "torch.distributed.pipelining.pipe_split() in its forward")
    return [pipe.get_stage_module(i) for i in range(pipe.num_stages)]


@dataclass
class PipelineProgram:
    """``program(x)`` splits ``x`` into microbatches along dim 0, runs the
    pipeline binary on the simulator and returns the last stage's outputs."""

    binary_bytes: bytes
    params: list[np.ndarray]
    microbatches: int
    stages: dict[str, Any] = field(default_factory=dict)
    report: Any = None

    def __post_init__(self) -> None:
        from nova.binary.format import load_binary
        self.binary = load_binary(self.binary_bytes)
        self._traced = None

    def write_trace(self, path) -> None:
        """Writes the last traced run's timeline (``run(x, trace=True)``)."""
        if self._traced is None:
            raise PipelineError("no trace recorded: call run(x, trace=True) first")
        self._traced.write_trace(path)

    def __call__(self, x: Any) -> torch.Tensor:
        return self.run(x)

    def run(self, x: Any, *, trace: bool = False) -> torch.Tensor:
        """Runs the pipeline on ``x``; ``trace=True`` records a timeline (one
        process per chip) for :meth:`write_trace`."""
        from nova.runtime.binding import ProgramInputError, check_tensor_dtype
        from nova.runtime.host_values import to_numpy
        from nova.sim import Simulator

        inputs = sorted(self.binary.inputs, key=lambda e: e.index)
        entries = inputs[len(self.params):]
        if len(entries) != self.microbatches or not entries or not entries[0].shape:
            raise PipelineError(f"the binary has {len(entries)} microbatch input(s) for "
                                f"{self.microbatches} microbatches")
        entry = entries[0]
        check_tensor_dtype("input 0", x, entry.dtype.name)
        array = to_numpy(x)
        whole = [entry.shape[0] * self.microbatches, *entry.shape[1:]]
        if list(array.shape) != whole:
            raise ProgramInputError(f"input 0 must have shape {whole} ({self.microbatches} "
                                    f"microbatches of {list(entry.shape)}), got {list(array.shape)}")
        bf16_as_f32 = entry.dtype.name == "BF16" and array.dtype == np.float32
        if array.dtype != entry.dtype.numpy_dtype and not bf16_as_f32:
            raise ProgramInputError(f"input 0 must have dtype {entry.dtype.numpy_dtype.name}, "
                                    f"got {array.dtype.name}")
        pieces = np.split(array, self.microbatches, axis=0)
        values = self.params + [np.ascontiguousarray(p) for p in pieces]
        simulator = Simulator(self.binary, trace=trace)
        outputs, report = simulator.run({e.index: v for e, v in zip(inputs, values)})
        self.report = report
        self._traced = simulator if trace else None
        last = outputs.get("chips", [outputs])[-1]
        outs = sorted(self.binary.outputs, key=lambda e: e.index)
        result = torch.from_numpy(np.concatenate([np.array(last[e.index]) for e in outs], axis=0))
        return result.to(torch.bfloat16) if outs and outs[0].dtype.name == "BF16" else result


def compile_pipeline(stages: Sequence[nn.Module], x: torch.Tensor, *, microbatches: int = 4,
                     target: str = "nova-t1", double_buffer: bool = True) -> PipelineProgram:
    """Compiles ``stages`` (applied in order) as a GPipe forward pipeline, stage
    ``s`` on chip ``s``, over ``microbatches`` slices of ``x`` along dim 0.
    Settings that cannot be compiled are a PipelineError (a ChipCountError for
    more stages than ``target`` has chips)."""
    _check_settings(stages, x, microbatches)
    check_chips(target, len(stages), f"a pipeline of {len(stages)} stages")
    options = TargetOptions(name=target, chips=len(stages))
    example = x[: x.shape[0] // microbatches]
    texts, params = [], []
    with torch.no_grad():
        for stage in stages:
            imported = import_model(stage, example)
            texts.append(imported.mlir)
            params += param_arrays(imported)
            example = stage(example)
    return build_program(Stages(tuple(texts), microbatches), options,
                         double_buffer=double_buffer,
                         program=lambda result: PipelineProgram(result.binary, params,
                                                                microbatches,
                                                                stages=result.stages))


def _check_settings(stages: Sequence[nn.Module], x: Any, microbatches: Any) -> None:
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
        raise PipelineError(f"microbatches must be a positive integer, got {microbatches!r}")
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        what = f"a {x.dim()}-d tensor" if isinstance(x, torch.Tensor) else type(x).__name__
        raise PipelineError(f"the pipeline's input must be a tensor with a batch dimension "
                            f"(dim 0) to split into microbatches, got {what}")
    if x.shape[0] % microbatches:
        raise PipelineError(f"batch {x.shape[0]} does not split into {microbatches} microbatches")
    if not stages or not all(isinstance(s, nn.Module) for s in stages):
        raise PipelineError("stages must be a non-empty list of torch.nn.Module")
