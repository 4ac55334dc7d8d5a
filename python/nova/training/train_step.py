"""``nova.compile_train_step``: one training step compiled as one program, run
on the simulator call after call.

The program (see :mod:`nova.frontend.train_export`) takes the parameters,
the optimizer's state, the hyperparameters and the batch and returns the
loss, the updated parameters and the updated state. The parameters and the
optimizer state are donated to their updated values (``nova.aliasing_output``):
the update writes them in place, and they stay in the simulated HBM between
calls. A call writes only the hyperparameters and the batch and reads back
only the loss (and the gradients and their norm when asked); the host copies
of the parameters and state are read from HBM when asked for
(:meth:`TrainStep.parameters`, :meth:`TrainStep.state_dict`...) and written
again only after :meth:`TrainStep.load_state_dict`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from nova.compiler.build import build_program
from nova.compiler.stage_times import collecting, timed
from nova.compiler.errors import NovaModelCompileError
from nova.compiler.options import TargetOptions
from nova.frontend.random_bits import step_seed
from nova.frontend.train_export import ImportedTrainStep, StepLayout, import_train_step
from nova.runtime.mesh import Mesh
from nova.runtime.program import RESIDENT, CompiledProgram
from nova.training.data_parallel import (check_batch_split, check_zero,
                                         compile_data_parallel)
from nova.training.errors import TrainStepError
from nova.training.memory import (check_fits, hbm_capacity, memory_breakdown,
                                  raise_for_compile_error, step_memory)
from nova.training.optimizers import UpdateRule, rule_for
from nova.training.tensor_parallel import (StoredLayouts, step_plan, stored_layouts,
                                           traced_with_plan)

__all__ = ["TrainStep", "compile_train_step"]


def compile_train_step(model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor] | None,
                       optimizer: torch.optim.Optimizer, *example_batch: torch.Tensor,
                       target: str = "nova-t1", model_inputs: int | None = None,
                       max_grad_norm: float | None = None, accumulation_steps: int = 1,
                       keep_grads: bool = False, dump_dir: str | Path | None = None,
                       double_buffer: bool = True, seed: int = 0,
                       autocast: torch.dtype | None = None,
                       recompute: Sequence[str] = (), mesh: Any = None, zero: int = 0,
                       plan: Any = None, bucket_mb: float = 25.0, **example_keywords: torch.Tensor) -> "TrainStep":
    """Compiles one training step of ``model`` for ``target`` (one chip).

    ``step(*batch)`` then runs, on the simulator, what this does in torch::

        optimizer.zero_grad()
        loss = loss_fn(model(*batch[:model_inputs]), *batch[model_inputs:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)  # if given
        optimizer.step()

    and returns the loss as a 0-d torch tensor. ``model_inputs`` is 1 by
    default (all of the positional batch with ``loss_fn=None``). Keyword
    tensors go to the model as keywords: a Hugging Face model is trained by
    ``compile_train_step(model, None, optimizer, input_ids=ids, labels=labels)``
    and ``step(input_ids=ids, labels=labels)``. With ``loss_fn=None`` the
    model's output is the loss (or has it as ``.loss``). The batch's shapes
    and dtypes are those of ``example_batch`` / ``example_keywords``. ``accumulation_steps=k``
    splits every batch tensor into ``k`` micro-batches along dim 0 and
    accumulates the gradients of ``loss_i / k``; the loss returned is their
    mean. ``keep_grads=True`` makes the gradients the update used (what
    ``p.grad`` holds before ``optimizer.step()``) results of the program too:
    :meth:`TrainStep.grads`.

    ``optimizer`` is a ``torch.optim.SGD`` or ``torch.optim.AdamW`` over the
    model's parameters; each call reads its ``param_groups`` (so an lr
    scheduler drives the step) and a state it already holds is where the
    compiled step starts. Parameters that are frozen (``requires_grad=False``)
    or in no group are read, never updated, and have no state; a weight tied
    under two names is one parameter whose gradient sums both uses.
    The model's current mode is traced: in training mode ``nn.Dropout`` /
    ``F.dropout`` draw their masks on the chip from a counter-based generator
    (:mod:`nova.frontend.random_bits`). Call ``n`` (0, 1, ...) of the step
    uses the seed ``step_seed(seed, n)``: two steps compiled with the same
    ``seed`` give the same masks call for call, and each call, dropout site
    and micro-batch gets its own mask (the masks are not torch's).

    ``autocast=torch.bfloat16`` (or ``torch.float16``) is mixed precision as
    ``torch.autocast("cpu", dtype=...)`` makes it: the forward and the loss
    are traced under autocast (matmuls and linears in bf16, the casts where
    autocast puts them), while the parameters (master weights), their
    gradients and the optimizer state stay float32.

    ``mesh=nova.parallel.Mesh((8,), ("dp",))`` makes the step data parallel
    over the mesh's chips (:mod:`nova.training.data_parallel`): each chip
    takes its slice of the batch along dim 0, the gradients are all-reduced,
    and every chip updates its resident replica of the parameters and state.
    ``bucket_mb`` (with a mesh) is DDP's ``bucket_cap_mb``: the gradients are
    all-reduced in buckets of at most that many MiB, each issued in the
    backward pass as soon as it fills (0: one all-reduce per gradient).
    ``plan`` (with a mesh) trains under a tensor-parallel plan: a
    :class:`nova.parallel.ParallelPlan` or a dict of ``torch.distributed.
    tensor.parallel`` styles placing the parameters; their optimizer state
    and updated values take the same placement and partitioning derives the
    backward's collectives (docs/training.md, "Tensor parallel"). The plan
    may place the batch too, naming its tensors ``input0``, ``input1``...
    in the order ``step(*batch)`` takes them (keyword tensors by keyword):
    ``megatron_transformer_plan(model, sequence_parallel=True)`` splits the
    token ids along the sequence (Megatron's sequence parallelism,
    docs/training.md, "Sequence parallelism").

    ``zero=1`` (with a mesh) shards the optimizer state over the chips as
    ZeRO stage 1: each chip keeps and updates ``1/chips`` of it and the
    updated parameters are all-gathered. ``zero=2`` (ZeRO stage 2) shards the
    gradients too: they are reduce-scattered instead of all-reduced, and a
    chip holds only the ``1/chips`` of each it updates (``step.memory()``
    counts gradient shards for stage 2, full gradients for stage 1).

    ``recompute=["blocks.0", ...]`` recomputes those submodules' forwards in
    the backward instead of keeping their activations (activation
    checkpointing: ``torch.utils.checkpoint`` around each); the model's own
    non-reentrant ``checkpoint`` calls are recomputed likewise. The losses and
    gradients are bitwise those without it; ``step.stats`` counts the extra
    FLOPs in HFU, not MFU.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TrainStepError(f"seed must be an int, got {seed!r}")
    check_zero(zero)
    if zero and mesh is None:
        raise TrainStepError(f"zero={zero} shards over the chips of a mesh: give mesh= too")
    rule = rule_for(optimizer)
    if model_inputs is None:
        model_inputs = len(example_batch) if loss_fn is None else 1
    batch = tuple(example_batch) + tuple(example_keywords.values())
    if plan is not None:
        plan = step_plan(model, mesh, plan)
    if isinstance(mesh, Mesh):  # before tracing: a wrong batch fails fast
        names = [f"input{i}" for i in range(len(example_batch))] + list(example_keywords)
        check_batch_split({n: tuple(t.shape) for n, t in zip(names, batch)
                           if isinstance(t, torch.Tensor)}, mesh, plan)
    layout = _layout(model, optimizer, rule, batch, model_inputs,
                     max_grad_norm is not None, accumulation_steps, keep_grads,
                     tuple(example_keywords), _autocast_name(autocast), tuple(recompute))
    with collecting() as times:
        with timed("host copies of the state, HBM check"):
            step = TrainStep(model, optimizer, rule, layout, max_grad_norm=max_grad_norm,
                             seed=seed)
            if plan is not None:
                # Parameters the plan stores re-laid-out (a fused QKV grouped per chip):
                # permuted when bound, put back when read (docs/training.md, "Tensor parallel").
                step._stored = stored_layouts(plan, mesh)
            # Parameters + gradients + optimizer state over the target's HBM: said before compiling.
            breakdown = memory_breakdown(layout, step._values, step._slots,
                                         capacity=hbm_capacity(target))
            check_fits(breakdown, target)
            example = step._arguments(list(batch), check=False)
        with traced_with_plan(model, mesh, plan):
            imported = import_train_step(model, loss_fn, layout, rule.update,
                                         [torch.from_numpy(a) for a in example])
        try:
            if mesh is None:
                program = build_program(imported.mlir, TargetOptions(name=target, chips=1),
                                        dump_dir=dump_dir, double_buffer=double_buffer)
            else:
                program = compile_data_parallel(imported, example, mesh, target, zero=zero,
                                                dump_dir=dump_dir, double_buffer=double_buffer,
                                                bucket_mb=bucket_mb, plan=plan)
        except NovaModelCompileError as error:
            raise_for_compile_error(error, breakdown)
            raise
    step._attach(imported, program)
    step.compile_times = tuple(times)
    return step


def _layout(model: torch.nn.Module, optimizer: torch.optim.Optimizer, rule: UpdateRule,
            batch: tuple[Any, ...], model_inputs: int, clip: bool,
            accumulation_steps: int, keep_grads: bool, keywords: tuple[str, ...],
            autocast: str | None = None, recompute: tuple[str, ...] = ()) -> StepLayout:
    named = list(model.named_parameters())  # a tied weight once, under its first name
    group_of = {}
    for g, group in enumerate(optimizer.param_groups):
        for p in group["params"]:
            group_of[id(p)] = g
    known = {id(p) for _, p in named}
    stray = [key for key in group_of if key not in known]
    if stray:
        raise TrainStepError("the optimizer holds tensors that are not parameters of the model")
    trainable = [(n, p) for n, p in named if id(p) in group_of and p.requires_grad]
    index = {id(p): i for i, (_, p) in enumerate(trainable)}
    groups = tuple(tuple(index[id(p)] for p in group["params"] if id(p) in index)
                   for group in optimizer.param_groups)
    constant = ([n for n, p in named if id(p) not in index] +
                [n for n, _ in model.named_buffers()])
    for position, value in enumerate(batch):
        if not isinstance(value, torch.Tensor):
            raise TrainStepError(f"batch element {position} is a {type(value).__name__}: "
                                 "the batch holds tensors only")
        if accumulation_steps > 1 and (value.dim() == 0 or value.shape[0] % accumulation_steps):
            raise TrainStepError(
                f"batch element {position} of shape {list(value.shape)} does not split into "
                f"{accumulation_steps} micro-batches along dim 0")
    layout = StepLayout(trainable=tuple(n for n, _ in trainable), constant=tuple(constant),
                        groups=groups, slots=rule.slots, hypers=rule.hypers,
                        batch=len(batch), model_inputs=model_inputs, clip=clip,
                        accumulation_steps=accumulation_steps, grads=keep_grads,
                        keywords=keywords, autocast=autocast, recompute=recompute)
    return layout


def _autocast_name(dtype: torch.dtype | None) -> str | None:
    if dtype is None:
        return None
    if dtype not in (torch.bfloat16, torch.float16):
        raise TrainStepError(f"autocast must be torch.bfloat16 or torch.float16, got {dtype}")
    return str(dtype).removeprefix("torch.")


class TrainStep:
    """A compiled training step: ``loss = step(*batch)``.

    Holds the parameters and the optimizer state between calls (see the
    module docstring); ``state_dict()`` / ``load_state_dict()`` save and
    restore them, ``sync_to(model, optimizer)`` writes them into the torch
    model and optimizer. ``report`` is the last call's simulator report;
    ``grad_norm`` the last call's gradient norm before clipping (with
    ``max_grad_norm``). ``max_grad_norm`` may be changed between calls.
    """

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 rule: UpdateRule, layout: StepLayout, *, max_grad_norm: float | None,
                 seed: int = 0) -> None:
        self.model = model
        self.optimizer = optimizer
        self.rule = rule
        self.layout = layout
        self.max_grad_norm = max_grad_norm
        self.program: CompiledProgram | None = None
        self.imported: ImportedTrainStep | None = None
        self.report = None
        #: ``(stage, seconds)`` of the compile, in order
        #: (:func:`nova.compiler.stage_times.format_times` prints them).
        self.compile_times: tuple[tuple[str, float], ...] = ()
        self.grad_norm: torch.Tensor | None = None
        self._grads: dict[str, torch.Tensor] = {}
        state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        self._values = {name: _array(state[name]) for name in layout.trainable + layout.constant}
        # np.zeros, not zeros_like: calloc'd pages, not 1 GB of AdamW state written at once.
        self._slots = {slot: [_zeros(self._values[n]) for n in layout.trainable]
                       for slot in layout.slots}
        self._steps = [0] * len(layout.groups)
        # Names whose device copies are stored re-laid-out (a plan's relayouts);
        # the host arrays are always in the model's layout.
        self._stored = StoredLayouts()
        # The state (parameters, buffers, optimizer slots, the trace's constants)
        # lives in the resident HBM once a call has written it; the host arrays
        # are a copy, current when _host_current is set.
        self._on_device = False
        self._host_current = True
        #: The random stream: its seed and the calls made (the next call's number).
        self.seed, self.calls = seed, 0
        if optimizer.state:
            self._read_optimizer_state(optimizer.state_dict())

    def _attach(self, imported: ImportedTrainStep, program: CompiledProgram) -> None:
        self.imported = imported
        self.layout = imported.layout  # with the seed input when the step draws random numbers
        self.program = program
        self._constants = [_array(c) for c in imported.constants]

    # Calling -----------------------------------------------------------------------------
    def _arguments(self, batch: list[torch.Tensor], *, check: bool = True,
                   host: bool = False) -> list[np.ndarray]:
        """The program's arguments for a call on ``batch``: the state the resident
        HBM holds is passed as ``RESIDENT`` unless ``host`` (the host arrays)."""
        layout = self.layout
        groups = self.optimizer.param_groups
        hypers = []
        for g in range(len(layout.groups)):
            if check:
                self.rule.check(groups[g])
            hypers += self.rule.hyper_values(groups[g], self._steps[g])
        if len(groups) != len(layout.groups):
            raise TrainStepError("the optimizer's parameter groups changed since the step "
                                 "was compiled")
        resident = self._on_device and self.program is not None and not host
        if host:
            self._fetch()
        if resident:
            arrays = [RESIDENT] * (len(layout.trainable) + len(layout.constant) +
                                   len(layout.slots) * len(layout.trainable))
        else:  # in the stored layout (StoredLayouts.to_device)
            to_device = self._stored.to_device
            arrays = ([to_device(n, self._values[n])
                       for n in layout.trainable + layout.constant] +
                      [to_device(n, a) for slot in layout.slots
                       for n, a in zip(layout.trainable, self._slots[slot])])
        arrays += [np.array(v, dtype=np.float32) for v in hypers]
        if layout.clip:
            if self.max_grad_norm is None:
                raise TrainStepError("the step was compiled with clipping: max_grad_norm "
                                     "cannot become None")
            arrays.append(np.array(self.max_grad_norm, dtype=np.float32))
        if len(batch) != layout.batch:
            raise TrainStepError(f"the step takes a batch of {layout.batch} tensor(s), "
                                 f"got {len(batch)}")
        constants = list(self._constants) if self.imported is not None else []
        seed = [np.array(step_seed(self.seed, self.calls), np.int64)] if layout.seed else []
        if layout.one:
            seed.append(np.array(1.0, np.float32))
        if resident:
            constants = [RESIDENT] * len(constants)
        return arrays + [_array(b) for b in batch] + seed + constants

    def __call__(self, *batch: torch.Tensor, **keywords: torch.Tensor) -> torch.Tensor:
        """Runs forward, backward and the update on the simulator; returns the loss."""
        layout = self.layout
        if set(keywords) != set(layout.keywords):
            raise TrainStepError(f"the step takes the keyword tensors {list(layout.keywords)}, "
                                 f"got {list(keywords)}")
        batch = list(batch) + [keywords[k] for k in layout.keywords]
        # uint8 / int16 are carried in int32 on the chip (nova.frontend.narrow_ints);
        # the trace saw the caller's dtype.
        batch = [b.to(torch.int32) if isinstance(b, torch.Tensor)
                 and b.dtype in (torch.uint8, torch.int16) else b for b in batch]
        results = self.program.run(*self._arguments(batch), read=self._read_back())
        self.report = self.program.report
        self._on_device, self._host_current = True, False
        self.calls += 1
        self._take(results)
        return results[0]

    def _read_back(self) -> list[int]:
        """Output positions a call reads: the loss, the gradients when kept and
        their norm when clipping (the parameters and state stay in HBM)."""
        layout = self.layout
        n = len(layout.trainable)
        position = 1 + n + len(layout.slots) * n
        wanted = [0]
        if layout.grads:
            wanted += range(position, position + n)
            position += n
        if layout.clip:
            wanted.append(position)
        return wanted

    def _fetch(self) -> None:
        """Brings the host copies of the parameters and the optimizer state up to
        date with the resident HBM (they are inputs the update wrote over)."""
        if self._host_current:
            return
        layout = self.layout
        n = len(layout.trainable)
        to_host = self._stored.to_host  # back in the model's layout
        for i, name in enumerate(layout.trainable):
            self._values[name] = to_host(name, self.program.read_input(i).numpy())
        base = n + len(layout.constant)
        for s, slot in enumerate(layout.slots):
            self._slots[slot] = [to_host(name, self.program.read_input(base + s * n + i).numpy())
                                 for i, name in enumerate(layout.trainable)]
        self._host_current = True

    def time_step(self, trace: bool = False):
        """Simulates one step's timing only (no numbers, no state change; see
        ``CompiledProgram.run(timing_only=True)``) and returns its report: the
        simulated step time of a model too large to simulate functionally.
        ``trace=True`` records the timeline (slower), for
        ``program.critical_path()`` and ``program.concurrency()``."""
        self.program.run(timing_only=True, trace=trace)
        self.report = self.program.report
        return self.report

    def _take(self, results: list[torch.Tensor]) -> None:
        layout = self.layout
        n = len(layout.trainable)
        position = 1 + n + len(layout.slots) * n
        if layout.grads:
            self._grads = {name: (torch.from_numpy(self._stored.to_host(name, g.numpy()))
                                  if name in self._stored else g)
                           for name, g in zip(layout.trainable, results[position:position + n])}
            position += n
        self.grad_norm = results[position] if layout.clip else None
        used = {name for name in layout.trainable if name not in self.imported.unused}
        for g, group in enumerate(layout.groups):
            if any(layout.trainable[i] in used for i in group):
                self._steps[g] += 1

    # State -------------------------------------------------------------------------------
    @property
    def steps(self) -> list[int]:
        """Updates done so far, per parameter group."""
        return list(self._steps)

    def grads(self) -> dict[str, torch.Tensor]:
        """The last call's gradients by trainable parameter (compiled with ``keep_grads=True``)."""
        if not self.layout.grads:
            raise TrainStepError("the step was compiled without keep_grads=True")
        return dict(self._grads)

    def parameters(self) -> dict[str, torch.Tensor]:
        """The current parameters and buffers by name (a tied weight once)."""
        self._fetch()
        return {name: torch.from_numpy(value.copy()) for name, value in self._values.items()}

    def _torch_indices(self) -> dict[str, int]:
        """Trainable name -> its index in ``optimizer.state_dict()`` (torch numbers the
        parameters of all groups in order)."""
        by_id, start = {}, 0
        for group in self.optimizer.param_groups:
            for i, p in enumerate(group["params"], start):
                by_id.setdefault(id(p), i)
            start += len(group["params"])
        named = dict(self.model.named_parameters())
        return {name: by_id[id(named[name])] for name in self.layout.trainable}

    def optimizer_state_dict(self) -> dict[str, Any]:
        """The optimizer's state in ``optimizer.state_dict()`` format, loadable by
        ``optimizer.load_state_dict`` (the current ``param_groups`` included)."""
        self._fetch()
        indices = self._torch_indices()
        state = {}
        for g, group in enumerate(self.layout.groups):
            for i in group:
                name = self.layout.trainable[i]
                if name in self.imported.unused:
                    continue
                slots = {slot: torch.from_numpy(self._slots[slot][i].copy())
                         for slot in self.layout.slots}
                entry = self.rule.torch_state(slots, self._steps[g])
                if entry:
                    state[indices[name]] = entry
        return {"state": state, "param_groups": self.optimizer.state_dict()["param_groups"]}

    def _read_optimizer_state(self, saved: dict[str, Any]) -> None:
        self._fetch()
        self._on_device = False  # the next call writes the state again
        indices = self._torch_indices()
        entries = saved.get("state", {})
        for g, group in enumerate(self.layout.groups):
            counts = set()
            for i in group:
                name = self.layout.trainable[i]
                slots, steps = self.rule.read_state(entries.get(indices[name], {}))
                for slot in self.layout.slots:
                    value = slots.get(slot)
                    self._slots[slot][i] = (_zeros(self._values[name]) if value is None
                                            else _array(value).reshape(self._values[name].shape))
                counts.add(1 if steps is None else steps)
            if len(counts) > 1:
                raise TrainStepError(f"parameter group {g}: its parameters have taken different "
                                     f"numbers of steps {sorted(counts)}; the compiled step keeps "
                                     "one count per group")
            self._steps[g] = counts.pop() if counts else 0

    def state_dict(self) -> dict[str, Any]:
        """``{"model": {name: tensor}, "optimizer": <optimizer.state_dict() format>,
        "random": {"seed": int, "calls": int}}`` (the random stream's position)."""
        return {"model": self.parameters(), "optimizer": self.optimizer_state_dict(),
                "random": {"seed": self.seed, "calls": self.calls}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` returned (the optimizer's
        hyperparameters too, as ``optimizer.load_state_dict`` does)."""
        self._fetch()
        self._on_device = False  # the next call writes the state again
        values = state.get("model", {})
        unknown = sorted(set(values) - set(self._values))
        if unknown:
            raise TrainStepError(f"state_dict names tensors the step does not hold: {unknown}")
        for name, value in values.items():
            array = _array(value)
            if array.shape != self._values[name].shape or array.dtype != self._values[name].dtype:
                raise TrainStepError(
                    f"{name}: expected {self._values[name].dtype} {list(self._values[name].shape)}"
                    f", got {array.dtype} {list(array.shape)}")
            self._values[name] = array
        if "optimizer" in state:
            saved = state["optimizer"]
            for group, saved_group in zip(self.optimizer.param_groups, saved["param_groups"]):
                group.update({k: v for k, v in saved_group.items() if k != "params"})
            self._read_optimizer_state(saved)
        if "random" in state:
            self.seed, self.calls = int(state["random"]["seed"]), int(state["random"]["calls"])

    def sync_to(self, model: torch.nn.Module | None = None,
                optimizer: torch.optim.Optimizer | None = None) -> None:
        """Writes the parameters into ``model`` (the compiled one by default) and,
        given an ``optimizer``, loads the optimizer state into it."""
        model = self.model if model is None else model
        self._fetch()
        state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        with torch.no_grad():
            for name, value in self._values.items():
                if name not in state:
                    raise TrainStepError(f"the model has no parameter or buffer {name!r}")
                state[name].copy_(torch.from_numpy(value))
        if optimizer is not None:
            optimizer.load_state_dict(self.optimizer_state_dict())

    # Reports and saving (nova.training.step_report, .memory, .saved) -----------------------
    @property
    def stats(self):
        """The last call's :class:`~nova.training.step_report.StepStats`: simulated
        time, FLOPs, MFU/HFU and the per-chip memory breakdown (``.summary()``)."""
        from nova.training.step_report import step_stats

        return step_stats(self)

    def memory(self):
        """Where the step's HBM goes (:class:`~nova.training.memory.MemoryBreakdown`)."""
        return step_memory(self)

    def save(self, path: str | Path) -> None:
        """Writes the program, its layout and the current parameters, optimizer
        state and step counts to one file; ``nova.load(path)`` continues training."""
        from nova.training.saved import save_train_step

        save_train_step(self, path)


def _zeros(like: np.ndarray) -> np.ndarray:
    return np.zeros(like.shape, like.dtype)


def _array(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.dtype == torch.bfloat16:
            raise TrainStepError("bfloat16 tensors are not supported in training yet")
        value = value.numpy()
    # A copy: a parameter's array would share the torch tensor's memory.
    return np.array(value, order="C")
