"""Insert a plan's ``shard`` annotations into linalg-on-tensors, through the
MLIR 22 Python bindings (``xtc-mlir-python-bindings``), never by editing text.

The result has a ``shard.grid @nova_mesh``; every argument of the entry
function is annotated for its users (``shard.shard ... annotate_for_users``)
with its sharding, and every result with its own (replicated unless the
plan splits it, as data parallelism splits outputs along the batch).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from nova.parallel.errors import ParallelError
from nova.runtime.mesh import Mesh, Partial, Placement, split_axes

GRID = "nova_mesh"


class PlanError(ParallelError):
    """A plan that does not fit the program (unknown names, bad dims)."""


def axes_attr(ir, axes: list[list[int]]):
    inner = ", ".join("[" + ", ".join(str(a) for a in group) + "]" for group in axes)
    return ir.Attribute.parse(f"#shard<axisarray[{inner}]>")


def annotate(linalg: str, mesh: Mesh, arg_placements: Sequence[Mapping[int, Placement]],
             func_name: str = "forward",
             result_placements: Sequence[Mapping[int, Placement]] = ()) -> str:
    """Returns ``linalg`` with ``arg_placements[i]`` (mesh axis index ->
    placement) annotated on argument ``i`` of ``@func_name``, and
    ``result_placements[i]`` on result ``i`` (replicated when not given; not
    annotated when ``None``: sharding propagation places it)."""
    import mlir.ir as ir
    from mlir.dialects import func as func_d
    from mlir.dialects import shard

    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(linalg)
        entry = None
        for op in module.body.operations:
            if isinstance(op.opview, func_d.FuncOp) and op.opview.sym_name.value == func_name:
                entry = op.opview
        if entry is None:
            raise PlanError(f"no function @{func_name} in the program")
        block = entry.body.blocks[0]
        if len(arg_placements) != len(block.arguments):
            raise PlanError(f"@{func_name} has {len(block.arguments)} arguments, "
                            f"the plan places {len(arg_placements)}")

        with ir.InsertionPoint.at_block_begin(module.body):
            shard.GridOp(GRID, ir.DenseI64ArrayAttr.get(list(mesh.shape)))
        mesh_axes = list(range(len(mesh.shape)))
        grid = ir.FlatSymbolRefAttr.get(GRID)
        sharding_type = ir.Type.parse("!shard.sharding")

        def sharding(axes: list[list[int]]):
            return shard.ShardingOp(grid, axes_attr(ir, axes), [], [],
                                    results=[sharding_type]).result

        first = block.operations[0]
        with ir.InsertionPoint(first):
            for index, (arg, placements) in enumerate(zip(block.arguments, arg_placements)):
                if any(isinstance(p, Partial) for p in placements.values()):
                    raise PlanError(f"argument {index}: Partial() cannot place a program "
                                    "input (MLIR 22 shard.sharding has no partial axes)")
                rank = ir.RankedTensorType(arg.type).rank
                try:
                    axes = split_axes(mesh_axes, placements, rank)
                except ValueError as error:
                    raise PlanError(f"argument {index}: {error}") from None
                annotated = shard.ShardOp(arg, sharding(axes), annotate_for_users=True)
                arg.replace_all_uses_except(annotated.result, annotated.operation)

        terminator = block.operations[len(block.operations) - 1]
        with ir.InsertionPoint(terminator):
            for i, value in enumerate(list(terminator.operands)):
                rank = ir.RankedTensorType(value.type).rank
                placements = result_placements[i] if i < len(result_placements) else {}
                if placements is None:  # left to sharding propagation
                    continue
                if any(isinstance(p, Partial) for p in placements.values()):
                    raise PlanError(f"result {i}: Partial() cannot place a program output")
                try:
                    axes = split_axes(mesh_axes, placements, rank)
                except ValueError as error:
                    raise PlanError(f"result {i}: {error}") from None
                terminator.operands[i] = shard.ShardOp(value, sharding(axes)).result
        return module.operation.get_asm(enable_debug_info=True)
