"""A training step data parallel over a mesh: the batch split along dim 0,
everything else replicated, compiled as one SPMD program.

The traced step is the whole-batch step (the loss is the mean over the
global batch); ``shard`` annotations split each batch tensor over the mesh
and the partitioner (``nova-partition``: MLIR's sharding propagation and
``shard-partition``) derives the rest: the loss and every gradient are
partial sums on each chip and are all-reduced, and each chip applies the
same update to its own replica of the parameters and optimizer state (which
stay resident in every chip's HBM). So a data-parallel step computes what the
one-chip step computes, up to the order of the sums.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nova.compiler.compile import CompileResult, compile_linalg
from nova.compiler.options import TargetOptions
from nova.frontend.train_export import ImportedTrainStep, donated_arguments
from nova.runtime.program import CompiledProgram
from nova.training.errors import TrainStepError

__all__ = ["batch_positions", "compile_data_parallel", "state_shards"]


def batch_positions(imported: ImportedTrainStep) -> list[int]:
    """Positions of the batch's tensors among the program's arguments."""
    layout = imported.layout
    names = layout.input_names
    first = len(names) - layout.batch - int(layout.seed) - int(layout.one)
    return list(range(first, first + layout.batch))


def compile_data_parallel(imported: ImportedTrainStep, example: list[np.ndarray], mesh,
                          target: str, *, zero: int = 0, dump_dir: str | Path | None = None,
                          double_buffer: bool = True, bucket_mb: float = 25.0,
                          plan=None) -> tuple[CompiledProgram, CompileResult]:
    """Compiles ``imported`` for ``mesh.size`` chips of ``target``, data
    parallel over every axis of ``mesh`` (a 1-D mesh: ``Mesh((8,), ("dp",))``).

    ``zero=1`` shards the optimizer state as ZeRO stage 1 does: every state
    tensor whose dim 0 splits evenly over the chips is split along it (the
    others, a few small biases at most, stay replicated), each chip updates
    its shard of the state and of the parameters, and the partitioner
    all-gathers the updated parameters.

    ``bucket_mb`` is DDP's ``bucket_cap_mb``: gradients are all-reduced in
    buckets of at most that many MiB (each issued in the backward pass as soon
    as it is full); 0 all-reduces every gradient alone.

    ``plan`` (a :class:`nova.parallel.ParallelPlan`) places the parameters
    by name instead (tensor parallelism): each parameter's optimizer state
    and its updated value take the parameter's placement, and sharding
    propagation carries it through the forward, the backward and the update
    (Megatron's collectives come out of partitioning). The batch is then split
    only over ``plan.batch_axis``, if it names one."""
    from nova.parallel.compile import partition
    from nova.parallel.mesh import Mesh
    from nova.parallel.placements import Shard
    from nova.parallel.target_chips import check_chips

    if not isinstance(mesh, Mesh):
        raise TrainStepError(f"mesh must be a nova.parallel.Mesh, got {type(mesh).__name__}")
    if len(mesh.shape) != 1:
        raise TrainStepError(f"a training step is data parallel over a 1-D mesh for now, got "
                             f"mesh {mesh.shape}")
    if imported.layout.accumulation_steps > 1:
        raise TrainStepError("gradient accumulation with a mesh is not supported yet")
    if zero and plan is not None:
        raise TrainStepError("zero=1 with a tensor-parallel plan needs a DP x TP mesh, which "
                             "is not supported yet")
    if zero not in (0, 1):
        raise TrainStepError(f"zero must be 0 or 1 (ZeRO stage 1), got {zero!r}")
    check_chips(target, mesh.size, f"mesh {mesh.shape}")
    batch = batch_positions(imported)
    batch_axis = 0 if plan is None else plan.batch_axis
    if batch_axis is not None:
        for position in batch:
            shape = example[position].shape
            if not shape or shape[0] % mesh.size:
                raise TrainStepError(
                    f"batch tensor {imported.layout.input_names[position]!r} of shape "
                    f"{list(shape)} does not split evenly over {mesh.size} chips along dim 0")
    count = len(imported.layout.input_names) + len(imported.constants)
    placements: list[dict] = [{} for _ in range(count)]
    results: list[dict] = [{} for _ in imported.layout.output_names]
    if batch_axis is not None:
        for position in batch:
            placements[position] = {mesh.axis(batch_axis): Shard(0)}
    if plan is not None:
        _place_parameters(imported, example, mesh, plan, placements, results)
    sharded_state = state_shards(imported, example, mesh.size) if zero else {}
    # ZeRO-1: a state tensor stays sharded (it is written over its own input).
    for position, result in sharded_state.items():
        placements[position] = results[result] = {0: Shard(0)}
    splits = {position: next(iter(p.values())).dim for position, p in enumerate(placements)
              if p and isinstance(next(iter(p.values())), Shard)}
    if not isinstance(bucket_mb, (int, float)) or isinstance(bucket_mb, bool) or bucket_mb < 0:
        raise TrainStepError(f"bucket_mb must be a number of MiB >= 0, got {bucket_mb!r}")
    # Written before nova-opt runs: when partitioning fails, it is the reproducer.
    on_annotated = None
    if dump_dir is not None:
        folder = Path(dump_dir)
        folder.mkdir(parents=True, exist_ok=True)
        on_annotated = (folder / "0-sharded.mlir").write_text
    annotated, spmd = partition(imported.mlir, mesh, placements, result_placements=results,
                                bucket_bytes=int(bucket_mb * 2**20), on_annotated=on_annotated)
    result = compile_linalg(spmd, TargetOptions(name=target, chips=mesh.size),
                            dump_dir=dump_dir, double_buffer=double_buffer)
    result.stages["sharded"] = annotated
    program = CompiledProgram(result.binary, stages=result.stages,
                              splits=splits)
    return program, result


def state_shards(imported: ImportedTrainStep, example: list[np.ndarray],
                 chips: int) -> dict[int, int]:
    """ZeRO-1: argument position -> result position of every optimizer state
    tensor whose dim 0 splits evenly over ``chips``."""
    n_train = len(imported.layout.trainable)
    # The state is what is donated after the parameters.
    return {position: result
            for position, result in donated_arguments(imported.layout).items()
            if position >= n_train and example[position].shape
            and example[position].shape[0] % chips == 0}


def _place_parameters(imported: ImportedTrainStep, example: list[np.ndarray], mesh, plan,
                      placements: list[dict], results: list[dict]) -> None:
    """A tensor-parallel plan's placements on the step's arguments and
    results: each trainable parameter, its optimizer state and their updated
    values (frozen parameters and buffers by their own names)."""
    from nova.parallel.placements import Shard

    layout = imported.layout
    n_train, n_const = len(layout.trainable), len(layout.constant)
    names = list(layout.trainable) + list(layout.constant)
    unknown = set(plan.placements) - set(names)
    if unknown:
        raise TrainStepError(f"the plan names {sorted(unknown)}, which are not parameters or "
                             f"buffers of the model ({', '.join(names)})")

    def of(name: str, shape) -> dict:
        by_index = {mesh.axis(axis): p for axis, p in plan.of(name, rank=len(shape)).items()}
        for placement in by_index.values():
            if isinstance(placement, Shard) and (placement.dim >= len(shape)
                                                 or shape[placement.dim] % mesh.size):
                raise TrainStepError(f"{name}: dimension {placement.dim} of shape "
                                     f"{list(shape)} does not split evenly over "
                                     f"{mesh.size} chips")
        return by_index

    for i, name in enumerate(names):
        placed = of(name, example[i].shape)
        if not placed:
            continue
        placements[i] = placed
        if i < n_train:
            results[1 + i] = placed
            for s in range(len(layout.slots)):
                k = s * n_train + i
                placements[n_train + n_const + k] = placed
                results[1 + n_train + k] = placed
