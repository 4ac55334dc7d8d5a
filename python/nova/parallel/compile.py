"""Compile a model for a mesh under a parallel plan:
annotate -> nova-partition -> the single-chip stages -> per-chip shards.

Every plan, data parallel included, goes through the shard dialect: the
plan's placements become ``shard.shard`` annotations on the program's
arguments (and, for a batch split, on its results), and upstream
``sharding-propagation`` / ``shard-partition`` decide everything else. A
data-parallel output stays split along the batch (each chip holds its rows;
the host puts them together), so the forward pass needs no collective."""

from __future__ import annotations

from pathlib import Path

import torch

from nova.compiler import pipeline
from nova.compiler.compile import compile_linalg
from nova.compiler.driver import run_opt
from nova.compiler.options import TargetOptions
from nova.frontend import import_model
from nova.parallel.annotate import PlanError, annotate
from nova.parallel.mesh import Mesh
from nova.parallel.placements import Shard
from nova.parallel.plan import ParallelPlan
from nova.parallel.program import ParallelProgram
from nova.parallel.shards import local_shard


def partition(linalg: str, mesh: Mesh, arg_placements,
              result_placements=()) -> tuple[str, str]:
    """The annotated program and the per-chip SPMD program (nova collectives)."""
    annotated = annotate(linalg, mesh, arg_placements, result_placements=result_placements)
    return annotated, run_opt(annotated, pipeline.partition())


def compile_parallel(model: torch.nn.Module, *example_args: torch.Tensor, mesh: Mesh,
                     plan: ParallelPlan, target: str = "nova-t1",
                     dump_dir: str | Path | None = None,
                     double_buffer: bool = True) -> ParallelProgram:
    """Exports ``model`` at ``example_args`` (full, unsharded shapes) and
    compiles it for ``mesh.size`` chips of ``target`` under ``plan``."""
    imported = import_model(model, *example_args)
    names = [p.name for p in imported.params] + [s.name for s in imported.inputs]
    unknown = set(plan.placements) - set(names)
    if unknown:
        raise PlanError(f"the plan names {sorted(unknown)}, which are not parameters or "
                        f"inputs of the model ({', '.join(names)})")
    arg_placements = [{mesh.axis(axis): p
                       for axis, p in plan.of(name, is_input=i >= len(imported.params)).items()}
                      for i, name in enumerate(names)]
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    params = [t.detach().cpu().numpy() for t in state.values()]
    input_placements = arg_placements[len(imported.params):]
    # A data-parallel output stays split along the batch; a scalar (a loss)
    # has no batch and is replicated.
    output_placements = ([{mesh.axis(plan.batch_axis): Shard(0)} if len(out.shape) else {}
                          for out in imported.outputs]
                         if plan.batch_axis is not None else [])
    _check_even_splits(names, [*state.values(), *example_args], arg_placements, mesh)
    annotated, spmd = partition(imported.mlir, mesh, arg_placements, output_placements)
    if dump_dir is not None:
        folder = Path(dump_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "0-sharded.mlir").write_text(annotated)
    result = compile_linalg(spmd, TargetOptions(name=target, chips=mesh.size),
                            dump_dir=dump_dir, double_buffer=double_buffer)
    result.stages["sharded"] = annotated
    chip_params = [[local_shard(p, mesh, placements, chip)
                    for p, placements in zip(params, arg_placements)]
                   for chip in range(mesh.size)]
    return ParallelProgram(result.binary, chip_params, stages=result.stages, mesh=mesh,
                           input_placements=input_placements,
                           output_placements=output_placements)


def _check_even_splits(names, tensors, placements_of, mesh: Mesh) -> None:
    """A clear error for a parameter or input dimension the plan splits
    unevenly (shard-partition would abort on it)."""
    for name, tensor, placements in zip(names, tensors, placements_of):
        chips_of_dim: dict[int, int] = {}
        for axis, placement in placements.items():
            if isinstance(placement, Shard):
                chips_of_dim[placement.dim] = chips_of_dim.get(placement.dim, 1) * mesh.shape[axis]
        for dim, chips in chips_of_dim.items():
            size = tensor.shape[dim] if dim < tensor.dim() else 0
            if size % chips:
                raise PlanError(f"{name}: dimension {dim} of size {size} does not split "
                                f"evenly over {chips} chips")
