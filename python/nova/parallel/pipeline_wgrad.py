"""A stage's backward split in two (zero-bubble pipelines' ``B`` and ``W``,
Qi et al. 2023): ``Bx``, what the input's gradient needs, runs per
micro-batch; ``G``, what only the weights' gradients need, runs once per
step over every micro-batch's inputs at once.

Why: per micro-batch, a weight gradient ``dY^T X`` contracts over the
micro-batch's tokens alone (one sequence in a 3-D row), its f32 result is
written, reduced over the data-parallel chips and added to the sum so far
``m`` times a step. Once per step it is one matmul over all the step's
tokens, one reduction and no accumulation.

:func:`split_backward` cuts AOT autograd's backward graph. ``G`` takes
the nodes that only the parameters' gradients read and whose value does
not grow with the batch (the reductions over tokens), the views and casts
only they read, and the index tensors they read (made again from the
ids). ``Bx`` keeps the rest, and returns after ``dx`` the values ``G``
reads that it computes. The cut is made on the backward traced at a
micro-batch and at the step's batch, matched by node name.
:func:`step_kinds` checks that each boundary value is ``m`` times as long
at the step's batch along one dimension ``k`` and the same along the
others (or the value is the same tensor every micro-batch: a weight):
``G`` takes the micro-batches' values concatenated along ``k``. That is
dimension 0 for most values (``[tokens, d]``); a Hugging Face ``Conv1D``'s
weight gradient ``x^T @ dy`` reads the transposed activation ``[d,
tokens]``, which grows along dimension 1. :func:`sums_match` then checks
that, on random boundary values so concatenated, the step's ``G`` equals
the sum of the micro-batches'. Anything else returns the reason, and the
pipeline keeps its per-micro-batch backward.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx as fx

#: Where a ``G`` argument comes from, per micro-batch: ``saved`` (B's saved
#: tensor ``j``), ``dy`` (the output's gradient), ``extra`` (``Bx``'s result
#: ``j`` after ``dx``); ``once``: B's saved tensor ``j``, the same tensor every
#: micro-batch (a weight), passed once; ``scale``: the last stage's tangent,
#: the constant loss scale. :func:`step_kinds` gives each argument
#: ``(kind, j, dim)``: ``dim`` the dimension along which the micro-batches'
#: values are concatenated (None for ``once`` and ``scale``).
KINDS = ("saved", "dy", "extra", "once", "scale")


@dataclass(frozen=True)
class Split:
    bx: fx.GraphModule      # (saved..., tangent) -> (dx?, extras...)
    g: fx.GraphModule       # (boundary...) -> (grads..., None where no gradient)
    #: Per G argument: ("saved" | "dy" | "extra", j) as in the graph.
    boundary: tuple[tuple[str, int], ...]
    examples: tuple[torch.Tensor, ...]  # the boundary's traced values (shapes, dtypes)
    order: tuple[fx.Node, ...] = ()     # the boundary's nodes
    #: The saved tensors Bx reads (its placeholders before the tangent).
    reads: tuple[int, ...] = ()


#: Ops that only view or convert a value: deferred with the weight gradient
#: that alone reads them (``permute(dY)`` before ``dY^T X``), never a
#: computation of the backward's chain.
_VIEWS = ("permute", "t", "transpose", "view", "_unsafe_view", "reshape", "expand",
          "convert_element_type", "clone", "squeeze", "unsqueeze")


def _is_view(node: fx.Node) -> bool:
    name = getattr(node.target, "__name__", "").split(".")[0]
    return node.op == "call_function" and name in _VIEWS


def ancestors(roots) -> set:
    seen, todo = set(), [r for r in roots if isinstance(r, fx.Node)]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += node.all_input_nodes
    return seen


def _shape(node: fx.Node):
    value = node.meta.get("val")
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None


def split_backward(mb: fx.GraphModule, step: fx.GraphModule, saved_count: int,
                   dx_out: int | None, grad_outs: list[int]) -> tuple[Split, Split] | str:
    """The same cut of AOT autograd's backward traced at a micro-batch
    (``mb``) and at the step's batch (``step``): placeholders the
    ``saved_count`` saved tensors then the tangent, outputs indexed by
    ``dx_out`` (the stage input's gradient, None on stage 0) and
    ``grad_outs`` (the parameters'). ``G``'s nodes are those only the
    weights' gradients read whose value does not grow with the batch (the
    reductions over tokens: ``dY^T X``, bias and norm sums, the embedding's
    backward), with the views and casts only they read. The two traces are
    matched by node name (the joint graph's: the partitions may save
    different forward tensors, the weights' part is the same); a string
    says why there is no such cut."""
    a_nodes, b_nodes = list(mb.graph.nodes), list(step.graph.nodes)
    twin = {n.name: n for n in b_nodes}
    outs = next(n for n in a_nodes if n.op == "output").args[0]
    step_outs = next(n for n in b_nodes if n.op == "output").args[0]
    grads = [outs[i] for i in grad_outs]
    dx_side = ancestors([outs[dx_out]]) if dx_out is not None else set()
    wanted = ancestors(grads)
    g_nodes: set = set()
    for node in reversed(a_nodes):
        if node.op != "call_function" or node not in wanted or node in dx_side:
            continue
        other = twin.get(node.name)
        if other is None or other.op != node.op or other.target != node.target:
            continue
        if not all(u in g_nodes or u.op == "output" for u in node.users):
            continue
        if _shape(node) == _shape(other) or _is_view(node):
            g_nodes.add(node)
    if not any(n for n in g_nodes if not _is_view(n)):
        return "no weight gradient to defer"
    # What G reads that no float tensor feeds (a constant, a one-hot of the
    # ids) is made again in G from the integers, not passed: a vocabulary's
    # one-hot is [V, tokens].
    derived = index_derived(a_nodes)
    todo = [i for n in g_nodes for i in n.all_input_nodes]
    while todo:
        node = todo.pop()
        if node in derived and node not in g_nodes:
            other = twin.get(node.name)
            if other is None or other.target != node.target:
                return "the backward at the step's batch makes other index tensors"
            g_nodes.add(node)
            todo += node.all_input_nodes
    for i in grad_outs:
        a, b = outs[i], step_outs[i]
        if (a is None) != (b is None) or (a is not None and a.name != b.name):
            return "the backward at the step's batch returns other gradients"
    first = _cut(mb, a_nodes, g_nodes, grads, dx_out, outs, saved_count)
    names = [n.name for n in first.order]
    second = _cut(step, b_nodes, {twin[n.name] for n in g_nodes},
                  [step_outs[i] for i in grad_outs], dx_out, step_outs, saved_count)
    if sorted(n.name for n in second.order) != sorted(names):
        return "the weights' gradients read other tensors at the step's batch"
    second = _cut(step, b_nodes, {twin[n.name] for n in g_nodes},
                  [step_outs[i] for i in grad_outs], dx_out, step_outs, saved_count,
                  order=names)
    return first, second


def index_derived(nodes) -> set:
    """The call_function nodes no float tensor flows into."""
    floating, derived = set(), set()
    for node in nodes:
        value = node.meta.get("val")
        if node.op == "placeholder":
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                floating.add(node)
        elif node.op == "call_function":
            if any(a in floating for a in node.all_input_nodes):
                floating.add(node)
            else:
                derived.add(node)
    return derived


def _cut(bw: fx.GraphModule, nodes: list, g_nodes: set, grads: list, dx_out, outs,
         saved_count: int, order: list[str] | None = None) -> Split:
    placeholders = [n for n in nodes if n.op == "placeholder"]
    boundary = [n for n in nodes if n not in g_nodes and n.op != "output"
                and (any(u in g_nodes for u in n.users) or n in grads)]
    if order is not None:
        by_name = {n.name: n for n in boundary}
        boundary = [by_name[name] for name in order]
    extras = [n for n in boundary if n.op != "placeholder"]
    roots = ([outs[dx_out]] if dx_out is not None else []) + extras
    keep = ancestors(roots) | set(placeholders[saved_count:])
    reads = tuple(j for j, p in enumerate(placeholders[:saved_count]) if p in keep)
    bx_graph, env = fx.Graph(), {}
    for node in nodes:
        if node in keep:
            env[node] = bx_graph.node_copy(node, lambda a: env[a])
    bx_graph.output(tuple(env[n] for n in roots))
    bx = fx.GraphModule(bw, bx_graph)

    g_graph, env, kinds = fx.Graph(), {}, []
    for node in boundary:
        env[node] = g_graph.placeholder(f"in_{node.name}")
        env[node].meta = dict(node.meta)
        if node.op == "placeholder":
            index = placeholders.index(node)
            kinds.append(("saved", index) if index < saved_count else ("dy", 0))
        else:
            kinds.append(("extra", extras.index(node)))
    for node in nodes:
        if node in g_nodes:
            env[node] = g_graph.node_copy(node, lambda a: env[a])
    g_graph.output(tuple(env[g] if isinstance(g, fx.Node) else None for g in grads))
    g = fx.GraphModule(bw, g_graph)
    return Split(bx, g, tuple(kinds), tuple(n.meta.get("val") for n in boundary),
                 tuple(boundary), reads)


def concat_dim(a: tuple[int, ...], b: tuple[int, ...], m: int) -> int | None:
    """The one dimension along which shape ``b`` is shape ``a`` ``m`` times
    (the others equal), or None."""
    if len(a) != len(b) or m < 2:
        return None
    grown = [k for k, (x, y) in enumerate(zip(a, b)) if x != y]
    if len(grown) == 1 and b[grown[0]] == a[grown[0]] * m:
        return grown[0]
    return None


def step_kinds(mb: Split, step: Split, m: int, invariant: set[int]) -> tuple | str:
    """Per ``G`` argument ``(kind, index, dim)`` (:data:`KINDS`; ``dim``
    the dimension the micro-batches' values are concatenated along), or
    why the step's ``G`` is not over the micro-batches' boundary
    concatenated. ``invariant``: saved tensors that are the same every
    micro-batch (weights, their copies)."""
    kinds = []
    for (kind, j), a, b in zip(mb.boundary, mb.examples, step.examples):  # mb's sources
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            return "a boundary value is not a tensor"
        dim = concat_dim(tuple(a.shape), tuple(b.shape), m)
        if tuple(a.shape) == tuple(b.shape) and kind == "saved" and j in invariant:
            kinds.append(("once", j, None))
        elif tuple(a.shape) == tuple(b.shape) and kind == "dy" and a.dim() == 0:
            kinds.append(("scale", 0, None))
        elif dim is not None and a.dtype == b.dtype:
            kinds.append((kind, j, dim))
        else:
            return (f"a boundary value ({kind} {j}) is {list(a.shape)} per micro-batch and "
                    f"{list(b.shape)} per step")
    return tuple(kinds)


def _random(example: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    shape, dtype = tuple(example.shape), example.dtype
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    return torch.randint(0, 2, shape, generator=generator).to(dtype)


class _Float32(fx.Interpreter):
    """Runs a graph with every bf16 / f16 dtype it names read as float32: the
    check of :func:`sums_match` is of the graph's form, and bf16 matmuls are
    slow on this CPU (the 12-layer 3-D row's compile ran past 20 minutes
    with the check in bf16 and the step-batch trace run; not profiled
    apart)."""

    def call_function(self, target, args, kwargs):
        def wide(a):
            return torch.float32 if a in (torch.bfloat16, torch.float16) else a
        args = tuple(wide(a) for a in args)
        kwargs = {k: wide(v) for k, v in kwargs.items()}
        return super().call_function(target, args, kwargs)


def _run(graph: fx.GraphModule, args) -> list:
    return list(_Float32(graph).run(*args))


def sums_match(mb: Split, step: Split, kinds: tuple, m: int, scale: float) -> bool:
    """``step.g`` over the micro-batches' random boundary values concatenated
    (each along its kind's dimension) equals the sum of ``mb.g`` over each
    (float32 sums, relative 1e-2 of the largest gradient: the check is of
    the form, not of rounding)."""
    gen = torch.Generator().manual_seed(0)
    per_mb = [[_random(e, gen) if kind not in ("once", "scale") else None
               for (kind, _, _), e in zip(kinds, mb.examples)] for _ in range(m)]
    shared = [_random(e, gen) if kind == "once" else
              (torch.full((), scale) if kind == "scale" else None)
              for (kind, _, _), e in zip(kinds, mb.examples)]
    total = None
    with torch.no_grad():
        for values in per_mb:
            args = [s if v is None else v for v, s in zip(values, shared)]
            out = [None if g is None else g.float() for g in _run(mb.g, args)]
            total = out if total is None else [
                None if t is None else t + o for t, o in zip(total, out)]
        cat = [shared[k] if shared[k] is not None else
               torch.cat([values[k] for values in per_mb], dim=kinds[k][2])
               for k in range(len(kinds))]
        whole = [None if g is None else g.float() for g in _run(step.g, cat)]
    for a, b in zip(total, whole):
        if (a is None) != (b is None):
            return False
        if a is None:
            continue
        if a.shape != b.shape:
            return False
        bound = 1e-2 * max(float(a.abs().max()), 1e-6)
        if float((a - b).abs().max()) > bound:
            return False
    return True
