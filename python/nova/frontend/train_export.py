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
5. the batch's tensors;
6. the step's random seed, a 0-d int64, when the traced step draws random
   numbers (dropout in training mode: ``StepLayout.seed``, see
   :mod:`nova.frontend.dropout`; each dropout call takes the next counters of
   the stream of that seed);
7. ``one``, a 0-d float32 holding 1, when a block is recomputed in the backward
   (``StepLayout.one``; the recomputation reads its inputs through ``x * one``
   so that no pass merges it with the forward, see :mod:`nova.frontend.recompute`);
8. the tensor constants the trace captured (``ImportedTrainStep.constants``).

Its results: the loss (0-d), the updated trainable parameters, the updated
optimizer state (same order as the arguments), the gradients the update used
when asked (``StepLayout.grads``), and the gradients' global norm (before
clipping) when clipping.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from nova.compiler.stage_times import timed
from nova.frontend.activations import traced_as_functions
from nova.frontend.decompositions import decomposition_table
from nova.frontend.dropout import RandomStream, random_stream
from nova.frontend.errors import NovaExportError
from nova.frontend.export import import_fx_graph
from nova.frontend.recompute import Recompute, recomputation
from nova.frontend.trace_locations import (backward_locations, fast_stack_traces, located_loss,
                                           tag_backward, traced_at)

#: ``update(params, grads, slots, hypers, scale) -> (new_params, new_slots)``:
#: one parameter group's update as tensor ops. ``slots[s][i]`` is slot ``s`` of
#: the group's parameter ``i``; ``hypers`` maps the rule's names to 0-d tensors;
#: ``scale`` is the clip's 0-d factor of the gradients, or None.
UpdateFn = Callable[[list[torch.Tensor], list[torch.Tensor], list[list[torch.Tensor]],
                     dict[str, torch.Tensor], torch.Tensor | None],
                    tuple[list[torch.Tensor], list[list[torch.Tensor]]]]


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
    #: Number of tensors in the batch; of the positional ones (all but the
    #: last ``len(keywords)``) the first ``model_inputs`` go to the model, the
    #: others to the loss function after the model's output.
    batch: int
    model_inputs: int = 1
    #: Names of the batch's last tensors, passed to the model as keywords
    #: (Hugging Face's ``input_ids=..., labels=...``).
    keywords: tuple[str, ...] = ()
    clip: bool = False
    #: The batch is split into this many micro-batches along dim 0.
    accumulation_steps: int = 1
    #: The gradients the optimizer used (accumulated, clipped) are results too.
    grads: bool = False
    #: A 0-d int64 seed follows the batch: the step draws random numbers (dropout).
    seed: bool = False
    #: Mixed precision: the forward and the loss are traced under
    #: ``torch.autocast("cpu", dtype=autocast)`` (``"bfloat16"`` / ``"float16"``);
    #: parameters, gradients and the optimizer state stay float32.
    autocast: str | None = None
    #: Submodules whose forward is recomputed in the backward (activation
    #: checkpointing, :mod:`nova.frontend.recompute`), besides the model's own
    #: ``checkpoint`` calls.
    recompute: tuple[str, ...] = ()
    #: A 0-d float32 ``one`` (holding 1) follows the seed: the step recomputes.
    one: bool = False

    def __post_init__(self) -> None:
        if self.accumulation_steps < 1:
            raise ValueError(f"accumulation_steps must be >= 1, got {self.accumulation_steps}")
        positional = self.batch - len(self.keywords)
        if not 0 <= self.model_inputs <= positional:
            raise ValueError(f"model_inputs must be in [0, {positional}], got {self.model_inputs}")
        grouped = sorted(i for group in self.groups for i in group)
        if grouped != list(range(len(self.trainable))):
            raise ValueError("every trainable parameter must be in exactly one group")

    @property
    def input_names(self) -> tuple[str, ...]:
        slots = tuple(f"{slot}:{name}" for slot in self.slots for name in self.trainable)
        hypers = tuple(f"group{g}.{h}" for g in range(len(self.groups)) for h in self.hypers)
        clip = ("max_grad_norm",) if self.clip else ()
        positional = self.batch - len(self.keywords)
        batch = tuple(f"batch{i}" for i in range(positional)) + self.keywords
        return (self.trainable + self.constant + slots + hypers + clip + batch
                + (("seed",) if self.seed else ()) + (("one",) if self.one else ()))

    @property
    def output_names(self) -> tuple[str, ...]:
        slots = tuple(f"{slot}:{name}" for slot in self.slots for name in self.trainable)
        grads = tuple(f"grad:{name}" for name in self.trainable) if self.grads else ()
        return ("loss",) + self.trainable + slots + grads + (("grad_norm",) if self.clip else ())


@dataclass(frozen=True)
class ImportedTrainStep:
    """linalg-on-tensors text of one training step and its layout."""

    mlir: str
    layout: StepLayout
    ops: frozenset[str]
    #: Trainable parameters the loss does not depend on (no gradient): the
    #: step leaves them and their state unchanged, as torch's optimizers do.
    unused: tuple[str, ...] = ()
    #: Values of the tensor constants the trace captured, the program's last
    #: arguments (after the batch).
    constants: tuple[torch.Tensor, ...] = ()


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
        stream = RandomStream(take(1)[0]) if layout.seed else None
        recompute = Recompute(take(1)[0]) if layout.one else None

        state = dict(zip(layout.trainable, params))
        state.update(zip(layout.constant, constants))
        k = layout.accumulation_steps
        micro_batches = (list(zip(*(t.chunk(k, dim=0) for t in batch))) if k > 1 and batch
                         else [tuple(batch)])
        # The traced tensors stand in for the module's parameters through the
        # backward too: a checkpointed block recomputes its forward there.
        with torch.nn.utils.stateless._reparametrize_module(
                model, tied_state(model, state), tie_weights=False), \
                recomputation(model, layout.recompute, recompute):
            with random_stream(stream), _autocast(layout.autocast):
                losses = [_loss(model, loss_fn, micro, layout) for micro in micro_batches]
            # The loss (and so every gradient of the master weights) in float32,
            # as autocast's loss.float() would.
            losses = [l.float() for l in losses]
            loss = losses[0] if k == 1 else sum(losses[1:], losses[0]) / k
            tag_backward([loss])
            grads = list(torch.autograd.grad(loss, params, allow_unused=True))
        if unused is not None:
            unused.extend(name for name, g in zip(layout.trainable, grads) if g is None)
        params = [p.detach() for p in params]
        grad_norm = scale = None
        if layout.clip:
            with traced_at(clip_grad_norm):
                scale, grad_norm = clip_grad_norm(grads, max_norm)

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
            with traced_at(update):
                updated, updated_slots = update(
                    [params[i] for i in used], [grads[i] for i in used],
                    [[new_slots[s][i] for i in used] for s in range(len(layout.slots))], hypers,
                    scale)
            for j, i in enumerate(used):
                new_params[i] = updated[j]
                for s in range(len(layout.slots)):
                    new_slots[s][i] = updated_slots[s][j]
        results = [loss.detach()] + new_params + [t for slot in new_slots for t in slot]
        if layout.grads:
            results += [torch.zeros_like(p) if g is None else
                        (g if scale is None else g * scale).detach()
                        for g, p in zip(grads, params)]
        if grad_norm is not None:
            results.append(grad_norm.detach())
        return tuple(results)

    return step


def clip_grad_norm(grads: list[torch.Tensor | None], max_norm: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.nn.utils.clip_grad_norm_'s factor and norm: the 2-norm of all
    gradients together, and the 0-d factor that scales them down (never up)
    to ``max_norm``. The update rule applies the factor (UpdateRule.update)."""
    squares = [(g * g).sum() for g in grads if g is not None]
    if not squares:
        raise ValueError("max_grad_norm: no parameter has a gradient")
    grad_norm = torch.sqrt(sum(squares[1:], squares[0]))
    scale = torch.clamp(max_norm / (grad_norm + 1e-6), max=1.0)
    return scale, grad_norm


def tied_state(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``state`` (one name per tensor) extended to every other name of a tied
    tensor, one name per (module, attribute).

    torch's ``tie_weights=True`` swaps every alias name in turn; when one module
    is reachable under several names (T5's ``shared`` is also
    ``encoder.embed_tokens`` and ``decoder.embed_tokens``) the second swap of
    the same attribute records the traced tensor as the "original", and the
    model is left holding it after the trace."""
    by_tensor: dict[int, str] = {}
    named = [*model.named_parameters(remove_duplicate=False),
             *model.named_buffers(remove_duplicate=False)]
    for name, tensor in named:
        if name in state:
            by_tensor.setdefault(id(tensor), name)
    modules = dict(model.named_modules(remove_duplicate=False))
    seen: set[tuple[int, str]] = set()
    out: dict[str, torch.Tensor] = {}
    for name, tensor in named:
        owner, _, attr = name.rpartition(".")
        key = (id(modules[owner]), attr)
        source = name if name in state else by_tensor.get(id(tensor))
        if key in seen or source is None:
            continue
        seen.add(key)
        out[name] = state[source]
    return out


def _autocast(dtype: str | None):
    """``torch.autocast`` on the CPU at ``dtype``, or nothing."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast("cpu", dtype=getattr(torch, dtype))


def _loss(model: torch.nn.Module, loss_fn: Callable[..., torch.Tensor] | None,
          batch: Sequence[torch.Tensor], layout: StepLayout) -> torch.Tensor:
    """The loss of ``batch``; the model's state is the traced one (see step())."""
    positional = len(batch) - len(layout.keywords)
    args, targets = batch[:layout.model_inputs], batch[layout.model_inputs:positional]
    kwargs = dict(zip(layout.keywords, batch[positional:]))
    output = model(*args, **kwargs)
    if loss_fn is not None:
        loss = located_loss(loss_fn)(output, *targets)
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
    program's arguments, see the module docstring) and imports it.

    The step is traced with a seed and a ``one`` input anyway; the returned
    layout keeps each only when the trace used it (it drew random numbers, it
    recomputed a block), so a step without dropout or recomputation has the
    same arguments as before."""

    if len(example_args) != len(layout.input_names):
        raise ValueError(f"the step takes {len(layout.input_names)} arguments, "
                         f"got {len(example_args)}")
    unused: list[str] = []
    traced_layout = dataclasses.replace(layout, seed=True, one=True)
    seed_index = traced_layout.input_names.index("seed")
    one_index = traced_layout.input_names.index("one")
    fn = step_function(model, loss_fn, traced_layout, update, unused)
    args = [_plain(a) for a in example_args]
    if not layout.seed:
        args.insert(seed_index, torch.zeros((), dtype=torch.int64))
    if not layout.one:
        args.insert(one_index, torch.ones((), dtype=torch.float32))
    with timed("trace the step (make_fx)"), traced_as_functions(model):
        module = trace_functional(fn, args)
    with timed("graph rewrites (idioms, constants)"):
        # Values nothing reads (a layer-drop draw a comparison decided at trace
        # time) must not keep the seed an input.
        module.graph.eliminate_dead_code()
        module.recompile()
        # The seed and ``one`` stay inputs only if the trace used them (dropout,
        # recomputation); the later one is dropped first.
        keep_one = layout.one or not _drop_unused_placeholder(module, one_index)
        keep_seed = layout.seed or not _drop_unused_placeholder(module, seed_index)
        layout = dataclasses.replace(layout, seed=keep_seed, one=keep_one)
        constants = lift_constants(module)
        _idioms(module)
        _widen_constants(module, constants)
        constants = _fold_empty_constants(module, constants)
        _complex_as_pairs(module, constants)
    with timed("import to linalg (torch-mlir)"):
        mlir, ops = import_fx_graph(module.graph, func_name="forward",
                                    donated=donated_arguments(layout))
    return ImportedTrainStep(mlir=mlir, layout=layout, ops=ops,
                             unused=tuple(dict.fromkeys(unused)), constants=tuple(constants))


def donated_arguments(layout: StepLayout) -> dict[int, int]:
    """Argument index -> result index: each trainable parameter and each
    optimizer state tensor is donated to its updated value, so the compiled
    update writes it in place in its resident HBM buffer."""
    n_train, n_const = len(layout.trainable), len(layout.constant)
    donated = {i: 1 + i for i in range(n_train)}
    for s in range(len(layout.slots)):
        for i in range(n_train):
            k = s * n_train + i
            donated[n_train + n_const + k] = 1 + n_train + k
    return donated


def _drop_unused_placeholder(module: torch.fx.GraphModule, index: int) -> bool:
    """Removes the ``index``-th placeholder if nothing uses it; whether it did."""
    node = [n for n in module.graph.nodes if n.op == "placeholder"][index]
    if node.users:
        return False
    module.graph.erase_node(node)
    module.recompile()
    return True


def _idioms(module: torch.fx.GraphModule) -> None:
    """Every compile path's rewrites of real-code idioms (:mod:`nova.frontend.idioms`)
    on the step's graph (forward, backward and update), and uint8 / int16
    carried in int32 (:mod:`nova.frontend.narrow_ints`)."""
    from nova.frontend.idioms import rewrite_idioms
    from nova.frontend.narrow_ints import widen_narrow_ints

    rewrite_idioms(module.graph)
    widen_narrow_ints(module.graph)
    module.recompile()


def _widen_constants(module: torch.fx.GraphModule, constants: list[torch.Tensor]) -> None:
    """Lifted uint8 / int16 constants as the int32 their placeholders now take."""
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    first = len(placeholders) - len(constants)
    for k, value in enumerate(constants):
        if value.dtype in (torch.uint8, torch.int16) and \
                placeholders[first + k].meta["val"].dtype == torch.int32:
            constants[k] = value.to(torch.int32)


def _complex_as_pairs(module: torch.fx.GraphModule, constants: list[torch.Tensor]) -> None:
    """Complex tensors as pairs of real ones (:mod:`nova.frontend.complex_pairs`):
    a complex constant (Llama's ``freqs_cis``) becomes its ``view_as_real``.
    Complex parameters and batch tensors are refused (their gradients and
    optimizer state would be complex)."""
    from nova.compiler.errors import NovaUnsupportedOpError
    from nova.frontend.complex_pairs import lower_complex

    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    first_constant = len(placeholders) - len(constants)
    for node in lower_complex(module.graph):
        index = placeholders.index(node)
        if index < first_constant:
            raise NovaUnsupportedOpError(
                f"a complex step argument ({node.target}): training steps take real "
                f"parameters and batches (complex values inside the model are fine)", None)
        value = constants[index - first_constant]
        constants[index - first_constant] = torch.view_as_real(value.resolve_conj()).contiguous()
    module.recompile()


def lift_constants(module: torch.fx.GraphModule) -> list[torch.Tensor]:
    """Turns the tensor constants the trace captured (``get_attr`` nodes: a
    mask built from Python data, say) into arguments after the others, as
    :mod:`nova.frontend.export` lifts a model's constants; returns their
    values. torch-mlir cannot lower some as literals (an ``i1`` tensor)."""
    graph = module.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    values = []
    for node in list(graph.nodes):
        if node.op != "get_attr":
            continue
        value = getattr(module, node.target)
        if not isinstance(value, torch.Tensor):
            continue
        if isinstance(value, torch.nn.Parameter) or value.requires_grad:
            # Never a silent constant: it would get no gradient and no update.
            from nova.frontend.export import frame_of_node

            frame = next((f for f in map(frame_of_node, node.users) if f is not None), None)
            raise NovaExportError(
                f"the training step read a parameter of shape {list(value.shape)} that is not "
                "the traced model's (a parameter reached by another route than the model's "
                "attributes): it would be a constant of the step, with no gradient"
                + (f"\n{frame}" if frame is not None else ""))
        anchor = placeholders[-1] if placeholders else next(iter(graph.nodes))
        with graph.inserting_after(anchor):
            lifted = graph.placeholder(f"lifted_{node.target}")
        lifted.meta.update(node.meta)
        if "val" not in lifted.meta:
            from torch._subclasses.fake_tensor import FakeTensorMode
            lifted.meta["val"] = FakeTensorMode().from_tensor(value)
        node.replace_all_uses_with(lifted)
        graph.erase_node(node)
        placeholders.append(lifted)
        values.append(value.detach().clone())
    graph.lint()
    module.recompile()
    return values


def _fold_empty_constants(module: torch.fx.GraphModule,
                          constants: list[torch.Tensor]) -> list[torch.Tensor]:
    """Folds the zero-size tensors out of the step (:mod:`nova.frontend.zero_size`):
    a Hugging Face KV cache starts as ``torch.tensor([])`` and grows by ``cat``
    in the forward even when nothing reads it after. Empty constants are
    dropped from the program's arguments; returns the constants kept. The other
    arguments are the layout's, so an empty one of those stays (and is refused
    later with its name)."""
    from nova.frontend.zero_size import drop_zero_size, fold_zero_size, is_empty

    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    fixed = placeholders[:len(placeholders) - len(constants)]
    if any(is_empty(n.meta.get("val")) for n in fixed):
        return constants
    if not fold_zero_size(module.graph):
        return constants
    drop_zero_size(module.graph)
    module.recompile()
    kept = {n for n in module.graph.nodes if n.op == "placeholder"}
    lifted = placeholders[len(fixed):]
    return [value for node, value in zip(lifted, constants) if node in kept]


def trace_functional(fn: Callable, args: Sequence[torch.Tensor]) -> torch.fx.GraphModule:
    """``fn`` (a joint forward + backward) traced with Nova's decompositions
    into a graph with no in-place ops, as torch-mlir's import needs."""
    from torch.fx.experimental.proxy_tensor import make_fx

    table = decomposition_table()
    # As torch.export's non-strict tracing does: torch.compiler.is_compiling()
    # is True during the trace, so models take their traceable paths (Hugging
    # Face skips its data-dependent checks: "pad token in input_ids", "is the
    # mask all ones"), which fake tensors cannot answer.
    from torch._export.utils import _compiling_state_context
    # A lazy GraphModule generates its Python code only when something reads
    # or calls it. Nothing does: the rewrites and torch-mlir's import walk the
    # graph, and regenerating the code of a GPT-2 step's 8,000 nodes after each
    # rewrite (make_fx's own, then recompile() after each) took 0.27 s a time.
    from torch.fx._lazy_graph_module import _use_lazy_graph_module

    with _compiling_state_context(), _use_lazy_graph_module(True), fast_stack_traces():
        return _trace(fn, args, table)


#: make_fx in fake mode; a model's plain tensor attributes (a mask kept as an
#: attribute, not a buffer) are captured as constants (``get_attr``), which
#: :func:`lift_constants` makes arguments.
_FAKE = dict(tracing_mode="fake", _allow_non_fake_inputs=True)


def _trace(fn: Callable, args: Sequence[torch.Tensor], table: dict) -> torch.fx.GraphModule:
    import torch.fx.traceback as fx_traceback
    from torch.fx.experimental.proxy_tensor import make_fx

    # Stack traces give the forward's ops their model lines (report.profile),
    # and the backward's ops their forward op's (nova.frontend.trace_locations).
    with fx_traceback.preserve_node_meta():
        module = make_fx(fn, decomposition_table=table, **_FAKE,
                         record_stack_traces=True)(*args)
    backward_locations(module.graph)
    if _mutates(module.graph):
        # Hugging Face models write into index tensors. autograd inside
        # torch.func.functionalize is not supported, and prims ops (from the
        # table) cannot be functionalized: the joint graph is traced in ATen
        # ops, then again functionalized and decomposed.
        # The interpreter hands each op's stack trace to the second trace.
        with fx_traceback.preserve_node_meta():
            joint = make_fx(fn, **_FAKE, record_stack_traces=True)(*args)
            backward_locations(joint.graph)
            module = make_fx(torch.func.functionalize(torch.fx.Interpreter(joint).run,
                                                      remove="mutations"),
                             decomposition_table=table, **_FAKE,
                             record_stack_traces=True)(*args)
    return module


def _mutates(graph: torch.fx.Graph) -> bool:
    """Whether ``graph`` holds an op that writes into one of its operands."""
    for node in graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op == "call_function" and schema is not None and schema.is_mutable:
            return True
    return False


def _plain(value: Any) -> torch.Tensor:
    """A detached tensor (an ``nn.Parameter`` would keep its autograd identity)."""
    return value.detach() if isinstance(value, torch.Tensor) else torch.as_tensor(value)
