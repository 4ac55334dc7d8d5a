"""The per-stage bodies of a pipeline training step, traced and imported one
by one (:mod:`nova.parallel.pipeline_train`).

For stage ``s`` of ``p`` with trainable parameters ``P``, read-only state
``C`` (frozen parameters, buffers) and input ``x`` (the batch's model input
for stage 0, the previous stage's activation otherwise):

* ``F``: ``(P, C, x) -> y``; on the last stage ``(P, C, x, labels) -> loss``.
* ``B``: ``(P, C, x, dy) -> (dx, g...)``; on the last stage
  ``(P, C, x, labels) -> (dx, g..., loss)`` of ``loss / m``. Stage 0 returns no
  ``dx`` (its input is the batch). The backward recomputes the stage's
  forward from ``x`` (activation recomputation per stage: only the stage's
  input is kept between F and B), so F and B are independent bodies.
  ``B_acc`` takes the gradients accumulated so far after the others and
  returns ``gacc + g`` instead of ``g``.
* ``U``: ``(P, gacc, slots, hypers) -> (P', slots')``, the optimizer's update,
  with ``P`` and the slots donated to their new values (written in place).
* ``Bx`` and ``G`` (saved activations, ``defer``: the weights' gradients once
  per step, :mod:`nova.parallel.pipeline_wgrad`): ``Bx`` is B without what
  only the weights' gradients need, returning ``dx`` and the values those
  read; ``G`` computes every weight's gradient from all the micro-batches'
  values at once. They replace ``B`` and ``B_acc``.
* ``W`` (saved activations under ``autocast`` only): ``(P) -> (copies...)``,
  the bf16 / f16 copies of the weights autocast casts (and views of them),
  made once per step; F then takes them after its own arguments and no
  longer casts (:func:`_hoist_weight_casts`).

Each body is traced with ``make_fx`` in fake mode with Nova's decomposition
table, as the one-chip step is (:mod:`nova.frontend.train_export`). With
``autocast`` (``torch.bfloat16`` / ``torch.float16``) the stage's forward and
its loss are traced under ``torch.autocast("cpu", dtype=autocast)``, as the
one-chip step's are: the parameters, their gradients and the loss stay
float32 (mixed precision).
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import nn

from nova.frontend.decompositions import decomposition_table
from nova.frontend.export import import_fx_graph
from nova.frontend.train_export import lift_constants, trace_functional
from nova.parallel.errors import PipelineError
from nova.parallel.pipeline_wgrad import (ancestors, index_derived, split_backward, step_kinds,
                                          sums_match)


@dataclass(frozen=True)
class Body:
    """One traced body: linalg text, its lifted constants' values. A ``W``
    body (:func:`saved_bodies`) also says where B's saved tensors come from
    (``saved``: per saved tensor the index of ``W``'s result, or -1 for F's
    next saved result) and how to trace F without it (``unhoisted``: the
    F body that casts for itself)."""

    name: str
    mlir: str
    constants: tuple[torch.Tensor, ...]
    saved: tuple[int, ...] = ()
    unhoisted: Callable[[], "Body"] | None = None
    #: ``G`` (:func:`saved_bodies`' ``defer``): per argument where it comes
    #: from, ``(kind, j, dim)`` (:data:`nova.parallel.pipeline_wgrad.KINDS`;
    #: the micro-batches' values concatenated along ``dim``), and ``B`` / ``B_acc``
    #: instead; on ``F``, why the weights' gradients are not deferred.
    #: On ``Bx``, ``saved`` is the saved tensors it reads (indices).
    sources: tuple[tuple[str, int, int | None], ...] = ()
    fallback: Callable[[], dict] | None = None
    deferral: str = ""


@dataclass(frozen=True)
class StageState:
    """A stage's parameters by role (names are the stage module's own)."""

    trainable: tuple[str, ...]
    constant: tuple[str, ...]


def _trace(fn: Callable, args: Sequence[torch.Tensor], name: str,
           donated: dict[int, int] | None = None) -> Body:
    module = trace_functional(fn, [a.detach() for a in args])
    _refuse_random(module.graph, name)
    constants = lift_constants(module)
    mlir, _ = import_fx_graph(module.graph, func_name="forward", donated=donated)
    return Body(name, mlir, tuple(constants))


def _refuse_random(graph: torch.fx.Graph, name: str) -> None:
    """A body drawing random numbers (dropout in training mode) is an error:
    the bodies have no random stream yet (the one-chip step's seed), and
    the op would otherwise fail deep in nova-opt."""
    from nova.frontend.export import frame_of_node

    for node in graph.nodes:
        tags = getattr(node.target, "tags", ())
        if node.op == "call_function" and torch.Tag.nondeterministic_seeded in tags:
            frame = frame_of_node(node)
            raise PipelineError(
                f"{name}: {node.target} (dropout in training mode) is not supported in a "
                f"pipeline yet: set the model's dropout probabilities to 0 or call "
                f"model.eval()" + (f"\n{frame}" if frame is not None else ""))


def _state(stage: nn.Module, names: StageState, values: Sequence[torch.Tensor]):
    return dict(zip(names.trainable + names.constant, values))


class _SdpaMath(torch.overrides.TorchFunctionMode):
    """``F.scaled_dot_product_attention`` as its math kernel (matmul,
    softmax, matmul), as Nova's decomposition table has it. A body's
    backward is traced under autograd, where the table does not apply: CPU's
    flash kernel would be traced, and its backward op reaches no linalg
    (Hugging Face's sdpa attention)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.nn.functional.scaled_dot_product_attention:
            # Without the decomposition's layout for exported views: AOT
            # autograd traces the model's own views on these strides.
            from nova.frontend.decompositions import sdpa_math_kernel

            return sdpa_math_kernel(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))


def _call(stage: nn.Module, state: dict, x: torch.Tensor) -> torch.Tensor:
    with torch.nn.utils.stateless._reparametrize_module(stage, state, tie_weights=True), \
            _SdpaMath():
        return stage(x)


def autocast_context(dtype: torch.dtype | None):
    """``torch.autocast`` on the CPU at ``dtype`` (mixed precision), or nothing."""
    if dtype is None:
        return contextlib.nullcontext()
    if dtype not in (torch.bfloat16, torch.float16):
        raise PipelineError(f"autocast must be torch.bfloat16 or torch.float16, got {dtype}")
    return torch.autocast("cpu", dtype=dtype)


def forward_body(stage: nn.Module, names: StageState, state: list[torch.Tensor],
                 x: torch.Tensor, loss_fn=None, labels=None, *, tag: str,
                 autocast: torch.dtype | None = None) -> Body:
    """``F``: the stage's output, or on the last stage (``loss_fn`` given) the loss."""
    n = len(state)

    def fn(*flat):
        with autocast_context(autocast):
            y = _call(stage, _state(stage, names, flat[:n]), flat[n])
            if loss_fn is None:
                return (y,)
            return (_loss(loss_fn, y, flat[n + 1]),)

    args = list(state) + [x] + ([labels] if loss_fn is not None else [])
    return _trace(fn, args, f"F{tag}")


def backward_body(stage: nn.Module, names: StageState, state: list[torch.Tensor],
                  x: torch.Tensor, dy_or_labels: torch.Tensor, *, first: bool,
                  loss_fn=None, scale: float = 1.0, accumulate: bool, tag: str,
                  autocast: torch.dtype | None = None) -> Body:
    """``B`` (``accumulate=False``) or ``B_acc``: ``dx`` (unless ``first``) and
    the trainable parameters' gradients, recomputing the stage's forward."""
    n_train, n = len(names.trainable), len(state)

    def fn(*flat):
        params = [p.requires_grad_(True) for p in flat[:n_train]]
        values = params + list(flat[n_train:n])
        xin = flat[n]
        wrt = list(params)
        if not first:
            xin = xin.requires_grad_(True)
            wrt.append(xin)
        with autocast_context(autocast):
            y = _call(stage, _state(stage, names, values), xin)
            loss = _loss(loss_fn, y, flat[n + 1]) if loss_fn is not None else None
        keep = []
        if loss_fn is not None:
            grads = torch.autograd.grad(loss * scale, wrt, allow_unused=True)
            # Returned (and not used): a dead loss would leave torch-mlir's index
            # checks (cf.assert) in a generic with no result, which Nova rejects.
            keep = [loss.detach()]
        else:
            grads = torch.autograd.grad(y, wrt, grad_outputs=flat[n + 1].to(y.dtype),
                                        allow_unused=True)
        grads = [g if g is not None else torch.zeros_like(w) for g, w in zip(grads, wrt)]
        dparams = grads[:n_train]
        if accumulate:
            dparams = [a + g for a, g in zip(flat[n + 2:], dparams)]
        dx = [] if first else [grads[n_train]]
        return tuple(dx + [g.detach() for g in dparams] + keep)

    args = list(state) + [x, dy_or_labels]
    if accumulate:
        args += [torch.zeros_like(p) for p in state[:n_train]]
    return _trace(fn, args, f"B{'acc' if accumulate else ''}{tag}")


def update_body(update, params: list[torch.Tensor], groups: list[list[int]],
                slots: list[list[torch.Tensor]], hypers: list[list[torch.Tensor]],
                hyper_names: Sequence[str], *, tag: str, frozen: frozenset[int] = frozenset()
                ) -> Body:
    """``U``: ``(P, gacc, slots (slot-major), hypers (all groups)) -> (P', slots')``,
    ``groups[g]`` the indices into ``params`` of group ``g``'s parameters.
    The parameters in ``frozen`` (no gradient in their stage) keep their value
    and state, as torch's optimizers skip a parameter whose ``.grad`` is None."""
    n, n_slots = len(params), len(slots)
    n_hyper = sum(len(h) for h in hypers)

    def fn(*flat):
        p = list(flat[:n])
        g = list(flat[n:2 * n])
        s = [list(flat[2 * n + k * n:2 * n + (k + 1) * n]) for k in range(n_slots)]
        h = list(flat[2 * n + n_slots * n:2 * n + n_slots * n + n_hyper])
        new_p, new_s = list(p), [list(x) for x in s]
        offset = 0
        for g_index, members in enumerate(groups):
            width = len(hypers[g_index])
            values = dict(zip(hyper_names, h[offset:offset + width]))
            offset += width
            members = [i for i in members if i not in frozen]
            if not members:
                continue
            up, ups = update([p[i] for i in members], [g[i] for i in members],
                             [[s[k][i] for i in members] for k in range(n_slots)], values)
            for j, i in enumerate(members):
                new_p[i] = up[j]
                for k in range(n_slots):
                    new_s[k][i] = ups[k][j]
        return tuple(new_p + [t for slot in new_s for t in slot])

    args = list(params) + [torch.zeros_like(p) for p in params]
    args += [t for slot in slots for t in slot] + [t for h in hypers for t in h]
    donated = {i: i for i in range(n)}
    donated.update({2 * n + i: n + i for i in range(n_slots * n)})
    return _trace(fn, args, f"U{tag}", donated=donated)


def _loss(loss_fn, y, labels) -> torch.Tensor:
    loss = loss_fn(y, labels)
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        raise PipelineError("the loss must be a 0-d tensor (a scalar)")
    return loss.float()


def add_body(example: torch.Tensor, *, tag: str) -> Body:
    """``A``: ``(a, b) -> a + b``, the sum of a shared weight's two gradients."""
    return _trace(lambda a, b: (a + b,), [example, example], f"A{tag}")


def saved_bodies(stage: nn.Module, names: StageState, state: list[torch.Tensor],
                 x: torch.Tensor, dy_or_labels: torch.Tensor, *, first: bool, loss_fn=None,
                 scale: float = 1.0, accumulate: tuple[bool, ...] = (False, True),
                 tag: str, autocast: torch.dtype | None = None,
                 rematerialize: bool = False, defer: int = 0) -> dict[str, Body]:
    """``F``, ``B`` (and ``B_acc``) with saved activations instead of
    recomputation: AOT autograd's partition of the stage's joint graph
    (``default_partition``) gives a forward that also returns what the
    backward needs and a backward from those saved tensors and the output's
    gradient. ``F: (P, C, x[, labels]) -> (y or loss, saved...)``;
    ``B: (saved..., dy[, gacc...]) -> (dx, g...)``: on the last stage there is
    no ``dy`` (the loss's gradient is ``scale``), on stage 0 no ``dx``.
    ``rematerialize``: AOT autograd's min-cut partition instead, every
    tensor computed from integer inputs alone recomputed in B
    (:func:`_index_derived_recomputed`).

    ``defer=m`` (the step's micro-batches): the weights' gradients once per
    step where the backward allows it (:mod:`nova.parallel.pipeline_wgrad`):
    ``Bx: (saved..., dy) -> (dx, boundary values...)`` per micro-batch and
    ``G: (the m micro-batches' boundary values, concatenated) -> (g...)``,
    ``G.sources`` saying where each argument comes from; ``G.fallback()``
    gives ``B`` and ``B_acc`` instead (a mesh that cannot place G)."""
    joint = dict(first=first, loss_fn=loss_fn, scale=scale, autocast=autocast,
                 rematerialize=rematerialize)
    fw, bw, args = _joint(stage, names, state, x, dy_or_labels, **joint)
    n_train, n = len(names.trainable), len(state)
    last = loss_fn is not None
    plain = [a.detach() for a in args]
    with torch.no_grad():
        saved = [t.detach() for t in fw(*plain)[1:]]
    k = len(saved)
    hoisted = _hoist_weight_casts(fw, n_train, plain, tag) if autocast is not None else None
    if hoisted is not None:
        bodies = dict(zip(("F", "W"), hoisted))
    else:
        bodies = {"F": _trace(lambda *a: tuple(fw(*a)), plain, f"F{tag}")}
    wanted = list(range(n_train)) if first else [n] + list(range(n_train))

    def tangent(a):
        return [torch.full((), scale, dtype=torch.float32)] if last else [a[k]]

    def zeros(i):
        # A parameter with no gradient gets zeros made from its shape: a
        # zeros_like of ``args[i]`` (a real tensor, not a traced input)
        # would capture it as a constant of the body.
        return torch.zeros(args[i].shape, dtype=args[i].dtype)

    b_args = saved + ([] if last else [dy_or_labels.detach()])

    def per_microbatch() -> dict[str, Body]:
        out = {}
        for acc in accumulate:
            def bfn(*a, acc=acc):
                grads = bw(*a[:k], *tangent(a))
                picked = [grads[i] if grads[i] is not None else zeros(i) for i in wanted]
                dx, dparams = ([], picked) if first else ([picked[0]], picked[1:])
                if acc:
                    rest = a[k + (0 if last else 1):]
                    dparams = [g + r for g, r in zip(dparams, rest)]
                return tuple(dx + dparams)

            extra = [torch.zeros_like(t) for t in state[:n_train]] if acc else []
            out["Bacc" if acc else "B"] = _trace(bfn, b_args + extra,
                                                 f"B{'acc' if acc else ''}{tag}")
        return out

    deferred = None
    if defer > 1:
        deferred = _deferred(stage, names, state, x, dy_or_labels, joint, fw, bw, k,
                             defer, None if first else n, list(range(n_train)), tag)
    if isinstance(deferred, tuple):
        bx, reads, g = deferred
        r = len(reads)
        bx_args = [saved[j] for j in reads] + b_args[k:]
        bx_tangent = [torch.full((), scale, dtype=torch.float32)] if last else None
        body = _trace(lambda *a: tuple(bx(*a[:r], *(bx_tangent or [a[r]]))), bx_args,
                      f"Bx{tag}")
        bodies["Bx"] = dataclasses.replace(body, saved=reads)
        bodies["G"] = dataclasses.replace(g, fallback=per_microbatch)
    else:
        bodies.update(per_microbatch())
        if deferred is not None:
            bodies["F"] = dataclasses.replace(bodies["F"], deferral=deferred)
    return bodies


def _joint(stage, names: StageState, state, x, dy_or_labels, *, first: bool, loss_fn,
           scale: float, autocast, rematerialize: bool, run: bool = True):
    """AOT autograd's forward and backward graphs of the stage (and its
    loss on the last stage), and the example arguments they were run on.
    ``run=False``: the graphs only (their runs return zeros)."""
    from torch._functorch.aot_autograd import aot_function
    from torch._functorch.partitioners import default_partition

    n_train, n = len(names.trainable), len(state)
    last = loss_fn is not None
    graphs: dict[str, torch.fx.GraphModule] = {}

    def capture(kind):
        def compiler(gm, example):
            graphs[kind] = gm
            return gm if run else _zeros_of(gm)
        return compiler

    def fn(*flat):
        with autocast_context(autocast):
            y = _call(stage, _state(stage, names, flat[:n]), flat[n])
            return (_loss(loss_fn, y, flat[n + 1]),) if last else (y,)

    partition = _index_derived_recomputed if rematerialize else default_partition
    compiled = aot_function(fn, fw_compiler=capture("fw"), bw_compiler=capture("bw"),
                            partition_fn=partition, decompositions=decomposition_table())
    primals = [t.detach().clone().requires_grad_(i < n_train) for i, t in enumerate(state)]
    xin = x.detach().clone().requires_grad_(not first)
    args = primals + [xin] + ([dy_or_labels] if last else [])
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*boxed arguments.*")
        out = compiled(*args)[0]
        out.backward(torch.full((), scale) if last else dy_or_labels)
    return graphs["fw"], graphs["bw"], args


def _zeros_of(gm: torch.fx.GraphModule):
    """A stand-in for ``gm`` returning zeros of its outputs' traced shapes."""
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    values = [None if o is None else o.meta["val"] for o in out]

    def zeros(*args):
        return tuple(None if v is None else torch.zeros(tuple(v.shape), dtype=v.dtype)
                     for v in values)
    return zeros


def _deferred(stage, names, state, x, dy_or_labels, joint, fw, bw, k: int, m: int,
              dx_out, grad_outs, tag: str):
    """``(Bx graph, G body)`` for :func:`saved_bodies`' ``defer``, or the
    reason there is none (a string)."""
    repeat = [m] + [1] * (x.dim() - 1)
    last = joint["loss_fn"] is not None
    dy_step = dy_or_labels.repeat([m] + [1] * (dy_or_labels.dim() - 1))
    _, bw_step, _ = _joint(stage, names, state, x.repeat(repeat), dy_step, **joint, run=False)
    cut = split_backward(bw, bw_step, k, dx_out, grad_outs)
    if isinstance(cut, str):
        return cut
    mb, step = cut
    kinds = step_kinds(mb, step, m, _state_only(fw, len(state)))
    if isinstance(kinds, str):
        return kinds
    if not sums_match(mb, step, kinds, m, joint["scale"]):
        return "the step's weight gradients are not the micro-batches' summed"
    sources = tuple(kj for kj in kinds if kj[0] != "scale")
    g_args = [torch.zeros(tuple(e.shape), dtype=e.dtype)
              for kj, e in zip(kinds, step.examples) if kj[0] != "scale"]
    shapes = [tuple(t.shape) for t in state[:len(grad_outs)]]
    dtypes = [t.dtype for t in state[:len(grad_outs)]]
    scale = joint["scale"]

    def gfn(*a):
        it = iter(a)
        full = [torch.full((), scale, dtype=torch.float32) if kind == "scale" else next(it)
                for kind, _, _ in kinds]
        grads = step.g(*full)
        return tuple(g if g is not None else torch.zeros(s, dtype=d)
                     for g, s, d in zip(grads, shapes, dtypes))

    g = _trace(gfn, g_args, f"G{tag}")
    return mb.bx, mb.reads, dataclasses.replace(g, sources=sources)


def _state_only(fw: torch.fx.GraphModule, n: int) -> set[int]:
    """The saved tensors (F's results after the first) computed from the
    stage's state alone (weights, their casts): the same every micro-batch
    of a step."""
    nodes = list(fw.graph.nodes)
    placeholders = [p for p in nodes if p.op == "placeholder"]
    state = set(placeholders[:n])
    out = next(p for p in nodes if p.op == "output").args[0]
    return {j for j, v in enumerate(out[1:])
            if isinstance(v, torch.fx.Node)
            and all(a in state for a in ancestors([v]) if a.op == "placeholder")}


#: Views a weight's autocast copy may take on its way to a matmul.
_VIEWS = ("permute", "t", "transpose", "view", "_unsafe_view", "reshape")


def _narrowing(node) -> bool:
    """A cast to bf16 / f16 (autocast's copy of a float32 weight)."""
    return (node.op == "call_function"
            and node.target is torch.ops.prims.convert_element_type.default
            and node.args[1] in (torch.bfloat16, torch.float16))


def _weight_op(node) -> bool:
    """A narrowing cast or a view: never the cast back to float32 that
    Nova's decompositions put before a matmul (F keeps those, so the matmul
    still reads 16-bit operands)."""
    if node.op != "call_function":
        return False
    return _narrowing(node) or getattr(node.target, "__name__", "").split(".")[0] in _VIEWS


def _hoist_weight_casts(fw, n_train: int, plain: list[torch.Tensor], tag: str):
    """``(F, W)``: the values of ``fw`` that are trainable parameters cast
    (autocast's bf16 copies, and views of them) move to ``W: (P) -> (copies)``,
    which runs once per step, and F takes them as arguments after its own:
    ``F: (P, C, x[, labels], copies...) -> (y or loss, saved...)``, the copies
    B saves among its arguments no longer F's results (``W.saved``). The
    parameters change only in U, so every F and B of a step sees the same
    copies as when each F cast them. ``None`` when F casts no parameter."""
    import torch.fx as fx

    nodes = list(fw.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    params = set(placeholders[:n_train])
    cast: dict = {}  # parameter-only op -> whether a cast is among its inputs
    for node in nodes:
        ins = node.all_input_nodes
        if _weight_op(node) and ins and all(i in params or i in cast for i in ins):
            cast[node] = _narrowing(node) or any(cast.get(i, False) for i in ins)
    copies = [n for n, c in cast.items() if c and any(u not in cast for u in n.users)]
    if not copies:
        return None
    # W: the parameter-only ops the copies need, in graph order.
    need, todo = set(), list(copies)
    while todo:
        n = todo.pop()
        if n in cast and n not in need:
            need.add(n)
            todo += n.all_input_nodes
    w_graph, env = fx.Graph(), {}
    for ph in placeholders[:n_train]:
        env[ph] = w_graph.placeholder(ph.name)
    for node in nodes:
        if node in need:
            env[node] = w_graph.node_copy(node, lambda a: env[a])
    w_graph.output(tuple(env[c] for c in copies))
    w_module = fx.GraphModule(fw, w_graph)
    # F: the copies are placeholders after the others; the saved ones leave its results.
    # (An op with a cast among its inputs leaves F whole: its users are copies or such ops.)
    f_graph, env = fx.Graph(), {}
    for node in nodes:
        if node.op == "output" or cast.get(node):
            continue
        env[node] = f_graph.node_copy(node, lambda a: env[a])
        if node is placeholders[-1]:
            for j, c in enumerate(copies):
                env[c] = f_graph.placeholder(f"copy_{j}")
    out = next(n for n in nodes if n.op == "output").args[0]
    index = {c: j for j, c in enumerate(copies)}
    results, saved_from = [env[out[0]]], []
    for v in out[1:]:
        saved_from.append(index.get(v, -1))
        if v not in index:
            results.append(env[v])
    f_graph.output(tuple(results))
    f_graph.eliminate_dead_code()
    f_module = fx.GraphModule(fw, f_graph)
    params_plain = plain[:n_train]
    with torch.no_grad():
        values = [t.detach() for t in w_module(*params_plain)]

    def whole() -> Body:
        return _trace(lambda *a: tuple(fw(*a)), plain, f"F{tag}")

    f = _trace(lambda *a: tuple(f_module(*a)), plain + values, f"F{tag}")
    w = _trace(lambda *a: tuple(w_module(*a)), params_plain, f"W{tag}")
    return f, Body(w.name, w.mlir, w.constants, tuple(saved_from), whole)


def _index_derived_recomputed(joint, inputs, **options):
    """The min-cut partition with every tensor computed from integer inputs
    and constants alone (a vocabulary-parallel lookup's or loss's one-hot of
    the ids or labels) recomputed in B from those inputs: saved, the one-hot
    is a [tokens, V] matrix whole along the vocabulary on every chip of a
    mesh, which B multiplies instead of scattering."""
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch.utils.checkpoint import CheckpointPolicy

    for node in index_derived(joint.graph.nodes):
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            node.meta["recompute"] = CheckpointPolicy.MUST_RECOMPUTE
    for node in joint.graph.nodes:
        if _softmax_numerator(node):
            node.meta["recompute"] = CheckpointPolicy.MUST_SAVE
    return min_cut_rematerialization_partition(joint, inputs, **options)


def _softmax_numerator(node) -> bool:
    """``exp(x - amax(x, dim))``: min-cut would save the smaller ``x`` (the
    bf16 logits) and recompute the subtraction and the exp in B, five of the
    vector unit's cycles per logit on the chip that holds the head; saved,
    B reads the f32 exponentials instead (DMA; the 3-D row measured 1.7 ms
    faster for it)."""
    aten = torch.ops.aten
    if node.op != "call_function" or node.target is not aten.exp.default:
        return False
    sub = node.args[0]
    if getattr(sub, "target", None) is not aten.sub.Tensor:
        return False
    x, peak = sub.args[:2]
    return getattr(peak, "target", None) is aten.amax.default and peak.args[0] is x


def norm_body(grads: Sequence[torch.Tensor], *, tag: str) -> Body:
    """``N``: ``(g...) -> sum of g * g``: a stage's part of the squared global
    gradient norm (``clip_grad_norm_``'s), summed in parameter order."""
    def fn(*g):
        squares = [(t * t).sum() for t in g]
        return (sum(squares[1:], squares[0]),)

    return _trace(fn, list(grads), f"N{tag}")


def clip_body(parts: int, grads: Sequence[torch.Tensor], *, tag: str) -> Body:
    """``C``: ``(part_0 .. part_{p-1}, max_norm, g...) -> (g * scale..., norm)``,
    the norm the square root of the stages' parts summed in stage order (so
    every chip computes the same one) and ``scale = min(1, max_norm / (norm +
    1e-6))`` as ``torch.nn.utils.clip_grad_norm_``."""
    def fn(*a):
        squares, max_norm, g = a[:parts], a[parts], a[parts + 1:]
        norm = torch.sqrt(sum(squares[1:], squares[0]))
        scale = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
        return tuple([t * scale for t in g] + [norm])

    zero = torch.zeros((), dtype=torch.float32)
    return _trace(fn, [zero] * parts + [torch.ones(())] + list(grads), f"C{tag}")
