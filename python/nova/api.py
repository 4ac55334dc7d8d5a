"""The Python entry points: compile a PyTorch model, run it, save and load it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from nova.compiler.compile import compile_linalg
from nova.compiler.options import TargetOptions
from nova.frontend import import_model
from nova.runtime.program import CompiledProgram

if TYPE_CHECKING:
    from nova.parallel.program import ParallelProgram


def compile(model: torch.nn.Module, *example_args: torch.Tensor, target: str = "nova-t1",
            chips: int = 1, dump_dir: str | Path | None = None,
            double_buffer: bool = True, mesh: Any = None,
            plan: Any = None) -> CompiledProgram | ParallelProgram:
    """Exports ``model`` at ``example_args`` and compiles it for ``target``.

    ``chips`` is the number of chips of the target system the program runs on
    (1 by default; 0 keeps the target file's chip count).
    The parameters' current values are bound into the returned program, which
    is called with the model's inputs only. ``dump_dir`` receives the IR of
    every stage (``0-linalg.mlir`` ... ``3-binary.nova``). ``double_buffer``
    prefetches each loop's next tile (nova-double-buffer).
    Raises NovaModelCompileError naming the failing op and the model's source
    line when the model cannot be compiled.

    With a ``mesh`` (``nova.parallel.Mesh``) and a ``plan``
    (``nova.parallel.ParallelPlan``) the model is partitioned over
    ``mesh.size`` chips and a ``nova.parallel.ParallelProgram`` is returned
    (see ``nova.parallel.compile_parallel``; ``chips`` is then unused).
    """
    if mesh is not None or plan is not None:
        if mesh is None or plan is None:
            raise ValueError("nova.compile: mesh and plan go together")
        from nova.parallel.compile import compile_parallel
        return compile_parallel(model, *example_args, mesh=mesh, plan=plan, target=target,
                                dump_dir=dump_dir, double_buffer=double_buffer)
    options = TargetOptions(name=target, chips=chips)
    imported = import_model(model, *example_args)
    result = compile_linalg(imported.mlir, options, dump_dir=dump_dir,
                            double_buffer=double_buffer)
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    params = [t.detach().cpu().numpy() for t in state.values()]
    return CompiledProgram(result.binary, params, stages=result.stages)


def export_and_run(model: torch.nn.Module, *args: torch.Tensor, target: str = "nova-t1") -> Any:
    """Compiles ``model`` at ``args`` and runs it once on the simulator."""
    return compile(model, *args, target=target)(*args)
