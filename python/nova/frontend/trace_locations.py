"""Source lines for the ops of a traced training step that have no frame of
the model's code: make_fx records each op's Python stack, but the backward's
ops run inside autograd's engine and the clipping and optimizer's ops inside
Nova, so their recorded traces are empty and the report would charge their
time to whatever line came before them.

- A backward op gets the stack trace of the forward op whose gradient it
  computes: torch's own mechanism (aot_autograd's stack-trace preservation
  hooks) tags each op traced inside an autograd node's backward with that
  node's sequence number, which its forward op carries too.
- Ops traced inside :func:`traced_at` get a frame naming the function that
  made them (the optimizer's ``update``, gradient clipping).

Only while ``torch.fx.traceback.preserve_node_meta()`` is on (see
:func:`nova.frontend.train_export.trace_functional`)."""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import traceback
from typing import Callable, Iterator

import torch
import torch.fx.traceback as fx_traceback


def tag_backward(outputs: list[torch.Tensor]) -> None:
    """Hooks on every autograd node behind ``outputs``: the ops traced inside
    its backward carry its sequence number (``seq_nr``)."""
    todo = [t.grad_fn for t in outputs if t.grad_fn is not None]
    seen = set()
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        number = node._sequence_nr()
        node.register_prehook(lambda grads, number=number: fx_traceback.set_grad_fn_seq_nr(number))
        node.register_hook(lambda inputs, outputs: fx_traceback.reset_grad_fn_seq_nr())
        todo.extend(f for f, _ in node.next_functions if f is not None)


@contextlib.contextmanager
def traced_at(fn: Callable) -> Iterator[None]:
    """Ops traced inside get a stack trace of one frame: ``fn``'s definition."""
    meta = fx_traceback.get_current_meta()
    saved = meta.get("stack_trace")
    target = inspect.unwrap(getattr(fn, "__func__", fn))
    try:
        line = inspect.getsourcelines(target)[1]
        meta["stack_trace"] = (f'  File "{inspect.getsourcefile(target)}", line {line}, '
                               f'in {target.__name__}\n')
    except (OSError, TypeError):  # no source (a builtin): nothing to name
        pass
    try:
        yield
    finally:
        if saved is None:
            meta.pop("stack_trace", None)
        else:
            meta["stack_trace"] = saved


def located_loss(loss_fn: Callable) -> Callable:
    """``loss_fn`` with its frames kept in the traced ops' stack traces.

    make_fx records only frames named ``forward`` (and registered anchors): a
    plain loss function's ops would carry no line, and the report would charge
    them to the op before (the LM head). ``annotate_fn`` registers the
    function as an anchor, so its ops (and through :func:`backward_locations`
    their backward) carry the loss function's own lines.

    An anchor stays registered for the process: torch's own functions (a
    ``torch.nn.functional.cross_entropy`` passed as the loss) are not made
    anchors, or every later trace through them (a user's loss function that
    calls them, a model's forward) would be charged to torch's file. Their
    ops are traced at the function's definition instead."""
    if getattr(loss_fn, "__code__", None) is None:
        return loss_fn  # a loss module's forward is kept anyway
    if (getattr(loss_fn, "__module__", None) or "").partition(".")[0] == "torch":
        @functools.wraps(loss_fn)
        def at_definition(*args, **kwargs):
            with traced_at(loss_fn):
                return loss_fn(*args, **kwargs)
        return at_definition
    return fx_traceback.annotate_fn({"nova": "loss"})(loss_fn)


def backward_locations(graph: torch.fx.Graph) -> None:
    """Each op without a stack trace takes that of the first op with its
    ``seq_nr`` that has one (its forward op, for a backward op), but for the
    sums of a tensor's gradients (see :func:`_accumulated_from`)."""
    first: dict[int, str] = {}
    sums: set[torch.fx.Node] = set()
    for node in graph.nodes:
        number = node.meta.get("seq_nr")
        if number is None:
            continue
        if node.stack_trace:
            first.setdefault(number, node.stack_trace)
        elif number in first:
            line = _accumulated_from(node, number, sums)
            if line:
                sums.add(node)
            node.stack_trace = line or first[number]


def _accumulated_from(node: torch.fx.Node, number: int,
                      sums: set[torch.fx.Node]) -> str | None:
    """autograd's engine sums the gradients of a tensor used twice (a residual
    stream) while a later node's sequence number is still set (the loss's): an
    add of two gradients made by other nodes (or by such sums, in ``sums``)
    takes its first gradient's line."""
    if node.target != torch.ops.aten.add.Tensor:
        return None
    grads = [a for a in node.args[:2] if isinstance(a, torch.fx.Node)]
    if len(grads) != 2 or any(g not in sums and g.meta.get("seq_nr") in (None, number)
                              for g in grads):
        return None
    return grads[0].stack_trace or None


@contextlib.contextmanager
def fast_stack_traces() -> Iterator[None]:
    """make_fx's ``record_stack_traces=True`` stack traces, the same text at a
    fraction of the cost (1.2-1.6 s of a GPT-2-small step's 5.5 s trace).

    For each op make_fx records (``PythonKeyTracer``, forward frames only),
    torch symbolizes the whole Python stack (some 45 frames below the model's
    line: make_fx, fake tensors, decompositions), reads every frame's source
    line, and keeps the few that are the model's: frames named ``forward`` or
    registered as anchors (:func:`located_loss`), outside torch's internals.
    Here the stack is walked and only the kept frames are read and formatted,
    by the same ``traceback.StackSummary.format``. Inside the block make_fx
    builds its tracer from this subclass."""
    from torch.fx.experimental import proxy_tensor

    base = proxy_tensor.PythonKeyTracer
    proxy_tensor.PythonKeyTracer = _fast_stack_tracer()
    try:
        yield
    finally:
        proxy_tensor.PythonKeyTracer = base


@functools.cache
def _fast_stack_tracer() -> type:
    from torch.fx.experimental.proxy_tensor import PythonKeyTracer
    from torch.fx.experimental.symbolic_shapes import uninteresting_files
    from torch.fx.proxy import _STACK_TRACE_ANCHORS

    class FastStackTracer(PythonKeyTracer):
        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            if not (self.record_stack_traces and self._record_forward_stack_traces_only):
                return super().create_node(kind, target, args, kwargs, name, type_expr)
            self.record_stack_traces = False
            try:
                node = super().create_node(kind, target, args, kwargs, name, type_expr)
            finally:
                self.record_stack_traces = True
            if not node.stack_trace and node.op not in ("placeholder", "output"):
                trace = _user_stack(sys._getframe(1), uninteresting_files(),
                                    _STACK_TRACE_ANCHORS)
                if trace:
                    node.stack_trace = trace
            return node

    return FastStackTracer


def _user_stack(frame, boring: set[str], anchors: set[tuple[str, str]]) -> str:
    """torch.fx.proxy.TracerBase.create_node's stack trace with
    ``_record_forward_stack_traces_only``, from ``frame`` outwards."""
    kept = []
    while frame is not None:
        code = frame.f_code
        filename, name = code.co_filename, code.co_name
        if (name == "forward" or filename.endswith("torch/__init__.py")
                or (filename, name) in anchors) and filename not in boring:
            kept.append(traceback.FrameSummary(filename, frame.f_lineno, name))
        frame = frame.f_back
    if not kept:
        return ""
    kept.reverse()
    return "".join(traceback.StackSummary.from_list(kept).format()).strip()
