"""Pipeline stages that each run on a mesh of chips (3-D parallelism:
DP x TP inside every stage, PP across them).

Stage ``s`` runs on chips ``s * n .. s * n + n - 1`` (``n = mesh.size``),
chip ``s * n + l`` at coordinate ``l`` of the stage mesh. Every body of a
stage (forward, backward, update, ...) is partitioned as one SPMD program
over the 3-D grid ``(pp, *mesh.axes)``, every placement replicated over
``pp``: its collectives' replica groups then stay inside one stage
(``[[0, 2], [1, 3], [4, 6], [5, 7]]`` for dp on a 2 x 2 x 2 grid) and each
chip's coordinates come from its global id, so the same partitioned body
is right on every stage's chips. A chip sends its activations to the chip
at the same stage-mesh coordinate of the next stage. Interleaved
(``virtual_stages=v``), everything here that is per stage is per model
chunk (bodies, parameters, optimizer state), chunks ``s, s + p, ...`` on
stage ``s``'s chips: the grid's ``pp`` extent stays ``p``, the physical
stages, so any chunk's partitioned bodies run on any stage's chips.

The batch (each micro-batch's inputs, labels, activations and their
gradients) is split over ``batch_axis``, and with sequence parallelism the
ids and the activations crossing between stages along the sequence too
(:meth:`StageMesh.boundary`); each parameter, its gradient and
its optimizer state take the plan's placement (replicated without one).
The tensors a forward saves for its backward stay where sharding
propagation puts them in the partitioned forward, and the backward takes
them there (:func:`_saved_placements`); so do the weight copies a ``W``
body makes once per step under autocast, from the parameters' placements
(:func:`_weight_copies`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from nova.parallel.errors import PipelineError
from nova.runtime.mesh import Mesh, Placement, Replicate, Shard
from nova.runtime.splits import assemble, local_shard

__all__ = ["StageMesh"]


@dataclass
class StageMesh:
    """``mesh`` inside each of ``stages`` stages, a plan's placements by
    parameter name, and the batch axis."""

    mesh: Mesh
    stages: int
    plan: Any = None
    batch_axis: int | None = 0
    #: ZeRO stage over the batch axis (0 or 1: optimizer state sharded).
    zero: int = 0
    #: Argument position -> placement on ``mesh`` (axis index -> Placement).
    args: dict[int, dict[int, Placement]] = field(default_factory=dict)
    #: Sequence parallelism: the axes that split the tokens (``Shard(1)``)
    #: of the ids and of every activation crossing between stages.
    sequence: dict[int, Placement] = field(default_factory=dict)

    @staticmethod
    def build(mesh: Mesh, stages: int, plan=None, zero: int = 0) -> "StageMesh":
        if not isinstance(mesh, Mesh):
            raise PipelineError(f"mesh must be a nova.parallel.Mesh, got {type(mesh).__name__}")
        batch_axis, sequence = 0, {}
        if plan is not None:
            batch_axis = None if plan.batch_axis is None else mesh.axis(plan.batch_axis)
            sequence = _sequence_axes(plan, mesh, batch_axis)
        if zero not in (0, 1) or isinstance(zero, bool):
            raise PipelineError(f"zero must be 0 or 1 (optimizer state sharded over the "
                                f"batch axis) for a pipeline, got {zero!r}")
        if zero and batch_axis is None:
            raise PipelineError("zero=1 shards over the batch axis: give the plan a batch_axis")
        return StageMesh(mesh, stages, plan, batch_axis, zero, sequence=sequence)

    @property
    def per_stage(self) -> int:
        return self.mesh.size

    @property
    def grid(self) -> Mesh:
        """The grid every body is partitioned over: ``pp`` first."""
        return Mesh((self.stages, *self.mesh.shape), ("pp", *self.mesh.axis_names))

    def chip(self, stage: int, local: int) -> int:
        return stage * self.per_stage + local

    # Placements ------------------------------------------------------------------------
    def batch(self) -> dict[int, Placement]:
        return {} if self.batch_axis is None else {self.batch_axis: Shard(0)}

    def boundary(self) -> dict[int, Placement]:
        """An activation (or its gradient) crossing between stages, and the
        ids: the batch split, and the tokens too with sequence parallelism
        (each chip sends its shard to its peer in the next stage)."""
        return {**self.batch(), **self.sequence}

    def param(self, name: str, shape) -> dict[int, Placement]:
        if self.plan is None:
            return {}
        placed = {self.mesh.axis(a): p
                  for a, p in self.plan.of(name, rank=len(shape)).items()}
        for axis, p in placed.items():
            if isinstance(p, Shard) and shape[p.dim] % self.mesh.shape[axis]:
                raise PipelineError(f"{name}: dimension {p.dim} of shape {list(shape)} does "
                                    f"not split evenly over {self.mesh.shape[axis]} chips")
        return placed

    def slot(self, name: str, shape) -> dict[int, Placement]:
        """An optimizer state tensor's placement: its parameter's, and with
        ZeRO-1 also split over the batch axis along the first dimension the
        plan leaves whole that splits evenly (else as the parameter)."""
        from nova.training.data_parallel import zero_placement

        placed = self.param(name, shape)
        if not self.zero:
            return placed
        return zero_placement(shape, placed, self.mesh, self.batch_axis)

    def on_grid(self, placed: Mapping[int, Placement]) -> dict[int, Placement]:
        """A stage-mesh placement on :attr:`grid` (replicated over pp)."""
        return {axis + 1: p for axis, p in placed.items() if not isinstance(p, Replicate)}

    def place_arguments(self, layout, infos) -> None:
        """Where the merged program's arguments go: each stage's parameters
        and optimizer state by the plan, the micro-batches split."""
        self.args.clear()
        batch = self.batch()
        for s, info in enumerate(infos):
            for a, name, t in zip(layout.params[s], info.names, info.params):
                self.args[a] = self.param(name, tuple(t.shape))
            for slot in layout.slots[s]:
                for a, name, t in zip(slot, info.names, info.params):
                    self.args[a] = self.slot(name, tuple(t.shape))
        for a in layout.inputs:
            self.args[a] = self.boundary()
        for a in layout.labels:
            self.args[a] = dict(batch)

    # Host <-> chips ----------------------------------------------------------------------
    def per_chip(self, values: Mapping[int, np.ndarray], index_of) -> dict[int, dict]:
        """Each chip's pieces of the split arguments (``values`` by argument
        position; ``index_of(position)`` is the binary's I/O index)."""
        chips = self.stages * self.per_stage
        out: dict[int, dict] = {c: {} for c in range(chips)}
        for position, value in values.items():
            placed = self.args.get(position)
            if not placed:
                continue
            pieces = [local_shard(value, self.mesh, placed, local)
                      for local in range(self.per_stage)]
            for c in range(chips):
                out[c][index_of(position)] = pieces[c % self.per_stage]
        return out

    def common(self, values: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
        """The arguments every chip gets whole."""
        return {a: v for a, v in values.items() if not self.args.get(a)}

    def read(self, position: int, stage: int, read_chip) -> np.ndarray:
        """Argument ``position`` put together from stage ``stage``'s chips
        (``read_chip(chip)`` reads one chip's buffer)."""
        placed = self.args.get(position)
        if not placed:
            return np.asarray(read_chip(self.chip(stage, 0)))
        pieces = [np.asarray(read_chip(self.chip(stage, local)))
                  for local in range(self.per_stage)]
        return assemble(pieces, self.mesh, placed)


def _sequence_axes(plan, mesh: Mesh, batch_axis: int | None) -> dict[int, Placement]:
    """The plan's sequence split (``megatron_transformer_plan(...,
    sequence_parallel=True)`` places ``input0``, the ids, as the batch axis
    on dim 0 and the tp axis on dim 1); any other input placement is an
    error: a stage's activations are placed from the ids' alone."""
    inputs = sorted(n for n in plan.placements if n.startswith("input"))
    if inputs and inputs != ["input0"]:
        raise PipelineError(f"the plan places {', '.join(inputs)}: inside pipeline stages "
                            "only input0 (the ids) may be placed, by sequence parallelism; "
                            "the labels follow the batch axis")
    if not inputs:
        return {}
    placed = {mesh.axis(a): p for a, p in plan.placements["input0"].items()
              if not isinstance(p, Replicate)}
    sequence = {a: p for a, p in placed.items() if a != batch_axis}
    if (placed.get(batch_axis, Shard(0)) != Shard(0)
            or any(p != Shard(1) for p in sequence.values())):
        raise PipelineError(f"the plan places input0 as {plan.placements['input0']}: inside "
                            "pipeline stages the ids split along the batch (the batch axis) "
                            "and the sequence (dimension 1) only")
    return sequence


def _annotated(stage_mesh: StageMesh, body, args: list[dict], results: list) -> str:
    """``body`` annotated for the stage grid (its lifted constants whole; a
    ``None`` result left to sharding propagation)."""
    from nova.parallel.annotate import annotate

    args = args + [{}] * len(body.constants)
    return annotate(body.mlir, stage_mesh.grid, [stage_mesh.on_grid(a) for a in args],
                    result_placements=[None if r is None else stage_mesh.on_grid(r)
                                       for r in results])


def _partitioned(stage_mesh: StageMesh, body, args: list[dict], results: list[dict]):
    """``body`` partitioned over the stage grid (its lifted constants whole)."""
    from nova.compiler.build import Sharded, partition

    annotated = _annotated(stage_mesh, body, args, results)
    return dataclasses.replace(body, mlir=partition(Sharded(annotated)))


def _saved_placements(stage_mesh: StageMesh, body, args: list[dict], results: list[dict]
                      ) -> list[dict[int, Placement]]:
    """Where a saved-activation forward ``body`` leaves its saved tensors
    (its results after ``results``): as sharding propagation places them
    (:mod:`nova.parallel.propagated`). A sharding a stage-mesh placement
    cannot state (a partial sum, halos, over pp, axes out of mesh order) is
    an error that names ``recompute=True``."""
    from nova.parallel.propagated import propagated_result_axes

    count = _signature(body)[1]
    annotated = _annotated(stage_mesh, body, args,
                           list(results) + [None] * (count - len(results)))
    out = []
    for i, axes in enumerate(propagated_result_axes(annotated)[len(results):]):
        if axes is None or any(0 in group or group != sorted(group) for group in axes):
            raise PipelineError(f"{body.name}: sharding propagation leaves saved tensor {i} "
                                f"in a form a placement cannot state ({axes}); pass "
                                "recompute=True")
        out.append({grid_axis - 1: Shard(dim)
                    for dim, group in enumerate(axes) for grid_axis in group})
    return out


def partition_bodies(stage_mesh: StageMesh, bodies: list[dict], infos, shared, rule,
                     recompute: bool = True) -> list[dict]:
    """Every stage's bodies partitioned over the stage grid (see the module
    docstring for the placements). Without ``recompute`` the bodies are
    :func:`~nova.parallel.pipeline_bodies.saved_bodies`: B takes F's saved
    tensors where the partitioned F leaves them (:func:`_saved_placements`).

    With ZeRO-1 the gradients accumulate as the optimizer state's dp shards
    (:meth:`StageMesh.slot`, all U reads of them): each B reduce-scatters its
    micro-batch's gradients, and B_acc adds half as much. Where sharding
    propagation cannot place a B that way (a weight gradient whose matmul
    operand would be split over dp twice: f32 ``dy^T @ x`` without a cast
    between), every stage keeps whole gradients, the parameters' placements."""
    from nova.compiler.errors import NovaCompileError

    if stage_mesh.zero:
        try:
            return _partition_bodies(stage_mesh, bodies, infos, shared, rule, recompute, True)
        except NovaCompileError:
            pass  # whole gradients below: the form before gradient shards
    return _partition_bodies(stage_mesh, bodies, infos, shared, rule, recompute, False)


def _partition_bodies(stage_mesh: StageMesh, bodies: list[dict], infos, shared, rule,
                      recompute: bool, shard_grads: bool) -> list[dict]:
    out = []
    p = len(infos)
    batch, edge = stage_mesh.batch(), stage_mesh.boundary()
    for s, traced in enumerate(bodies):
        info = infos[s]
        first, last = s == 0, s == p - 1
        params = [stage_mesh.param(n, tuple(t.shape)) for n, t in zip(info.names, info.params)]
        grads = [stage_mesh.slot(n, tuple(t.shape)) for n, t in zip(info.names, info.params)
                 ] if shard_grads else params
        consts = [{} for _ in info.constants]
        # x and y: the ids or an activation (``edge``); the labels by batch.
        f_args = params + consts + [edge] + ([batch] if last else [])
        f_results = [{}] if last else [edge]
        traced, copies = _weight_copies(stage_mesh, traced, params)
        f_args += copies
        saved = f_saved = None
        if not recompute:
            saved = f_saved = _saved_placements(stage_mesh, traced["F"], f_args, f_results)
            if "W" in traced:  # B's saved tensors: F's, with W's copies among them
                rest = iter(f_saved)
                saved = [next(rest) if j < 0 else copies[j] for j in traced["W"].saved]
        traced = dict(traced)
        if shard_grads and "G" in traced:
            # G sums a vector's gradient (norms, biases) in f32 over the
            # tokens split over dp: propagation cannot split that sum's
            # result over dp (no cast to reshard at, as for bf16 matmuls);
            # those stay whole, all-reduced once a step, and U takes them so.
            grads = [g if len(t.shape) > 1 else p
                     for g, p, t in zip(grads, params, info.params)]
        # The stage input's [micro-batch, T] (sequence parallelism places by it).
        tokens = (_forward_type(traced["F"].mlir)[0][len(params) + len(consts)][:2]
                  if stage_mesh.sequence else None)
        deferred = _deferred_bodies(stage_mesh, traced, saved, edge, grads, first, last,
                                    tokens)
        done = {}
        if isinstance(deferred, dict):
            done.update(deferred)
            traced = {k: b for k, b in traced.items() if k not in ("Bx", "G")}
        elif deferred:  # the mesh cannot place G: per micro-batch
            traced.pop("Bx")
            traced.update(traced.pop("G").fallback())
            traced["F"] = dataclasses.replace(traced["F"], deferral=deferred)
        for key, body in traced.items():
            if key == "F":
                # The saved results are left to propagation, as _saved_placements
                # read them (annotating them again trips propagation's dominance).
                args, results = f_args, f_results + [None] * len(f_saved or [])
            elif key in ("B", "Bacc") and saved is not None:
                args = saved + ([] if last else [edge]) + (grads if key == "Bacc" else [])
                results = ([] if first else [edge]) + grads
            elif key in ("B", "Bacc"):
                args = (params + consts + [edge, batch if last else edge]
                        + (grads if key == "Bacc" else []))
                results = ([] if first else [edge]) + grads + ([{}] if last else [])
            elif key == "W":  # its results left to propagation, as read
                args, results = params, [None] * len(copies)
            elif key == "U":
                slots = [stage_mesh.slot(n, tuple(t.shape))
                         for n, t in zip(info.names, info.params)]
                args = params + grads + slots * len(rule.slots)
                args += [{}] * (_signature(body)[0] - len(body.constants) - len(args))
                results = params + slots * len(rule.slots)
            elif key.startswith("A"):
                weight = shared[int(key[1:])]
                placed = grads[weight.index_a]
                args, results = [placed, placed], [placed]
            else:
                raise PipelineError(f"body {key} cannot run on a mesh inside the stages yet")
            done[key] = _partitioned(stage_mesh, body, args, results)
            if key == "F" and f_saved:
                _check_saved(stage_mesh, body, done[key], len(f_results), f_saved)
            if key == "W":
                _check_saved(stage_mesh, body, done[key], 0, copies)
        out.append(done)
    return out


def _deferred_bodies(stage_mesh: StageMesh, traced: dict, saved, edge, grads,
                     first: bool, last: bool, tokens: list[int] | None) -> dict | str:
    """``Bx`` and ``G`` partitioned (the weights' gradients once per step),
    or why a mesh cannot run them so ("" without a G): G concatenates each chip's
    pieces of the micro-batches' values along the value's dimension ``k``
    (``G.sources``: 0, or 1 for a transposed ``[d, tokens]`` activation),
    which is the step's tensor split the same way only when every value G
    reads per micro-batch is split over the batch axis along ``k`` and over
    nothing else there (its tokens then a permutation of the step's, the
    same one for every value; G sums over them)."""
    if "G" not in traced:
        return ""
    bx, g = traced["Bx"], traced["G"]
    bx_args = [saved[j] for j in bx.saved] + ([] if last else [edge])
    bx_results = [] if first else [edge]
    try:
        extras = _saved_placements(stage_mesh, bx, bx_args, bx_results)
    except PipelineError as error:
        return f"sharding propagation leaves a value G reads unplaceable: {error}"
    placed_extras = [None] * len(extras)  # left to propagation, as read
    if stage_mesh.sequence:
        placed_extras = _along_sequence(stage_mesh, bx, len(bx_results), extras, tokens)
        extras = [p or e for p, e in zip(placed_extras, extras)]
    args = []
    for kind, j, dim in g.sources:
        placed = (saved[j] if kind in ("saved", "once") else edge if kind == "dy"
                  else extras[j])
        if kind != "once" and not _split_as_batch(stage_mesh, placed, dim):
            return (f"a value G reads ({kind} {j}) is placed {placed}, not split over the "
                    f"batch axis along dimension {dim} alone")
        args.append(placed)
    out = {"Bx": _partitioned(stage_mesh, bx, bx_args, bx_results + placed_extras)}
    _check_saved(stage_mesh, bx, out["Bx"], len(bx_results), extras)
    out["G"] = _partitioned(stage_mesh, g, args, grads)
    return out


def _along_sequence(stage_mesh: StageMesh, bx, skip: int, extras: list[dict],
                    tokens: list[int]) -> list[dict | None]:
    """Under sequence parallelism, the placement Bx returns each value it
    leaves for G with: the stage boundary's (along the sequence too) for a
    ``[micro-batch, T, ...]`` value (``tokens``: the stage input's
    ``[micro-batch, T]``) that propagation places split over the batch alone,
    else None (left to propagation). Propagation leaves a norm's
    output gradient whole after the all-reduce of a column-parallel layer's
    input gradient; split, Bx reduce-scatters it and G sums the norm's weight
    gradients over each chip's tokens."""
    shapes = _forward_type(bx.mlir)[1][skip:]
    edge, batch = stage_mesh.boundary(), stage_mesh.batch()
    return [edge if shape[:2] == tokens and placed == batch else None
            for shape, placed in zip(shapes, extras)]


def _split_as_batch(stage_mesh: StageMesh, placed: Mapping[int, Placement],
                    dim: int = 0) -> bool:
    """``placed`` splits dimension ``dim`` over the batch axis alone (or
    nothing without one) and the batch axis splits no other dimension."""
    on_dim = {axis for axis, p in placed.items() if isinstance(p, Shard) and p.dim == dim}
    batch = stage_mesh.batch_axis
    elsewhere = any(axis == batch and isinstance(p, Shard) and p.dim != dim
                    for axis, p in placed.items())
    return on_dim == ({batch} if batch is not None else set()) and not elsewhere


def _weight_copies(stage_mesh: StageMesh, traced: dict, params: list[dict]):
    """``(traced, placements)``: W's weight copies where sharding propagation
    puts them from the parameters' placements (F and B take them there). A
    copy a placement cannot state leaves the stage without W: F casts for
    itself (:attr:`~nova.parallel.pipeline_bodies.Body.unhoisted`)."""
    if "W" not in traced:
        return traced, []
    try:
        return traced, _saved_placements(stage_mesh, traced["W"], params, [])
    except PipelineError:
        whole = {k: b for k, b in traced.items() if k != "W"}
        whole["F"] = traced["W"].unhoisted()
        return whole, []


def _check_saved(stage_mesh: StageMesh, body, partitioned, skip: int, saved) -> None:
    """The partitioned F returns each saved tensor at the local shape of the
    placement B is given (the full partition placed them as the propagation
    alone did); anything else is an error, never a wrong B."""
    whole = _forward_type(body.mlir)[1][skip:]
    local = _forward_type(partitioned.mlir)[1][skip:]
    if len(whole) != len(local):
        raise PipelineError(f"{body.name}: the partitioned forward returns {len(local)} "
                            f"saved tensors, not {len(whole)}")
    for i, (shape, got, placed) in enumerate(zip(whole, local, saved)):
        want = list(shape)
        for axis, p in placed.items():
            want[p.dim] //= stage_mesh.mesh.shape[axis]
        if want != got:
            raise PipelineError(f"{body.name}: saved tensor {i} of shape {shape} is "
                                f"{got} on a chip, its placement {placed} makes it {want}")


def _signature(body) -> tuple[int, int]:
    """How many arguments and results ``body``'s function has."""
    args, results = _forward_type(body.mlir)
    return len(args), len(results)


def _forward_type(mlir: str) -> tuple[list[list[int]], list[list[int]]]:
    """``@forward``'s argument and result shapes, parsed by ``mlir.ir`` from
    its signature alone (with the location aliases it may name): a
    partitioned body holds ``nova`` attributes (memory spaces) that the
    bindings cannot parse."""
    import re

    from mlir import ir

    lines = mlir.splitlines()
    line = next((l for l in lines if re.match(r"\s*func\.func (\w+ )?@forward\(", l)), None)
    if line is None:
        raise PipelineError("a body has no @forward function")
    declaration = re.sub(r"^\s*func\.func (\w+ )?@", "func.func private @",
                         line.rstrip().removesuffix("{"))
    aliases = [l for l in lines if l.startswith("#loc")]
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse("\n".join(aliases + [declaration]))
        kind = ir.FunctionType(ir.TypeAttr(
            module.body.operations[0].attributes["function_type"]).value)
        return ([list(ir.ShapedType(t).shape) for t in kind.inputs],
                [list(ir.ShapedType(t).shape) for t in kind.results])
