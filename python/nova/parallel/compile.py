"""Compile a model for a mesh under a parallel plan:
annotate -> nova-partition -> the single-chip stages -> per-chip shards.

A purely data-parallel plan (parameters replicated, inputs split along their
batch dimension) skips the shard dialect: every chip runs the program
compiled at its local batch, which needs no collective in the forward pass.
It assumes the model treats batch rows independently (true of inference
models without batch statistics). MLIR 22's ``sharding-propagation`` cannot
carry the batch split through the GPT anyway: ``tensor.collapse_shape`` /
``tensor.expand_shape`` have no ShardingInterface ("sharding interface is not
implemented"), and a keep-dim reduction such as LayerNorm's mean, whose
result map ``(d0, d1, d2) -> (d0, d1, 0)`` is not a projected permutation,
fails "invalid sharding interface implementation"."""

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
from nova.parallel.placements import Replicate, Shard
from nova.parallel.plan import ParallelPlan
from nova.parallel.program import ParallelProgram
from nova.parallel.shards import local_shard


def partition(linalg: str, mesh: Mesh, arg_placements) -> tuple[str, str]:
    """The annotated program and the per-chip SPMD program (nova collectives)."""
    annotated = annotate(linalg, mesh, arg_placements)
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
    batch_axes = _data_parallel_axes(arg_placements[:len(imported.params)],
                                     arg_placements[len(imported.params):])
    if batch_axes is not None:
        return _compile_replicas(model, example_args, mesh, batch_axes, params,
                                 arg_placements[len(imported.params):], target, dump_dir,
                                 double_buffer)
    annotated, spmd = partition(imported.mlir, mesh, arg_placements)
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
    return ParallelProgram(result.binary, chip_params, stages=result.stages, mesh=mesh)


def _data_parallel_axes(param_placements, input_placements) -> tuple[int, ...] | None:
    """The mesh axes the batch is split over when the plan is purely data
    parallel (every parameter replicated, every input split only along
    dimension 0, all over the same axes); None otherwise."""
    if any(not isinstance(p, Replicate) for ps in param_placements for p in ps.values()):
        return None
    axes_of_inputs = set()
    for placements in input_placements:
        if any(not isinstance(p, (Shard, Replicate)) or (isinstance(p, Shard) and p.dim != 0)
               for p in placements.values()):
            return None
        axes_of_inputs.add(tuple(sorted(a for a, p in placements.items()
                                        if isinstance(p, Shard))))
    if len(axes_of_inputs) != 1 or not next(iter(axes_of_inputs)):
        return None
    return next(iter(axes_of_inputs))


def _compile_replicas(model, example_args, mesh: Mesh, batch_axes: tuple[int, ...], params,
                      input_placements, target: str, dump_dir,
                      double_buffer: bool) -> ParallelProgram:
    """Data parallelism: the model compiled at the local batch, run by every
    chip on its rows; outputs are gathered along the batch on the host."""
    replicas = 1
    for axis in batch_axes:
        replicas *= mesh.shape[axis]
    local_args = []
    for index, arg in enumerate(example_args):
        if arg.dim() == 0 or arg.shape[0] % replicas:
            raise PlanError(f"input {index}: batch dimension of size "
                            f"{arg.shape[0] if arg.dim() else 0} does not split evenly "
                            f"over {replicas} chips")
        local_args.append(arg[: arg.shape[0] // replicas])
    imported = import_model(model, *local_args)
    result = compile_linalg(imported.mlir, TargetOptions(name=target, chips=mesh.size),
                            dump_dir=dump_dir, double_buffer=double_buffer)
    outputs = [{axis: Shard(0) for axis in batch_axes} for _ in imported.outputs]
    return ParallelProgram(result.binary, [params] * mesh.size, stages=result.stages,
                           mesh=mesh, input_placements=input_placements,
                           output_placements=outputs)
