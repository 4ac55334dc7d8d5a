"""Compile a model for a mesh under a parallel plan:
annotate -> nova-partition -> the single-chip stages -> per-chip shards."""

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
from nova.parallel.plan import ParallelPlan
from nova.parallel.program import ParallelProgram
from nova.parallel.shards import local_shard


def partition(linalg: str, mesh: Mesh, arg_placements) -> tuple[str, str]:
    """The annotated program and the per-chip SPMD program (nova collectives)."""
    annotated = annotate(linalg, mesh, arg_placements)
    return annotated, run_opt(annotated, pipeline.partition())


def compile_parallel(model: torch.nn.Module, *example_args: torch.Tensor, mesh: Mesh,
                     plan: ParallelPlan, target: str = "nova-t1",
                     dump_dir: str | Path | None = None) -> ParallelProgram:
    """Exports ``model`` at ``example_args`` (full, unsharded shapes) and
    compiles it for ``mesh.size`` chips of ``target`` under ``plan``."""
    imported = import_model(model, *example_args)
    names = [p.name for p in imported.params] + [s.name for s in imported.inputs]
    unknown = set(plan.placements) - set(names)
    if unknown:
        raise PlanError(f"the plan names {sorted(unknown)}, which are not parameters or "
                        f"inputs of the model ({', '.join(names)})")
    arg_placements = [{mesh.axis(axis): p for axis, p in plan.of(name).items()}
                      for name in names]
    annotated, spmd = partition(imported.mlir, mesh, arg_placements)
    if dump_dir is not None:
        folder = Path(dump_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "0-sharded.mlir").write_text(annotated)
    result = compile_linalg(spmd, TargetOptions(name=target, chips=mesh.size),
                            dump_dir=dump_dir)
    result.stages["sharded"] = annotated
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    params = [t.detach().cpu().numpy() for t in state.values()]
    chip_params = [[local_shard(p, mesh, placements, chip)
                    for p, placements in zip(params, arg_placements)]
                   for chip in range(mesh.size)]
    return ParallelProgram(result.binary, chip_params, stages=result.stages)
