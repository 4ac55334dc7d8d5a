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

from nova.compiler.build import Sharded, build_program
from nova.compiler.options import TargetOptions
from nova.frontend.train_export import ImportedTrainStep, donated_arguments
from nova.runtime.program import CompiledProgram
from nova.training.errors import TrainStepError

__all__ = ["batch_positions", "check_zero", "compile_data_parallel", "gradient_shards",
           "shard_gradients", "state_shards", "step_input_names"]


def batch_positions(imported: ImportedTrainStep) -> list[int]:
    """Positions of the batch's tensors among the program's arguments."""
    layout = imported.layout
    names = layout.input_names
    first = len(names) - layout.batch - int(layout.seed) - int(layout.one)
    return list(range(first, first + layout.batch))


def check_batch_split(batch: dict[str, tuple[int, ...]], mesh, plan=None) -> None:
    """Every batch tensor (by the name a plan gives it: ``input0``... or its
    keyword -> shape) splits evenly along dim 0 over the batch axis (``0``
    without a plan): checked before the step is traced."""
    batch_axis = 0 if plan is None else plan.batch_axis
    if batch_axis is None:
        return
    for name, shape in batch.items():
        if not shape or shape[0] % mesh.shape[mesh.axis(batch_axis)]:
            raise TrainStepError(f"batch tensor {name!r} of shape {list(shape)} does not split "
                                 f"evenly over {mesh.size} chips along dim 0")


def compile_data_parallel(imported: ImportedTrainStep, example: list[np.ndarray], mesh,
                          target: str, *, zero: int = 0, dump_dir: str | Path | None = None,
                          double_buffer: bool = True, bucket_mb: float = 25.0,
                          plan=None) -> CompiledProgram:
    """Compiles ``imported`` for ``mesh.size`` chips of ``target``, data
    parallel over every axis of ``mesh`` (a 1-D mesh: ``Mesh((8,), ("dp",))``).

    ``zero=1`` shards the optimizer state as ZeRO stage 1 does: every state
    tensor whose dim 0 splits evenly over the chips is split along it (the
    others, a few small biases at most, stay replicated), each chip updates
    its shard of the state and of the parameters, and the partitioner
    all-gathers the updated parameters. The gradients are still all-reduced
    whole (in buckets) and every chip holds each of them in full: the
    gradient norm of ``max_grad_norm`` reads the full gradients, and each
    chip slices its shard out for the update.

    ``zero=2`` (ZeRO stage 2) shards those gradients too: each gradient of a
    sharded state (see :func:`gradient_shards`) is annotated ``Shard(0)``
    where the backward produces it, so partitioning reduce-scatters it
    (``nova-form-reduce-scatter`` turns the all-reduce + slice into one
    ``reduce_scatter``) and a chip only ever holds its ``1/chips`` of it;
    the gradient norm is summed from the shards (one scalar all-reduce). The
    reduce-scatters are not bucketed (``nova-bucket-all-reduces`` buckets
    all-reduces only): one per gradient, each issued when it is produced.

    ``bucket_mb`` is DDP's ``bucket_cap_mb``: gradients are all-reduced in
    buckets of at most that many MiB (each issued in the backward pass as soon
    as it is full); 0 all-reduces every gradient alone.

    ``plan`` (a :class:`nova.parallel.ParallelPlan`) places the parameters
    by name instead (tensor parallelism): each parameter's optimizer state
    and its updated value take the parameter's placement, and sharding
    propagation carries it through the forward, the backward and the update
    (Megatron's collectives come out of partitioning). The batch is then split
    over ``plan.batch_axis``, if it names one, except the tensors the plan
    places by name (:func:`step_input_names`: the token ids split along the
    sequence under sequence parallelism)."""
    from nova.parallel.annotate import annotate
    from nova.runtime.mesh import Mesh, Shard
    from nova.parallel.split_tables import check_gathers_kept_whole
    from nova.parallel.target_chips import check_chips

    if not isinstance(mesh, Mesh):
        raise TrainStepError(f"mesh must be a nova.parallel.Mesh, got {type(mesh).__name__}")
    if len(mesh.shape) != 1 and plan is None:
        raise TrainStepError(f"a data-parallel training step without a plan takes a 1-D mesh, "
                             f"got mesh {mesh.shape}")
    if imported.layout.accumulation_steps > 1:
        raise TrainStepError("gradient accumulation with a mesh is not supported yet")
    check_zero(zero)
    if zero and plan is not None and plan.batch_axis is None:
        raise TrainStepError(f"zero={zero} shards over the data-parallel axis: give the plan a "
                             f"batch_axis (a DP x TP mesh)")
    if zero == 2 and plan is not None:
        raise TrainStepError("zero=2 with a tensor-parallel plan is not supported yet "
                             "(zero=1 is)")
    check_chips(target, mesh.size, f"mesh {mesh.shape}")
    batch = batch_positions(imported)
    batch_axis = 0 if plan is None else plan.batch_axis
    count = len(imported.layout.input_names) + len(imported.constants)
    placements: list[dict] = [{} for _ in range(count)]
    results: list[dict] = [{} for _ in imported.layout.output_names]
    if batch_axis is not None:
        for position in batch:
            placements[position] = {mesh.axis(batch_axis): Shard(0)}
    if plan is not None:
        _place_parameters(imported, example, mesh, plan, placements, results)
    sharded_state = {}
    if zero and plan is None:
        sharded_state = state_shards(imported, example, mesh.size)
        # ZeRO-1: a state tensor stays sharded (it is written over its own input).
        for position, result in sharded_state.items():
            placements[position] = results[result] = {0: Shard(0)}
    elif zero:
        sharded_state = _shard_state_over(imported, example, mesh, mesh.axis(batch_axis),
                                          placements, results)
    splits = _splits(mesh, placements)
    if not isinstance(bucket_mb, (int, float)) or isinstance(bucket_mb, bool) or bucket_mb < 0:
        raise TrainStepError(f"bucket_mb must be a number of MiB >= 0, got {bucket_mb!r}")
    annotated = annotate(imported.mlir, mesh, placements, result_placements=results)
    grad_names: tuple[str, ...] = ()
    if zero == 2 and sharded_state:
        annotated, grad_names = shard_gradients(annotated, imported, sharded_state)
    # What the memory report counts as sharded (nova.training.memory.step_memory).
    return build_program(Sharded(annotated, int(bucket_mb * 2**20), check_gathers_kept_whole),
                         TargetOptions(name=target, chips=mesh.size), splits=splits,
                         output_splits=_splits(mesh, results),
                         dump_dir=dump_dir, double_buffer=double_buffer, zero=zero,
                         grad_shards=grad_names)


def _splits(mesh, placements: list[dict]) -> dict:
    """How the runtime splits each placed input (joins each placed output)
    over the chips: a dim on a 1-D mesh, a
    :class:`~nova.parallel.shards.MeshSplit` on an n-D one."""
    from nova.runtime.mesh import Shard
    from nova.runtime.splits import MeshSplit

    splits = {}
    for position, placed in enumerate(placements):
        if not any(isinstance(p, Shard) for p in placed.values()):
            continue
        if len(mesh.shape) == 1:
            splits[position] = next(iter(placed.values())).dim
        else:
            splits[position] = MeshSplit(mesh, placed)
    return splits


def check_zero(zero) -> None:
    """A TrainStepError unless ``zero`` is a ZeRO stage this supports: 0, 1 or 2."""
    if isinstance(zero, bool) or not isinstance(zero, int) or zero not in (0, 1, 2):
        raise TrainStepError(f"zero must be 0, 1 (ZeRO stage 1: optimizer state sharded) or "
                             f"2 (stage 2: gradients sharded too), got {zero!r}")


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


def _shard_state_over(imported: ImportedTrainStep, example: list[np.ndarray], mesh, axis: int,
                      placements: list[dict], results: list[dict]) -> dict[int, int]:
    """ZeRO-1 over mesh axis ``axis`` (the data-parallel axis of a DP x TP
    mesh): each optimizer state tensor is also split over ``axis`` along its
    first dimension that the plan leaves whole and that splits evenly (a
    column-parallel weight's state along dim 1, a row-parallel one's along
    dim 0); one with no such dimension (a split bias) stays as the plan
    places it. Updates ``placements`` and ``results``; returns argument
    position -> result position of the tensors split."""
    n_train = len(imported.layout.trainable)
    sharded = {}
    for position, result in donated_arguments(imported.layout).items():
        shape = example[position].shape
        if position < n_train or not shape:
            continue
        placed = placements[position]
        zeroed = zero_placement(shape, placed, mesh, axis)
        if zeroed is placed:
            continue
        placements[position] = results[result] = zeroed
        sharded[position] = result
    return sharded


def zero_placement(shape, placed: dict, mesh, axis: int) -> dict:
    """``placed`` (a tensor's placement on ``mesh``) also split over mesh
    axis ``axis`` along the first dimension it leaves whole that splits
    evenly there, ZeRO's shard of an optimizer state; ``placed`` itself
    when no dimension does."""
    from nova.runtime.mesh import Shard

    local = list(shape)
    for other, p in placed.items():
        if isinstance(p, Shard):
            local[p.dim] //= mesh.shape[other]
    taken = {p.dim for p in placed.values() if isinstance(p, Shard)}
    for dim in range(len(shape)):
        if dim not in taken and local[dim] % mesh.shape[axis] == 0:
            return {**placed, axis: Shard(dim)}
    return placed


def gradient_shards(imported: ImportedTrainStep, sharded_state: dict[int, int]) -> tuple[str, ...]:
    """ZeRO-2: the trainable parameters whose gradients are split over the
    chips, those with (every) optimizer state tensor split (``sharded_state``
    from :func:`state_shards`)."""
    layout = imported.layout
    n_train, n_const = len(layout.trainable), len(layout.constant)
    if not layout.slots:
        return ()
    first = n_train + n_const
    return tuple(name for i, name in enumerate(layout.trainable)
                 if all(first + s * n_train + i in sharded_state
                        for s in range(len(layout.slots))))


def shard_gradients(annotated: str, imported: ImportedTrainStep,
                    sharded_state: dict[int, int]) -> tuple[str, tuple[str, ...]]:
    """ZeRO-2: ``annotated`` (the shard-annotated step) with every gradient
    that feeds a sharded state's update annotated ``Shard(0)`` for its users,
    and the names of the parameters whose gradients are (:func:`gradient_shards`).

    The gradients are found from the update backwards, through the MLIR
    bindings (the IR is never edited as text): the update is the closure of
    the elementwise ``linalg.generic`` ops, each reading its operand of the
    result's type at the result's indices, that the sharded state results
    are computed by. Walking back from the state results through that
    closure, the first value made outside it (a matmul, a reduction, a
    collapse) or also read outside it (the square of the gradient norm
    reads the raw gradient; its clipped copy is read by the update only) is
    the gradient, or a summand of it (a tied weight's two contributions,
    each annotated). Annotating a value of a state's shape ``Shard(0)``
    changes where the collectives go, never what is computed."""
    import mlir.ir as ir
    from mlir.dialects import shard

    from nova.parallel.annotate import GRID, axes_attr

    names = gradient_shards(imported, sharded_state)
    n_train, n_const = len(imported.layout.trainable), len(imported.layout.constant)
    first = n_train + n_const
    wanted = {name for name in names}
    # The results of the sharded state of parameters whose gradients are split.
    starts_at = sorted(result for position, result in sharded_state.items()
                       if imported.layout.trainable[(position - first) % n_train] in wanted)

    def elementwise(op) -> bool:
        if isinstance(op, ir.Block) or op.name != "linalg.generic" or len(op.results) != 1:
            return False
        return all("parallel" in str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"]))

    def whole_inputs(op) -> list:
        maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        out = op.results[0].type
        return [v for v, m in zip(op.opview.inputs, maps)
                if v.type == out and str(m) == str(maps[-1])
                and not isinstance(v.owner, ir.Block) and v.owner.name != "shard.shard"]

    def summands(value) -> list:
        """``value`` or, if it is a sum of two values of its type (a tied
        weight's contributions, a lookup's gradient added to zeros), their
        summands (zero fills left out), recursively."""
        op = value.owner
        if not elementwise(op) or len(op.opview.inputs) != 2:
            return [value]
        body = list(op.regions[0].blocks[0].operations)
        inputs = whole_inputs(op)
        if (len(body) != 2 or body[0].name != "arith.addf" or len(inputs) != 2
                or not all(isinstance(o.owner, ir.Block) for o in body[0].operands)):
            return [value]
        parts = [v for v in inputs if isinstance(v.owner, ir.Block)
                 or v.owner.name not in ("linalg.fill", "arith.constant", "tensor.empty")]
        return [piece for v in parts for piece in summands(v)]

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(annotated)
        entry = next(op for op in module.body.operations
                     if op.operation.name == "func.func"
                     and op.operation.attributes["sym_name"].value == "forward")
        terminator = list(entry.regions[0].blocks[0].operations)[-1]
        starts = []
        for index in starts_at:
            value = terminator.operands[index]
            if not isinstance(value.owner, ir.Block) and value.owner.name == "shard.shard":
                value = value.owner.operands[0]
            if elementwise(value.owner):
                starts.append(value.owner)
        update, stack = set(), list(starts)
        while stack:
            op = stack.pop()
            if op not in update:
                update.add(op)
                stack += [v.owner for v in whole_inputs(op) if elementwise(v.owner)]
        found, seen, done, stack = [], set(), set(), list(starts)
        while stack:
            op = stack.pop()
            if op in done:
                continue
            done.add(op)
            for value in whole_inputs(op):
                if value in seen:
                    continue
                seen.add(value)
                if (not elementwise(value.owner)
                        or any(use.owner not in update for use in value.uses)):
                    found += summands(value)
                else:
                    stack.append(value.owner)
        grid = ir.FlatSymbolRefAttr.get(GRID)
        sharding_type = ir.Type.parse("!shard.sharding")
        for value in found:
            rank = ir.RankedTensorType(value.type).rank
            if rank == 0:
                continue
            with ir.InsertionPoint.after(value.owner):
                # The producer's result pinned replicated (what propagation
                # gives it without ZeRO-2: a partial sum, all-reduced) so the
                # split does not propagate into the backward pass; its users
                # read it split: all-reduce + slice, one reduce-scatter.
                whole = shard.ShardingOp(grid, axes_attr(ir, [[]] * rank), [], [],
                                         results=[sharding_type]).result
                pinned = shard.ShardOp(value, whole)
                split = shard.ShardingOp(grid, axes_attr(ir, [[0]] + [[]] * (rank - 1)),
                                         [], [], results=[sharding_type]).result
                marked = shard.ShardOp(pinned.result, split, annotate_for_users=True)
            value.replace_all_uses_except(marked.result, pinned.operation)
        return module.operation.get_asm(enable_debug_info=True), names


def step_input_names(imported: ImportedTrainStep) -> dict[str, int]:
    """The step's batch tensors as a plan names them -> their argument
    positions: ``input0``, ``input1``... for the positional ones in the order
    ``step(*batch)`` takes them (the model's inputs, then the loss's: ids and
    labels are ``input0`` and ``input1``), the keyword for keyword ones (as
    ``compile_parallel`` names a forward's inputs)."""
    layout = imported.layout
    positional = layout.batch - len(layout.keywords)
    names = [f"input{i}" for i in range(positional)] + list(layout.keywords)
    return dict(zip(names, batch_positions(imported)))


def _place_parameters(imported: ImportedTrainStep, example: list[np.ndarray], mesh, plan,
                      placements: list[dict], results: list[dict]) -> None:
    """A tensor-parallel plan's placements on the step's arguments and
    results: each trainable parameter, its optimizer state and their updated
    values (frozen parameters and buffers by their own names)."""
    from nova.runtime.mesh import Shard

    layout = imported.layout
    n_train, n_const = len(layout.trainable), len(layout.constant)
    names = list(layout.trainable) + list(layout.constant)
    inputs = step_input_names(imported)
    unknown = set(plan.placements) - set(names) - set(inputs)
    if unknown:
        raise TrainStepError(f"the plan names {sorted(unknown)}, which are not parameters or "
                             f"buffers of the model ({', '.join(names)}) nor inputs of the "
                             f"step ({', '.join(inputs)})")

    def of(name: str, shape) -> dict:
        by_index = {mesh.axis(axis): p for axis, p in plan.of(name, rank=len(shape)).items()}
        for axis, placement in by_index.items():
            if isinstance(placement, Shard) and (placement.dim >= len(shape)
                                                 or shape[placement.dim] % mesh.shape[axis]):
                raise TrainStepError(f"{name}: dimension {placement.dim} of shape "
                                     f"{list(shape)} does not split evenly over "
                                     f"{mesh.shape[axis]} chips")
        return by_index

    # The batch: an input the plan names takes its placement (a sequence
    # split: Megatron-SP's ids and labels); the others keep batch_axis's.
    for name, position in inputs.items():
        if name in plan.placements:
            placements[position] = of(name, example[position].shape)
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
            if layout.grads:  # a kept gradient is returned as its parameter is
                results[1 + n_train * (1 + len(layout.slots)) + i] = placed
