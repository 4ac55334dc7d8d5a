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
                          double_buffer: bool = True, bucket_mb: float = 25.0) -> tuple[CompiledProgram, CompileResult]:
    """Compiles ``imported`` for ``mesh.size`` chips of ``target``, data
    parallel over every axis of ``mesh`` (a 1-D mesh: ``Mesh((8,), ("dp",))``).

    ``zero=1`` shards the optimizer state as ZeRO stage 1 does: every state
    tensor whose dim 0 splits evenly over the chips is split along it (the
    others, a few small biases at most, stay replicated), each chip updates
    its shard of the state and of the parameters, and the partitioner
    all-gathers the updated parameters.

    ``bucket_mb`` is DDP's ``bucket_cap_mb``: gradients are all-reduced in
    buckets of at most that many MiB (each issued in the backward pass as soon
    as it is full); 0 all-reduces every gradient alone."""
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
    if zero not in (0, 1):
        raise TrainStepError(f"zero must be 0 or 1 (ZeRO stage 1), got {zero!r}")
    check_chips(target, mesh.size, f"mesh {mesh.shape}")
    batch = batch_positions(imported)
    for position in batch:
        shape = example[position].shape
        if not shape or shape[0] % mesh.size:
            raise TrainStepError(
                f"batch tensor {imported.layout.input_names[position]!r} of shape {list(shape)} "
                f"does not split evenly over {mesh.size} chips along dim 0")
    count = len(imported.layout.input_names) + len(imported.constants)
    sharded_state = state_shards(imported, example, mesh.size) if zero else {}
    split = set(batch) | set(sharded_state)
    placements = [{0: Shard(0)} if i in split else {} for i in range(count)]
    # Results: the loss and the parameters replicated, a sharded state tensor
    # stays sharded (it is written over its own input).
    results = [{} for _ in imported.layout.output_names]
    for position, result in sharded_state.items():
        results[result] = {0: Shard(0)}
    if not isinstance(bucket_mb, (int, float)) or isinstance(bucket_mb, bool) or bucket_mb < 0:
        raise TrainStepError(f"bucket_mb must be a number of MiB >= 0, got {bucket_mb!r}")
    annotated, spmd = partition(imported.mlir, mesh, placements, result_placements=results,
                                bucket_bytes=int(bucket_mb * 2**20))
    if dump_dir is not None:
        folder = Path(dump_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "0-sharded.mlir").write_text(annotated)
    result = compile_linalg(spmd, TargetOptions(name=target, chips=mesh.size),
                            dump_dir=dump_dir, double_buffer=double_buffer)
    result.stages["sharded"] = annotated
    program = CompiledProgram(result.binary, stages=result.stages,
                              splits={position: 0 for position in split})
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
