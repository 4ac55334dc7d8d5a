"""Parallel plans: placements for a model's parameters and inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from nova.parallel.errors import ParallelError
from nova.runtime.mesh import Placement, Replicate, Shard, split_axes


@dataclass(frozen=True)
class ParallelPlan:
    """Placements by state name (``"fc1.weight"``, as the exported program
    names its parameters, buffers and lifted constants) or input name
    (``"input0"`` for the first positional input, ``"input_ids"`` for a
    keyword one), each a mapping from mesh axis (name or index) to a
    placement. Anything not named is replicated, and so are the outputs.
    In a training step (``compile_train_step``) the inputs are the step's
    batch, numbered in the order ``step(*batch)`` takes it: the model's
    inputs, then the loss's (``step(ids, labels)``: ``"input0"`` is the
    ids, ``"input1"`` the labels)."""

    placements: Mapping[str, Mapping[str | int, Placement]] = field(default_factory=dict)
    #: When set, every tensor input the plan does not name is split along its
    #: first (batch) dimension over this mesh axis (data parallelism), whatever
    #: its dtype (token ids and masks too); a 0-d input is replicated.
    batch_axis: str | int | None = None

    def __post_init__(self) -> None:
        for name, by_axis in self.placements.items():
            for axis, placement in by_axis.items():
                if not isinstance(placement, Placement):
                    raise TypeError(f"placement of {name!r} on axis {axis!r} must be a "
                                    f"Shard, Replicate or Partial, got {placement!r}")

    def of(self, name: str, *, is_input: bool = False,
           rank: int | None = None) -> Mapping[str | int, Placement]:
        """The placements of argument ``name`` (of rank ``rank`` when known)."""
        if name in self.placements:
            return self.placements[name]
        if is_input and self.batch_axis is not None and rank != 0:
            return {self.batch_axis: Shard(0)}
        return {}


def data_parallel_plan(axis: str | int = 0) -> ParallelPlan:
    """Data parallelism over mesh axis ``axis``: every tensor input
    (positional or keyword, float, integer or bool) is split along its batch
    dimension (``Shard(0)``; a 0-d input is replicated), all state is
    replicated, and each chip's outputs are its rows of the batch."""
    return ParallelPlan({}, batch_axis=axis)


def megatron_mlp_plan(first: str, second: str, *, axis: str | int = 0,
                      bias: bool = True) -> ParallelPlan:
    """Megatron-style tensor parallelism of two ``torch.nn.Linear`` layers
    named ``first`` and ``second``: the first is split by output features
    (column parallel: weight rows, bias), the second by input features (row
    parallel: weight columns, bias replicated), so the activation in between
    stays split and one all-reduce follows the second layer."""
    placements: dict[str, dict[str | int, Placement]] = {
        f"{first}.weight": {axis: Shard(0)},
        f"{second}.weight": {axis: Shard(1)},
    }
    if bias:
        placements[f"{first}.bias"] = {axis: Shard(0)}
        placements[f"{second}.bias"] = {axis: Replicate()}
    return ParallelPlan(placements)


def megatron_block_plan(prefix: str = "", *, attn: str = "attn", mlp: str = "mlp",
                        axis: str | int = 0) -> ParallelPlan:
    """Megatron tensor parallelism of a transformer block
    (``nova.models.GPTBlock``): attention's ``q``, ``k`` and ``v`` column
    parallel (heads split), ``proj`` row parallel, the MLP as in :func:`megatron_mlp_plan`;
    one all-reduce after attention and one after the MLP. ``prefix`` names
    the block (``"blocks.0."``)."""
    placements = dict(megatron_mlp_plan(f"{prefix}{mlp}.fc1", f"{prefix}{mlp}.fc2",
                                        axis=axis).placements)
    for name in ("q", "k", "v"):
        placements[f"{prefix}{attn}.{name}.weight"] = {axis: Shard(0)}
        placements[f"{prefix}{attn}.{name}.bias"] = {axis: Shard(0)}
    placements.update({
        f"{prefix}{attn}.proj.weight": {axis: Shard(1)},
        f"{prefix}{attn}.proj.bias": {axis: Replicate()},
    })
    return ParallelPlan(placements)


def megatron_transformer_plan(model, *, axis: str | int = "tp",
                              batch_axis: str | int | None = None,
                              sequence_parallel: bool = False) -> ParallelPlan:
    """Megatron tensor parallelism of every transformer block of ``model``
    over mesh axis ``axis`` (:func:`megatron_block_plan` for each module with
    ``q``/``k``/``v``/``proj`` projections, :func:`megatron_mlp_plan` for each
    with ``fc1``/``fc2``), combined with data parallelism over ``batch_axis``
    when given (DP x TP on a 2-D mesh). Everything else is replicated.

    ``sequence_parallel`` also splits the input ``[batch, seq, d_model]``
    along the sequence over ``axis``: propagation then keeps the LayerNorms
    and residual adds on each chip's slice of the sequence, all-gathers it
    before each column-parallel layer, and reduce-scatters the output of
    each row-parallel layer (Megatron's sequence parallelism; the
    reduce-scatter is formed by ``nova-form-reduce-scatter`` from the
    all-reduce + slice that partitioning gives). With ``batch_axis`` too
    (a 2-D mesh) the resharding goes through ``nova.reshard``
    (``nova-materialize-reshards``), since MLIR 22's shard-partition
    reshards only on 1-D grids. In a training step ``input0`` is the
    step's first batch tensor (the token ids); the labels (``input1``) stay
    replicated, as Megatron keeps them, since the loss reads the logits of
    the gathered sequence (name ``"input1"`` in the plan to split them too:
    they are then gathered before the loss)."""
    placements: dict[str, Mapping[str | int, Placement]] = {}
    for name, module in model.named_modules():
        prefix = f"{name}." if name else ""
        if all(hasattr(module, p) for p in ("q", "k", "v", "proj")):
            for proj in ("q", "k", "v"):
                placements[f"{prefix}{proj}.weight"] = {axis: Shard(0)}
                placements[f"{prefix}{proj}.bias"] = {axis: Shard(0)}
            placements[f"{prefix}proj.weight"] = {axis: Shard(1)}
            placements[f"{prefix}proj.bias"] = {axis: Replicate()}
        if hasattr(module, "fc1") and hasattr(module, "fc2"):
            placements.update(megatron_mlp_plan(f"{prefix}fc1", f"{prefix}fc2",
                                                axis=axis).placements)
    if not placements:
        raise ParallelError("the model has no attention (q, k, v, proj) or MLP (fc1, fc2) "
                         "modules to split")
    if sequence_parallel:
        placements["input0"] = {axis: Shard(1)}
        if batch_axis is not None:
            placements["input0"] = {batch_axis: Shard(0), axis: Shard(1)}
    return ParallelPlan(placements, batch_axis=batch_axis)
