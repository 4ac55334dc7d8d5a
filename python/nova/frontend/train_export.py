"""One training step — forward, loss, backward, gradient clipping and the
optimizer's update — traced as one graph and imported into linalg-on-tensors.

The route (DESIGN.md, "Training, torch.compile and coverage"): ``make_fx``
over a plain function of flat tensors that calls the model through
``torch.func.functional_call``, takes ``torch.autograd.grad`` of the loss
and applies the update as plain tensor ops, traced in fake mode (the model
does not run on the host) with Nova's decomposition table; then torch-mlir's
stateless import, lowered after import so that source locations survive
(:func:`nova.frontend.export.import_fx_graph`). ``torch.func.grad_and_value``
inside ``torch.export`` fails (Dynamo cannot fake functorch tensors).

The program's arguments, in order (:class:`StepLayout` names them):

1. the trainable parameters (``named_parameters()`` order, a tied weight once);
2. the other state: frozen parameters, then buffers;
3. the optimizer's state, slot by slot (every trainable parameter's
   ``exp_avg``, then every ``exp_avg_sq``...);
4. the hyperparameters, 0-d float32, group by group (``lr``, ``beta1``...),
   then ``max_grad_norm`` when clipping;
5. the batch's tensors.

Its results: the loss (0-d), the updated trainable parameters, the updated
optimizer state (same order as the arguments), and the gradients' global norm
(before clipping) when clipping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from nova.frontend.decompositions import decomposition_table
from nova.frontend.export import import_fx_graph

#: ``update(params, grads, slots, hypers) -> (new_params, new_slots)``: one
#: parameter group's update as tensor ops. ``slots[s][i]`` is slot ``s`` of
#: the group's parameter ``i``; ``hypers`` maps the rule's names to 0-d tensors.
UpdateFn = Callable[[list[torch.Tensor], list[torch.Tensor], list[list[torch.Tensor]],
                     dict[str, torch.Tensor]], tuple[list[torch.Tensor], list[list[torch.Tensor]]]]


@dataclass(frozen=True)
class StepLayout:
    """What the step program's arguments and results are (see the module docstring)."""

    #: Names of the trainable parameters (updated by the step).
    trainable: tuple[str, ...]
    #: Names of the frozen parameters and of the buffers (read only).
    constant: tuple[str, ...]
    #: Each group's trainable parameters, as indices into ``trainable``.
    groups: tuple[tuple[int, ...], ...]
    #: The optimizer's per-parameter state slots (``("exp_avg", "exp_avg_sq")``).
    slots: tuple[str, ...]
    #: The names of each group's hyperparameter inputs.
    hypers: tuple[str, ...]
    #: Number of tensors in the batch; the first ``model_inputs`` go to the
    #: model, the others to the loss function after the model's output.
    batch: int
    model_inputs: int = 1
    clip: bool = False
    #: The batch is split into this many micro-batches along dim 0.
    accumulation_steps: int = 1

    def __post_init__(self) -> None:
        if self.accumulation_steps < 1:
            raise ValueError(f"accumulation_steps must be >= 1, got {self.accumulation_steps}")
        if not 0 <= self.model_inputs <= self.batch:
            raise ValueError(f"model_inputs must be in [0, {self.batch}], got {self.model_inputs}")
        grouped = sorted(i for group in self.groups for i in group)
        if grouped != list(range(len(self.trainable))):
            raise ValueError("every trainable parameter must be in exactly one group")

    @property
    def input_names(self) -> tuple[str, ...]:
        slots = tuple(f"{slot}:{name}" for slot in self.slots for name in self.trainable)
        hypers = tuple(f"group{g}.{h}" for g in range(len(self.groups)) for h in self.hypers)
        clip = ("max_grad_norm",) if self.clip else ()
        batch = tuple(f"batch{i}" for i in range(self.batch))
        return self.trainable + self.constant + slots + hypers + clip + batch

    @property
    def output_names(self) -> tuple[str, ...]:
        slots = tuple(f"{slot}:{name}" for slot in self.slots for name in self.trainable)
        return ("loss",) + self.trainable + slots + (("grad_norm",) if self.clip else ())


@dataclass(frozen=True)
class ImportedTrainStep:
    """linalg-on-tensors text of one training step and its layout."""

    mlir: str
    layout: StepLayout
    ops: frozenset[str]
    #: Trainable parameters the loss does not depend on (no gradient): the
    #: step leaves them and their state unchanged, as torch's optimizers do.
    unused: tuple[str, ...] = ()


def step_function(model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor] | None,
                  layout: StepLayout, update: UpdateFn,
                  unused: list[str] | None = None) -> Callable[..., tuple[torch.Tensor, ...]]:
    """The training step as a function of the program's flat arguments.

    ``loss_fn(output, *targets)`` gives the loss; with ``loss_fn=None`` the
    model's output is the loss (or carries it as ``.loss``, as Hugging Face
    models given ``labels`` do). With accumulation the loss is the mean of the
    micro-batches' losses and the gradients are those of that mean, as
    ``(loss / k).backward()`` per micro-batch accumulates them in torch.
    Names of parameters without a gradient are appended to ``unused``.
    """
    n_train, n_const = len(layout.trainable), len(layout.constant)
    n_slot_args = len(layout.slots) * n_train
    n_hyper = len(layout.hypers) * len(layout.groups)

    def step(*flat: torch.Tensor) -> tuple[torch.Tensor, ...]:
        position = 0

        def take(n: int) -> list[torch.Tensor]:
            nonlocal position
            taken = list(flat[position:position + n])
            position += n
            return taken

        params = [p.requires_grad_(True) for p in take(n_train)]
        constants = take(n_const)
        slot_values = take(n_slot_args)
        hyper_values = take(n_hyper)
        max_norm = take(1)[0] if layout.clip else None
        batch = take(layout.batch)

        state = dict(zip(layout.trainable, params))
        state.update(zip(layout.constant, constants))
        k = layout.accumulation_steps
        micro_batches = (list(zip(*(t.chunk(k, dim=0) for t in batch))) if k > 1 and batch
                         else [tuple(batch)])
        losses = [_loss(model, loss_fn, state, micro, layout.model_inputs)
                  for micro in micro_batches]
        loss = losses[0] if k == 1 else sum(losses[1:], losses[0]) / k
        grads = list(torch.autograd.grad(loss, params, allow_unused=True))
        if unused is not None:
            unused.extend(name for name, g in zip(layout.trainable, grads) if g is None)
        params = [p.detach() for p in params]
        grad_norm = None
        if layout.clip:
            # torch.nn.utils.clip_grad_norm_: the 2-norm of all gradients
            # together, scaled down (never up) to max_norm.
            squares = [(g * g).sum() for g in grads if g is not None]
            grad_norm = torch.sqrt(sum(squares[1:], squares[0]))
            scale = torch.clamp(max_norm / (grad_norm + 1e-6), max=1.0)
            grads = [g * scale if g is not None else None for g in grads]

        new_params = list(params)
        new_slots = [list(slot_values[s * n_train:(s + 1) * n_train])
                     for s in range(len(layout.slots))]
        for g_index, group in enumerate(layout.groups):
            used = [i for i in group if grads[i] is not None]
            if not used:
                continue
            hypers = dict(zip(layout.hypers,
                              hyper_values[g_index * len(layout.hypers):
                                           (g_index + 1) * len(layout.hypers)]))
            updated, updated_slots = update(
                [params[i] for i in used], [grads[i] for i in used],
                [[new_slots[s][i] for i in used] for s in range(len(layout.slots))], hypers)
            for j, i in enumerate(used):
                new_params[i] = updated[j]
                for s in range(len(layout.slots)):
                    new_slots[s][i] = updated_slots[s][j]
        results = [loss.detach()] + new_params + [t for slot in new_slots for t in slot]
        if grad_norm is not None:
            results.append(grad_norm.detach())
        return tuple(results)

    return step


def _loss(model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor] | None,
          state: dict[str, torch.Tensor], batch: Sequence[torch.Tensor],
          model_inputs: int) -> torch.Tensor:
    output = torch.func.functional_call(model, state, tuple(batch[:model_inputs]))
    if loss_fn is not None:
        loss = loss_fn(output, *batch[model_inputs:])
    else:
        loss = getattr(output, "loss", output)
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        raise ValueError("the loss must be a 0-d tensor (a scalar), got "
                         f"{type(loss).__name__}{'' if not isinstance(loss, torch.Tensor) else list(loss.shape)}")
    return loss


def import_train_step(model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor] | None,
                      layout: StepLayout, update: UpdateFn,
                      example_args: Sequence[torch.Tensor]) -> ImportedTrainStep:
    """Traces the step (:func:`step_function`) at ``example_args`` (the
    program's arguments, see the module docstring) and imports it."""
    from torch.fx.experimental.proxy_tensor import make_fx

    if len(example_args) != len(layout.input_names):
        raise ValueError(f"the step takes {len(layout.input_names)} arguments, "
                         f"got {len(example_args)}")
    unused: list[str] = []
    fn = step_function(model, loss_fn, layout, update, unused)
    graph = make_fx(fn, decomposition_table=decomposition_table(),
                    tracing_mode="fake")(*[_plain(a) for a in example_args]).graph
    mlir, ops = import_fx_graph(graph, func_name="forward")
    return ImportedTrainStep(mlir=mlir, layout=layout, ops=ops, unused=tuple(unused))


def _plain(value: Any) -> torch.Tensor:
    """A detached tensor (an ``nn.Parameter`` would keep its autograd identity)."""
    return value.detach() if isinstance(value, torch.Tensor) else torch.as_tensor(value)
