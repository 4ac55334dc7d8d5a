"""Compile a model for a mesh under a parallel plan: the plan's placements
annotate the program (``shard``) and make its split tables (a
:class:`~nova.runtime.mesh.MeshLayout`); the compile driver partitions and
compiles it, and the program splits its parameters and inputs by the layout.

Every plan, data parallel included, goes through the shard dialect: the
plan's placements become ``shard.shard`` annotations on the program's
arguments (and, for a batch split, on its results), and upstream
``sharding-propagation`` / ``shard-partition`` decide everything else. A
data-parallel output stays split along the batch (each chip holds its rows;
the host puts them together), so the forward pass needs no collective."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from nova.compiler.build import Sharded, build_program
from nova.compiler.options import TargetOptions
from nova.frontend import TensorSpec
from nova.frontend.state import param_arrays
from nova.parallel.annotate import PlanError, annotate
from nova.parallel.errors import ParallelError
from nova.parallel.plan import ParallelPlan
from nova.parallel.split_tables import check_gathers_kept_whole
from nova.parallel.target_chips import check_chips
from nova.runtime.mesh import Mesh, MeshLayout, Placement, Shard
from nova.runtime.program import CompiledProgram


def compile_parallel(model: torch.nn.Module, *example_args: Any, mesh: Mesh,
                     plan: ParallelPlan | Mapping[str, Any], target: str = "nova-t1",
                     dump_dir: str | Path | None = None,
                     double_buffer: bool = True, **example_kwargs: Any) -> CompiledProgram:
    """Exports ``model`` at ``example_args`` / ``example_kwargs`` (full,
    unsharded shapes) and compiles it for ``mesh.size`` chips of ``target``
    under ``plan``.

    The model is exported as by ``nova.compile`` (keyword inputs, pytree
    outputs, Python scalars baked in) and the program is called the same way.
    The plan names the exported program's arguments: its state as
    ``ImportedProgram.params`` names it (parameters, buffers and lifted
    constants) and its tensor inputs as ``ImportedProgram.inputs`` does
    (``input0``, ... for positional ones, the keyword for keyword ones).
    A mesh of more chips than ``target`` has is a ChipCountError.

    ``plan`` may also be a ``parallelize_plan`` in PyTorch's vocabulary, a
    dict of module-name patterns to ``ColwiseParallel`` / ``RowwiseParallel``
    styles, for a 1-D ``mesh`` (translated by
    :func:`nova.parallel.torch_plan`)."""
    if not isinstance(mesh, Mesh):
        raise ParallelError(f"mesh must be a nova.parallel.Mesh, got {type(mesh).__name__}")
    if is_torch_plan(plan):
        from nova.parallel.torch_styles import torch_plan
        plan = torch_plan(model, mesh, plan)
    if not isinstance(plan, ParallelPlan):
        raise ParallelError(f"plan must be a nova.parallel.ParallelPlan or a dict of torch "
                            f"ParallelStyles, got {type(plan).__name__}")
    check_chips(target, mesh.size, f"mesh {mesh.shape}")
    imported = _import(model, mesh, plan, example_args, example_kwargs)
    specs = [*imported.params, *imported.inputs]
    names = [spec.name for spec in specs]
    unknown = set(plan.placements) - set(names)
    if unknown:
        raise PlanError(f"the plan names {sorted(unknown)}, which are not parameters or "
                        f"inputs of the model ({', '.join(names)})")
    state_count = len(imported.params)
    arg_placements = [{mesh.axis(axis): p
                       for axis, p in plan.of(spec.name, is_input=i >= state_count,
                                              rank=len(spec.shape)).items()}
                      for i, spec in enumerate(specs)]
    # A data-parallel output stays split along the batch; a scalar (a loss)
    # has no batch and is replicated.
    output_placements = ([{mesh.axis(plan.batch_axis): Shard(0)} if len(out.shape) else {}
                          for out in imported.outputs]
                         if plan.batch_axis is not None else [])
    _check_even_splits(specs, arg_placements, mesh)
    annotated = annotate(imported.mlir, mesh, arg_placements,
                         result_placements=output_placements)

    def layout(binary: bytes) -> MeshLayout:
        placements = _whole_where_kept_whole(binary, specs, arg_placements, mesh)
        return MeshLayout(mesh, params=placements[:state_count],
                          inputs=placements[state_count:], outputs=output_placements)

    return build_program(Sharded(annotated, check=check_gathers_kept_whole),
                         TargetOptions(name=target, chips=mesh.size), dump_dir=dump_dir,
                         double_buffer=double_buffer, params=param_arrays(imported),
                         binding=imported.binding, layout=layout,
                         state_names=[spec.name for spec in imported.params],
                         relayouts=getattr(plan, "relayouts", {}))


def is_torch_plan(plan: Any) -> bool:
    """A ``parallelize_module``-style plan: a dict (module names -> styles) or one style."""
    if isinstance(plan, ParallelPlan):
        return False
    if isinstance(plan, Mapping):
        return True
    from torch.distributed.tensor.parallel import ParallelStyle
    return isinstance(plan, ParallelStyle)


def _import(model: torch.nn.Module, mesh: Mesh, plan: ParallelPlan, args, kwargs):
    """The imported program. The model is exported with its stand-in modules
    (nova.parallel.rewrites): a torch-style plan's, plus a one-hot lookup
    for every nn.Embedding whose table the plan splits; a lookup still made
    on a split state is a ParallelError (nova.parallel.split_tables)."""
    from nova.frontend.export import export, import_exported
    from nova.parallel.rewrites import rewritten
    from nova.parallel.split_tables import check_no_split_lookups, embedding_rewrites

    rewrites = tuple(getattr(plan, "rewrites", ()))
    if getattr(plan, "styles", None):  # from torch styles (imports torch.distributed)
        from nova.parallel.torch_styles import check_heads
        check_heads(model, plan, mesh)
    rewrites += tuple(embedding_rewrites(model, plan, done=rewrites))
    with rewritten(model, rewrites, lambda axis: mesh.shape[mesh.axis(axis)]):
        exported = export(model, args, kwargs)
        check_no_split_lookups(exported, plan)
        return import_exported(exported)


def _whole_where_kept_whole(binary: bytes, specs: Sequence[TensorSpec],
                            placements_of: list[Mapping[int, Placement]],
                            mesh: Mesh) -> list[Mapping[int, Placement]]:
    """An argument the program never reads is kept whole by partitioning
    (nothing placed it): it goes whole to every chip, whatever the plan said."""
    from nova.binary.format import load_binary

    entries = sorted(load_binary(binary).inputs, key=lambda e: e.index)
    result = list(placements_of)
    for i, (spec, placements) in enumerate(zip(specs, placements_of)):
        splits = any(isinstance(p, Shard) and mesh.shape[axis] > 1
                     for axis, p in placements.items())
        if splits and i < len(entries) and tuple(entries[i].shape) == tuple(spec.shape):
            result[i] = {}
    return result


def _check_even_splits(specs: Sequence[TensorSpec],
                       placements_of: Sequence[Mapping[int, Placement]], mesh: Mesh) -> None:
    """A clear error for a state or input dimension the plan splits unevenly
    (shard-partition would abort on it)."""
    for spec, placements in zip(specs, placements_of):
        chips_of_dim: dict[int, int] = {}
        for axis, placement in placements.items():
            if isinstance(placement, Shard):
                chips_of_dim[placement.dim] = chips_of_dim.get(placement.dim, 1) * mesh.shape[axis]
        for dim, chips in chips_of_dim.items():
            size = spec.shape[dim] if dim < len(spec.shape) else 0
            if size % chips:
                raise PlanError(f"{spec.name}: dimension {dim} of size {size} does not split "
                                f"evenly over {chips} chips")
