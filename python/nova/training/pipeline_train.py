"""Pipeline-parallel training: a model cut into ``p`` stages, stage ``s`` on
chip ``s``, ``m`` micro-batches per step under a 1F1B or GPipe schedule, each
chip updating its own stage's parameters, all in one multi-chip binary. With
``virtual_stages=v`` (Megatron's interleaved 1F1B) the model is cut into
``p * v`` chunks and chip ``s`` runs chunks ``s, s + p, ...``; everything
below that is per stage is then per chunk.

    step = compile_pipeline_train_step(model, loss_fn, optimizer, ids, labels,
                                       stages=2, microbatches=4, schedule="1f1b")
    loss = step(ids, labels)            # the mean of the micro-batches' losses
    print(step.schedule)                # per chip: F0 F1 B0 F2 B1 ... update

Design (docs/training.md, "Pipeline parallel"):

1. The stages are ``nn.Module``s sharing the model's parameters
   (:func:`~nova.training.pipeline_stages.gpt_stages` cuts a
   ``nova.models.GPT`` or a Hugging Face ``GPT2LMHeadModel`` at block indices).
2. Per stage, four bodies are traced and lowered alone
   (:mod:`nova.parallel.pipeline_bodies`): ``F`` (forward; on the last stage
   forward + loss), ``B`` and ``B_acc`` (backward from the stage's input and
   the output's gradient, recomputing the forward; ``B_acc`` adds to the
   gradients so far), ``U`` (the optimizer's update, in place); with
   saved activations ``Bx`` per micro-batch and ``G`` once per step instead
   of ``B`` and ``B_acc`` (``defer_weight_grads``).
3. The schedule (:mod:`nova.parallel.pipeline_schedule`, data) says in what
   order each chip runs its bodies per micro-batch and where the
   activations and their gradients cross (``nova.send`` / ``nova.recv``).
   :mod:`nova.training.pipeline_program` lays out the arguments and writes
   one function per chip from it by inlining the bodies
   (:mod:`nova.parallel.pipeline_merge`); the module is compiled to one binary.
4. The parameters and the optimizer state are donated: each chip's update
   writes its stage's in place in its HBM, where they stay between calls
   (a call writes the hyperparameters and the batch, reads the losses).

The loss is the mean of the micro-batches' losses, and the gradients are
those of that mean (as ``accumulation_steps=m`` of the one-chip step; for a
mean loss over equal micro-batches without ignored labels, the full batch's
loss).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from nova.compiler.build import Tiles, build_binary, build_program, stage_tiles
from nova.compiler.options import TargetOptions
from nova.parallel.errors import PipelineError
from nova.parallel.pipeline_bodies import (StageState, add_body, autocast_context,
                                           backward_body, clip_body, forward_body, norm_body,
                                           saved_bodies, update_body)
from nova.parallel.pipeline_merge import parse_body
from nova.parallel.pipeline_schedule import Schedule, check_virtual
from nova.parallel.target_chips import check_chips
from nova.training.optimizers import rule_for
from nova.training.pipeline_plan import stages_with_plan
from nova.training.pipeline_program import Layout, chip_module
from nova.training.pipeline_stages import gpt_chunks, gpt_stages

__all__ = ["PipelineTrainStep", "compile_pipeline_train_step", "gpt_stages"]


@dataclass(frozen=True)
class _StageInfo:
    state: StageState
    #: Names in the user's model (or ``stage<s>.<name>``) of the trainable ones.
    names: tuple[str, ...]
    params: tuple[nn.Parameter, ...]      # trainable, in order
    constants: tuple[torch.Tensor, ...]   # frozen parameters, buffers
    groups: tuple[tuple[int, ...], ...]   # per optimizer group: indices into params


def compile_pipeline_train_step(model: nn.Module | Sequence[nn.Module],
                                loss_fn: Callable[..., torch.Tensor],
                                optimizer: torch.optim.Optimizer, inputs: torch.Tensor,
                                labels: torch.Tensor, *, stages: int | None = None,
                                split_points: Sequence[int] | None = None,
                                microbatches: int = 4, schedule: str = "1f1b",
                                target: str = "nova-t1", recompute: bool = False,
                                max_grad_norm: float | None = None,
                                double_buffer: bool = True, mesh: Any = None,
                                plan: Any = None, zero: int = 0,
                                virtual_stages: int = 1,
                                autocast: torch.dtype | None = None,
                                defer_weight_grads: bool = True) -> "PipelineTrainStep":
    """Compiles a pipeline-parallel training step (see the module docstring).

    ``model`` is a ``nova.models.GPT`` or a ``transformers.GPT2LMHeadModel``
    (cut by :func:`gpt_stages` with ``split_points`` or into ``stages``
    stages, 2 by default) or a list of stage modules applied in order.
    ``loss_fn(output, labels)`` is a mean loss of one micro-batch.
    ``optimizer`` is ``torch.optim.AdamW`` or ``SGD`` over the stages'
    parameters. ``inputs`` and ``labels`` fix the batch's shapes;
    both are split into ``microbatches`` along dim 0. ``recompute=True``
    keeps only each stage's input between a micro-batch's forward and its
    backward, which runs the forward again (activation recomputation);
    by default the forward's saved activations are kept (AOT autograd's
    partition of the stage's joint graph). ``max_grad_norm`` clips the
    accumulated gradients by their global 2-norm over all stages, as
    ``torch.nn.utils.clip_grad_norm_`` (``step.grad_norm``: the norm before
    clipping; ``step.max_grad_norm`` may change between calls).

    ``mesh`` (a :class:`nova.parallel.Mesh`) runs every stage on a mesh of
    its own chips (3-D parallelism, :mod:`nova.training.pipeline_mesh`):
    ``p * mesh.size`` chips, each micro-batch split over the plan's
    ``batch_axis`` (axis 0 without a plan), the parameters placed by
    ``plan`` (e.g. ``megatron_transformer_plan(model, batch_axis="dp")`` on
    ``Mesh((2, 2), ("dp", "tp"))``). Each saved activation crosses from F
    to B where the partitioned F leaves it, cheap ops recomputed in B
    (AOT autograd's min-cut partition); ``recompute=True`` recomputes the
    whole forward instead. Clipping is not supported with a mesh yet.
    ``zero=1`` shards each stage's optimizer state over the batch axis too
    (ZeRO-1: each chip updates its shard, the parameters are all-gathered
    over the batch axis); the gradients then accumulate as those shards too,
    each micro-batch's reduce-scattered over the batch axis.

    ``virtual_stages=v > 1`` (Megatron's ``virtual_pipeline_model_parallel_size``)
    interleaves the 1F1B schedule: the model is cut into ``stages * v``
    chunks (a GPT's blocks must divide evenly into them; a list of modules
    is the chunks, ``len(model) / v`` stages) and chip ``s`` runs chunks
    ``s, s + p, s + 2p, ...``; ``microbatches`` must be a multiple of the
    stages. The bubble falls to ``(p - 1) / (v m + p - 1)`` for balanced
    chunks, at ``v`` times the activations' and gradients' messages. With a
    ``mesh`` chunks ``s, s + p, ...`` share stage ``s``'s chips, each
    chunk's bodies partitioned over the stage grid as a stage's are.

    ``autocast=torch.bfloat16`` (or ``torch.float16``) is mixed precision as
    in :func:`nova.compile_train_step`: each stage's forward and the loss are
    traced under ``torch.autocast("cpu", dtype=...)``; the parameters, their
    gradients and the optimizer state stay float32. With saved activations
    each stage casts its weights once per step (its ``W`` body, before the
    step's first forward), not in every micro-batch's forward."""
    check_virtual(virtual_stages)
    autocast_context(autocast)  # rejects a dtype autocast does not take
    v = virtual_stages
    if isinstance(model, (list, tuple)):
        if split_points is not None or stages is not None:
            raise PipelineError("stages= and split_points= cut a GPT; a list of stages is "
                                "already cut")
        modules, owner = list(model), None
    else:
        modules, owner = gpt_chunks(model, split_points, stages or 2, v), model
    if len(modules) < 2 or not all(isinstance(s, nn.Module) for s in modules):
        raise PipelineError("a pipeline needs a list of at least 2 torch.nn.Module stages")
    _refuse_dropout(owner, modules)
    if len(modules) % v:
        raise PipelineError(f"{len(modules)} chunks do not split into {v} virtual stages per "
                            f"chip")
    p = len(modules) // v
    sched = Schedule.build(schedule, p, microbatches, virtual=v)
    m = microbatches
    for what, t in (("inputs", inputs), ("labels", labels)):
        if not isinstance(t, torch.Tensor) or t.dim() == 0:
            raise PipelineError(f"{what} must be a tensor with a batch dimension")
        if t.shape[0] % m:
            raise PipelineError(f"{what}: batch {t.shape[0]} does not split into {m} "
                                f"micro-batches")
    if inputs.shape[0] != labels.shape[0]:
        raise PipelineError(f"inputs and labels have batches {inputs.shape[0]} and "
                            f"{labels.shape[0]}")
    stage_mesh = None
    if mesh is not None:
        from nova.training.pipeline_mesh import StageMesh

        if max_grad_norm is not None:
            raise PipelineError("max_grad_norm with a mesh inside the stages is not "
                                "supported yet")
        if plan is not None and not isinstance(model, nn.Module):
            raise PipelineError("plan= names the parameters of a model: give the model, "
                                "not a list of stages")
        if plan is not None:
            from nova.training.tensor_parallel import resolve_plan
            plan = resolve_plan(model, mesh, plan)
        stage_mesh = StageMesh.build(mesh, p, plan, zero)
        if stage_mesh.batch_axis is not None:
            dp = mesh.shape[stage_mesh.batch_axis]
            if (inputs.shape[0] // m) % dp:
                raise PipelineError(f"a micro-batch of {inputs.shape[0] // m} does not split "
                                    f"over {dp} chips")
        for axis in stage_mesh.sequence:
            tp = mesh.shape[axis]
            if inputs.dim() < 2 or inputs.shape[1] % tp:
                raise PipelineError(f"sequence parallelism splits the inputs' dimension 1 "
                                    f"over {tp} chips: inputs of shape {list(inputs.shape)}")
    elif plan is not None or zero:
        raise PipelineError("plan= and zero= need mesh=, the mesh inside each stage")
    chips = p * (1 if stage_mesh is None else stage_mesh.per_stage)
    check_chips(target, chips, f"a pipeline of {p} stages" +
                ("" if stage_mesh is None else f" of {stage_mesh.per_stage} chips"))
    rule = rule_for(optimizer)
    if optimizer.state:
        raise PipelineError("the optimizer already holds state (it took steps): a pipeline "
                            "step starts from a fresh optimizer")
    infos, shared = _stage_infos(modules, owner, optimizer)
    clip = max_grad_norm is not None
    sched = Schedule.build(schedule, p, microbatches, tuple((w.a, w.b) for w in shared), clip,
                           virtual=v)
    with stages_with_plan(owner, modules, None if stage_mesh is None else stage_mesh.plan):
        return _compile(modules, infos, shared, loss_fn, optimizer, rule, sched, inputs,
                        labels, target, double_buffer, bool(recompute), max_grad_norm,
                        stage_mesh, autocast, bool(defer_weight_grads))


def _forward_and_unread(stage: nn.Module, info, x: torch.Tensor, labels: torch.Tensor,
                        loss_fn, autocast, shared: set[int]
                        ) -> tuple[torch.Tensor, frozenset[int]]:
    """The stage's output at the example micro-batch (detached), and the
    trainable parameters it (or the loss) does not depend on, from the
    autograd graph of that one forward: their gradient is None in torch, and
    torch's optimizers leave them as they are. A weight shared with another
    stage is never counted (its gradient is the sum)."""
    with torch.enable_grad(), autocast_context(autocast):
        out = stage(x)
        target = loss_fn(out, labels) if loss_fn is not None else out.float().sum()
    trainable = [(i, p) for i, p in enumerate(info.params) if p.requires_grad]
    if not trainable:
        return out.detach(), frozenset()
    if not target.requires_grad:
        return out.detach(), frozenset(i for i, _ in trainable if i not in shared)
    grads = torch.autograd.grad(target, [p for _, p in trainable], allow_unused=True)
    return out.detach(), frozenset(i for (i, _), g in zip(trainable, grads)
                                   if g is None and i not in shared)


def _refuse_dropout(owner: nn.Module | None, modules: list[nn.Module]) -> None:
    """Dropout modules in training mode, named as the user's model names
    them: the bodies have no random stream yet (a functional dropout is
    caught when its body is traced)."""
    named = (owner.named_modules() if owner is not None else
             ((f"stage{s}.{n}", m) for s, stage in enumerate(modules)
              for n, m in stage.named_modules()))
    active = [n for n, m in named if isinstance(m, nn.modules.dropout._DropoutNd)
              and m.training and m.p > 0]
    if active:
        raise PipelineError(f"dropout in training mode ({', '.join(active[:3])}"
                            f"{', ...' if len(active) > 3 else ''}) is not supported in a "
                            f"pipeline yet: set its probability to 0 or call model.eval()")


def _stage_infos(modules: list[nn.Module], owner: nn.Module | None,
                 optimizer: torch.optim.Optimizer) -> list[_StageInfo]:
    names_of = {id(p): n for n, p in owner.named_parameters()} if owner is not None else {}
    group_of = {id(p): g for g, group in enumerate(optimizer.param_groups)
                for p in group["params"]}
    seen: dict[int, int] = {}
    shared_stages: dict[int, tuple[int, int]] = {}
    infos = []
    for s, stage in enumerate(modules):
        trainable, constant, params, consts, names = [], [], [], [], []
        for name, p in stage.named_parameters():
            if id(p) in seen and seen[id(p)] != s:
                if id(p) in shared_stages:
                    raise PipelineError(f"parameter {names_of.get(id(p), name)!r} is used by "
                                        f"more than two stages")
                shared_stages[id(p)] = (seen[id(p)], s)
            seen.setdefault(id(p), s)
            if p.requires_grad and id(p) in group_of:
                trainable.append(name)
                params.append(p)
                names.append(names_of.get(id(p), f"stage{s}.{name}"))
            else:
                constant.append(name)
                consts.append(p)
        for name, b in stage.named_buffers():
            constant.append(name)
            consts.append(b)
        groups = tuple(tuple(i for i, p in enumerate(params) if group_of[id(p)] == g)
                       for g in range(len(optimizer.param_groups)))
        infos.append(_StageInfo(StageState(tuple(trainable), tuple(constant)), tuple(names),
                                tuple(params), tuple(consts), groups))
    stray = set(group_of) - set(seen)
    if stray:
        raise PipelineError("the optimizer holds tensors that are parameters of no stage")
    return infos, _shared(infos, shared_stages)


@dataclass(frozen=True)
class _Shared:
    """A trainable weight used by stages ``a < b``: its index in each's parameters."""

    a: int
    b: int
    index_a: int
    index_b: int


def _shared(infos, shared_stages) -> list[_Shared]:
    out = []
    for key, (a, b) in shared_stages.items():
        ia = [id(t) for t in infos[a].params]
        ib = [id(t) for t in infos[b].params]
        if key not in ia or key not in ib:
            raise PipelineError("a weight shared by two stages must be trainable in both")
        out.append(_Shared(a, b, ia.index(key), ib.index(key)))
    return out


def _compile(modules, infos, shared, loss_fn, optimizer, rule, sched: Schedule, inputs, labels,
             target: str, double_buffer: bool, recompute: bool,
             max_grad_norm: float | None = None, stage_mesh=None,
             autocast: torch.dtype | None = None, defer: bool = True) -> "PipelineTrainStep":
    p, m = sched.stages, sched.microbatches
    per_stage = 1 if stage_mesh is None else stage_mesh.per_stage
    options = TargetOptions(name=target, chips=p * per_stage)
    x = inputs[: inputs.shape[0] // m]
    y_labels = labels[: labels.shape[0] // m]
    hypers = [[torch.tensor(v, dtype=torch.float32) for v in rule.hyper_values(g, 0)]
              for g in optimizer.param_groups]
    bodies: list[dict[str, Any]] = []
    for s, (stage, info) in enumerate(zip(modules, infos)):  # model chunks
        state = [t.detach() for t in info.params + info.constants]
        last = s == len(modules) - 1
        lf = loss_fn if last else None
        shared_here = {i for w in shared for c, i in ((w.a, w.index_a), (w.b, w.index_b))
                       if c == s}
        out, frozen = _forward_and_unread(stage, info, x, y_labels, lf, autocast, shared_here)
        dy = y_labels if last else torch.zeros_like(out)
        accumulate = (False, True) if m > 1 else (False,)
        if recompute:
            traced = {"F": forward_body(stage, info.state, state, x, lf, y_labels,
                                        tag=str(s), autocast=autocast)}
            for acc in accumulate:
                key = "Bacc" if acc else "B"
                traced[key] = backward_body(stage, info.state, state, x, dy, first=s == 0,
                                            loss_fn=lf, scale=1.0 / m, accumulate=acc,
                                            tag=str(s), autocast=autocast)
        else:
            traced = saved_bodies(stage, info.state, state, x, dy, first=s == 0, loss_fn=lf,
                                  scale=1.0 / m, accumulate=accumulate, tag=str(s),
                                  autocast=autocast, rematerialize=stage_mesh is not None,
                                  defer=m if defer else 0)
        slots = [[torch.zeros_like(t) for t in info.params] for _ in rule.slots]
        traced["U"] = update_body(rule.update, [t.detach() for t in info.params],
                                  [list(g) for g in info.groups], slots, hypers,
                                  rule.hypers, tag=str(s), frozen=frozen)
        bodies.append(traced)
        x = out
    for k, weight in enumerate(shared):
        bodies[weight.a][f"A{k}"] = add_body(infos[weight.a].params[weight.index_a].detach(),
                                             tag=str(k))
    counted = None
    if max_grad_norm is not None:
        # A shared weight's (summed) gradient counts once, in its first stage.
        later = {(w.b, w.index_b) for w in shared}
        counted = [[i for i in range(len(info.params)) if (s, i) not in later]
                   for s, info in enumerate(infos)]
        for s, info in enumerate(infos):
            grads = [t.detach() for t in info.params]
            if not counted[s]:
                raise PipelineError(f"stage {s} has no gradient of its own to clip")
            bodies[s]["N"] = norm_body([grads[i] for i in counted[s]], tag=str(s))
            bodies[s]["C"] = clip_body(len(infos), grads, tag=str(s))
    if stage_mesh is not None:
        from nova.training.pipeline_mesh import partition_bodies
        bodies = partition_bodies(stage_mesh, bodies, infos, shared, rule, recompute)
    lowered = [{k: (b, parse_body(stage_tiles(b.mlir, options))) for k, b in traced.items()}
               for traced in bodies]
    layout = Layout.build(infos, rule, hypers, m, lowered, counted)
    why = ("recompute=True" if recompute else "defer_weight_grads=False" if not defer
           else "one micro-batch" if m == 1 else None)
    deferred = ["" if "G" in traced else why or traced["F"][0].deferral
                for traced in lowered]
    if stage_mesh is not None:
        stage_mesh.place_arguments(layout, infos)
    text = chip_module(layout, lowered, sched, comm=True, shared=shared, recompute=recompute,
                       per_stage=per_stage)
    return build_program(Tiles(text), options, double_buffer=double_buffer,
                         program=lambda result: PipelineTrainStep(
                             infos, optimizer, rule, sched, layout, result.binary, shared=shared,
                             stages=result.stages, lowered=lowered,
                             double_buffer=result.double_buffered,
                             example=(inputs, labels), recompute=recompute,
                             max_grad_norm=max_grad_norm, stage_mesh=stage_mesh,
                             deferred=deferred))


class PipelineTrainStep:
    """A compiled pipeline training step: ``loss = step(inputs, labels)``.

    ``schedule`` (printable), ``report`` (the last call's simulator report),
    ``parameters()`` (by name, read from each stage's chip),
    ``run(inputs, labels, trace=True)`` + ``write_trace(path)``,
    ``bubble()`` (the measured idle fraction next to the ideal one)."""

    def __init__(self, infos, optimizer, rule, schedule: Schedule, layout: Layout,
                 binary: bytes, *, stages: dict, lowered, double_buffer: bool,
                 example, shared=(), recompute: bool = False,
                 max_grad_norm: float | None = None, stage_mesh=None,
                 deferred: Sequence[str] = ()) -> None:
        from nova.binary.format import load_binary

        self.infos, self.optimizer, self.rule = infos, optimizer, rule
        self.schedule, self.layout = schedule, layout
        self.binary_bytes = binary
        self.binary = load_binary(binary)
        self.stages = stages
        self._lowered, self._double_buffer = lowered, double_buffer
        self._shared = tuple(shared)
        #: The backward recomputes each stage's forward (else: saved activations).
        self.recompute = recompute
        self.max_grad_norm = max_grad_norm
        #: The last call's global gradient norm before clipping (with clipping).
        self.grad_norm: torch.Tensor | None = None
        self._example = example
        #: Per model chunk: "" when its weights' gradients run once per step
        #: (``defer_weight_grads``), else why they run per micro-batch.
        self.deferred = list(deferred)
        #: The mesh inside each stage (None: one chip per stage).
        self.stage_mesh = stage_mesh
        self._per_stage = 1 if stage_mesh is None else stage_mesh.per_stage
        self._inputs = sorted(self.binary.inputs, key=lambda e: e.index)
        self._outputs = sorted(self.binary.outputs, key=lambda e: e.index)
        self._steps = [0] * len(optimizer.param_groups)
        self._resident = None
        self._traced = None
        self.report = None
        self._work_binary = None

    # Arguments ---------------------------------------------------------------------------
    def _state_inputs(self) -> dict[int, np.ndarray]:
        values = {}
        L = self.layout
        for s, info in enumerate(self.infos):
            for a, t in zip(L.params[s], info.params):
                values[a] = t.detach().numpy().copy()
            for a, t in zip(L.constants[s], info.constants):
                values[a] = t.detach().numpy().copy()
            for k, slot in enumerate(self.rule.slots):
                state = [self.optimizer.state.get(t, {}).get(slot) for t in info.params]
                for a, t, v in zip(L.slots[s][k], info.params, state):
                    values[a] = (np.zeros(tuple(t.shape), np.float32) if v is None
                                 else v.detach().numpy().copy())
        base = len(L.arg_types) - len(L.constant_values)
        for j, v in enumerate(L.constant_values):
            values[base + j] = v
        return values

    def _call_inputs(self, inputs: torch.Tensor, labels: torch.Tensor) -> dict[int, np.ndarray]:
        L, m = self.layout, self.schedule.microbatches
        values = {}
        hyper = []
        for g, group in enumerate(self.optimizer.param_groups):
            self.rule.check(group)
            hyper += self.rule.hyper_values(group, self._steps[g])
        for a, v in zip(L.hypers, hyper):
            values[a] = np.array(v, dtype=np.float32)
        if L.max_norm is not None:
            if self.max_grad_norm is None:
                raise PipelineError("the step was compiled with clipping: max_grad_norm "
                                    "cannot become None")
            values[L.max_norm] = np.array(self.max_grad_norm, dtype=np.float32)
        for what, t, positions, ex in (("inputs", inputs, L.inputs, self._example[0]),
                                       ("labels", labels, L.labels, self._example[1])):
            if not isinstance(t, torch.Tensor) or t.shape != ex.shape or t.dtype != ex.dtype:
                raise PipelineError(f"{what} must be a {ex.dtype} tensor of shape "
                                    f"{list(ex.shape)}, got "
                                    f"{getattr(t, 'dtype', type(t).__name__)} "
                                    f"{list(getattr(t, 'shape', []))}")
            for a, piece in zip(positions, t.chunk(m, dim=0)):
                values[a] = np.ascontiguousarray(piece.detach().numpy())
        return values

    def _indexed(self, values: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        if self.stage_mesh is not None:
            values = self.stage_mesh.common(values)
        return {self._inputs[a].index: v for a, v in values.items()}

    def _per_chip(self, values: dict[int, np.ndarray]):
        """Each chip's pieces of the split arguments (a mesh inside the stages)."""
        if self.stage_mesh is None:
            return None
        return self.stage_mesh.per_chip(values, lambda a: self._inputs[a].index)

    def _read_arg(self, a: int, stage: int, simulator=None) -> np.ndarray:
        """Argument ``a`` as stage ``stage``'s chips hold it, put together."""
        simulator = simulator or self._resident
        index = self._inputs[a].index
        if self.stage_mesh is None:
            return simulator.read(index, chip=stage)
        return self.stage_mesh.read(a, stage, lambda chip: simulator.read(index, chip=chip))

    # Calling -----------------------------------------------------------------------------
    def __call__(self, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.run(inputs, labels)

    def run(self, inputs: torch.Tensor, labels: torch.Tensor, *,
            trace: bool = False) -> torch.Tensor:
        """One step on the simulator; returns the mean loss. ``trace=True``
        records a timeline (one process per chip) for :meth:`write_trace`; a
        traced run starts from the current parameters and keeps its result."""
        from nova.sim import Simulator

        values = self._call_inputs(inputs, labels)
        if trace:
            state = self._state_inputs() if self._resident is None else self._read_state()
            simulator = Simulator(self.binary, trace=True, resident=True)
            values.update(state)
        else:
            if self._resident is None:
                self._resident = Simulator(self.binary, resident=True)
                values.update(self._state_inputs())
            simulator = self._resident
        last = self.schedule.stages - 1
        wanted = [self._outputs[r].index for r in self.layout.losses]
        if self.layout.grad_norm is not None:
            wanted.append(self._outputs[self.layout.grad_norm].index)
        outputs, report = simulator.run(self._indexed(values), per_chip=self._per_chip(values),
                                        read=wanted)
        if trace:
            self._traced = simulator
            self._adopt(simulator)
        self.report = report
        for g in range(len(self._steps)):
            if any(info.groups[g] for info in self.infos):
                self._steps[g] += 1
        chip = outputs.get("chips", [outputs])[last * self._per_stage]
        if self.layout.grad_norm is not None:
            self.grad_norm = torch.from_numpy(np.array(chip[wanted.pop()]))
        losses = [torch.from_numpy(np.array(chip[i])) for i in wanted]
        return sum(losses[1:], losses[0]) / len(losses)

    def _read_state(self) -> dict[int, np.ndarray]:
        """The current state (from the stages' chips) as input values."""
        values = self._state_inputs()
        L = self.layout
        for c in range(self.schedule.chunks):
            for a in L.params[c] + [a for slot in L.slots[c] for a in slot]:
                values[a] = self._read_arg(a, self.schedule.chip_of(c))
        return values

    def _adopt(self, simulator) -> None:
        self._resident = simulator

    def parameters(self) -> dict[str, torch.Tensor]:
        """The trainable parameters by name, each read from its stage's chip."""
        if self._resident is None:
            return {n: t.detach().clone() for info in self.infos
                    for n, t in zip(info.names, info.params)}
        out = {}
        for c, info in enumerate(self.infos):
            for name, a in zip(info.names, self.layout.params[c]):
                if name in out:  # a shared weight: its first chunk's copy
                    continue
                out[name] = torch.from_numpy(np.array(
                    self._read_arg(a, self.schedule.chip_of(c))))
        return out

    def sync_to(self) -> None:
        """Writes the trained parameters into the stages' (the model's) parameters."""
        values = self.parameters()
        with torch.no_grad():
            for info in self.infos:
                for name, t in zip(info.names, info.params):
                    t.copy_(values[name])

    def write_trace(self, path) -> None:
        if self._traced is None:
            raise PipelineError("no trace recorded: call run(inputs, labels, trace=True) first")
        self._traced.write_trace(path)

    # Measuring ---------------------------------------------------------------------------
    def hbm_peaks(self) -> list[int]:
        """Per chip, the HBM bytes its function needs (``nova.hbm_peak`` of
        ``@chip<c>``: arguments, results and the live activations at the
        peak; 1F1B keeps fewer micro-batches' activations live than GPipe)."""
        import re

        peaks = {}
        for line in self.stages["nova_isa"].splitlines():
            chip = re.search(r"func\.func @chip(\d+)\(", line)
            peak = re.search(r"nova\.hbm_peak = (\d+)", line)
            if chip and peak:
                peaks[int(chip.group(1))] = int(peak.group(1))
        return [peaks[c] for c in sorted(peaks)]

    def time_step(self):
        """One step's timing only (no numbers, state unchanged); its report."""
        from nova.sim import Simulator

        _, self.report = Simulator(self.binary, functional=False).run({})
        return self.report

    def bubble(self) -> dict[str, Any]:
        """The pipeline's idle fraction, measured on the simulator (timing only).

        ``W_c``: the time chip ``c`` takes to run its forwards and backwards
        back to back with no communication (the same program with the sends
        dropped, the receives made plain buffers and the update left out);
        ``u_c``: its update (the same with the update, minus ``W_c``);
        ``T_c``: when chip ``c`` finishes the real step. The forward/backward
        phase spans ``T_fb = max_c (T_c - u_c)``, and the bubble is
        ``1 - mean_c W_c / T_fb``: the quantity ``(p - 1) / (m + p - 1)``
        predicts for balanced stages (interleaved: ``(p - 1) / (v m + p - 1)``). ``with_update`` counts the update in
        both (``1 - mean_c (W_c + u_c) / T``)."""
        from nova.binary.format import load_binary
        from nova.sim import Simulator

        if self._work_binary is None:
            self._work_binary = []
            for update in (False, True):
                text = chip_module(self.layout, self._lowered, self.schedule, comm=False,
                               update=update, shared=self._shared,
                               recompute=self.recompute, per_stage=self._per_stage)
                work = build_binary(Tiles(text), None, double_buffer=self._double_buffer)
                self._work_binary.append(load_binary(work.binary))

        def ends(binary):
            sim = Simulator(binary, functional=False)
            report = sim.run({})[1]
            return report, [ch.t_end for ch in sim.machine.chips]

        step, t_end = ends(self.binary)
        _, work = ends(self._work_binary[0])
        _, work_u = ends(self._work_binary[1])
        p = self.schedule.stages * self._per_stage  # chips
        updates = [work_u[c] - work[c] for c in range(p)]
        t_fb = max(t_end[c] - updates[c] for c in range(p))
        per_chip = [1 - work[c] / t_fb for c in range(p)]
        total = step.time_ns
        return {"step_ns": total, "fb_ns": t_fb, "work_ns": work, "update_ns": updates,
                "per_chip": per_chip, "measured": sum(per_chip) / p,
                "with_update": 1 - sum(work_u) / p / total,
                "ideal": self.schedule.ideal_bubble}
