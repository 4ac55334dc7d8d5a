"""Per-op fallback: which nodes of a graph Nova cannot compile, and the graph
split so that everything else still runs on Nova.

Support is decided per node, honestly, by compiling rather than by a list
that goes stale: the frontend's own refusals come first (unsigned tensors wider
than uint8 and tensors without elements, :mod:`nova.frontend.export`), then the graph is
compiled whole. When that fails, the error names the model's line; each node
of that line is compiled on its own (a *probe*, with the values the node saw
in an eager run of the graph) and the ones that fail run in eager. An error
without a usable line is found by bisection: the graph's nodes in
topological order, halved until one node fails alone. torch.fx's
capability-based partitioner then groups the other nodes into partitions,
each compiled as a graph of its own; a partition that still fails is split
the same way, one level down, and at the bottom runs in eager. Nothing
crashes and nothing runs at a shape it was not compiled for.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_as_graphmodule

from nova.dynamo.errors import can_fall_back, fallback_reason
from nova.dynamo.options import BackendOptions

logger = logging.getLogger(__name__)

_CALLS = ("call_function", "call_method", "call_module")
#: Unsigned dtypes the frontend refuses (uint8 is carried in int32, nova.frontend.narrow_ints).
_UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)

#: Probe results in this process: (target, argument signature, options) -> reason or None.
_PROBES: dict[tuple, str | None] = {}
#: Ops found not to compile alone in this process: (op, dtypes, options) -> reason. A
#: later graph calling one is split before its whole compile is tried.
_KNOWN: dict[tuple, str] = {}


@dataclass
class Decision:
    """Which nodes run in eager (FX node name -> why), found at one call."""

    eager: dict[str, str] = field(default_factory=dict)
    #: Set when no split helps (the graph then runs in eager as a whole).
    whole: str | None = None
    #: Single-node and bisection compiles it took to decide.
    probes: int = 0

    def to_json(self) -> dict:
        return {"eager": dict(self.eager), "whole": self.whole}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Decision | None":
        eager, whole = data.get("eager"), data.get("whole")
        if not isinstance(eager, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in eager.items()):
            return None
        return cls(eager=dict(eager), whole=whole if isinstance(whole, str) else None)


class NovaSupport(OperatorSupportBase):
    """The partitioner's question: does this call node go to Nova?"""

    def __init__(self, eager: Mapping[str, str]) -> None:
        self.eager = eager

    def is_node_supported(self, submodules: Mapping[str, torch.nn.Module],
                          node: torch.fx.Node) -> bool:
        return node.op in _CALLS and node.name not in self.eager


def op_name(node: torch.fx.Node) -> str:
    """``torch.atan``, ``Tensor.cumprod``, ``operator.mul``: what the user wrote."""
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_module":
        return str(node.target)
    try:
        name = torch.fx.node._get_qualified_name(node.target)
    except Exception:  # a callable without a qualified name
        name = getattr(node.target, "__name__", str(node.target))
    if name.startswith("torch.ops."):  # an aot_autograd graph's aten op
        name = name.removeprefix("torch.ops.").removesuffix(".default")
    name = name.replace("_operator.", "operator.").replace("torch._C._nn.", "torch.nn.functional.")
    return name.replace("torch._C._special.special_", "torch.special.")


def record_values(gm: torch.fx.GraphModule, args: Sequence[Any]) -> dict[torch.fx.Node, Any]:
    """Every node's value in an eager run of ``gm`` at ``args`` (the probes'
    inputs). The run reads copies, so a graph that updates an input in place
    (a buffer) has it updated once, by the real call.

    The run is on the CPU even when ``args`` live on an accelerator (the nova
    device): the decision reads shapes, dtypes and sizes, and the probes
    compile from host examples, while on the device each op of this one run
    would be compiled as a program of its own (82 of 169 s of HF GPT-2's
    first compiled step, measured once). Random ops draw from a forked CPU generator, so the
    user's random streams are left as they were."""
    interpreter = _OnHost(gm, garbage_collect_values=False)
    copies = [_host_copy(a) for a in args]
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        interpreter.run(*copies)
    return dict(interpreter.env)


def _host_copy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    return value


def _on_cpu(value: Any) -> Any:
    """A device argument of an op (``device=``, a ``to``'s target) as the CPU."""
    if isinstance(value, torch.device) and value.type != "cpu":
        return torch.device("cpu")
    return value


class _OnHost(torch.fx.Interpreter):
    """Runs a graph traced on an accelerator with every op's device arguments
    (``empty(..., device=nova)``, ``_to_copy(x, device=nova)``) made the CPU."""

    def call_function(self, target, args, kwargs):
        args = tuple(_on_cpu(a) for a in args)
        kwargs = {k: _on_cpu(v) for k, v in kwargs.items()}
        return super().call_function(target, args, kwargs)


def static_reason(node: torch.fx.Node, value: Any,
                  values: Mapping[torch.fx.Node, Any] | None = None) -> str | None:
    """The frontend's refusals that need no compile (see nova.frontend.export):
    a node that makes or reads an unsigned tensor wider than uint8 or one without elements (an
    empty KV cache that a ``cat`` extends)."""
    for source in node.all_input_nodes if values is not None else ():
        read = values.get(source)
        if isinstance(read, torch.Tensor) and read.numel() == 0:
            return f"it reads a tensor without elements {tuple(read.shape)}"
    if isinstance(value, torch.Tensor):
        if value.dtype in _UNSIGNED:
            return f"it makes a {str(value.dtype).removeprefix('torch.')} tensor " \
                   f"(unsigned integers are not supported)"
        if value.numel() == 0 and node.users:
            return f"it makes a tensor without elements {tuple(value.shape)}"
    return None


def narrow_in_eager(gm: torch.fx.GraphModule) -> dict[str, str]:
    """The nodes of an aot_autograd (training) graph that make or read a uint8
    or int16 tensor. A whole graph on host tensors carries them in int32
    (nova.frontend.narrow_ints; nova.dynamo.training converts its arguments and
    results); on the nova device and in the partitions of a split graph they
    run in eager (torch-mlir alone would lower uint8 as a signed i8)."""
    def narrow(node: Any) -> str | None:
        value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        if isinstance(value, torch.Tensor) and value.dtype in (torch.uint8, torch.int16):
            return str(value.dtype).removeprefix("torch.")
        return None

    found = {}
    for node in gm.graph.nodes:
        if node.op not in _CALLS:
            continue
        dtype = narrow(node) or next(filter(None, map(narrow, node.all_input_nodes)), None)
        if dtype is not None:
            found[node.name] = (f"it makes or reads a {dtype} tensor (narrow integers run in "
                                f"eager on the nova device and in split training graphs)")
    return found


#: ``compile_probe(graph_module, args)``: compiles a probe or raises the compiler's error.
ProbeCompiler = Callable[[torch.fx.GraphModule, Sequence[Any]], None]


def decide(gm: torch.fx.GraphModule, values: Mapping[torch.fx.Node, Any],
           error: Exception | None, options: BackendOptions,
           compile_probe: ProbeCompiler | None = None,
           forced: Mapping[str, str] | None = None) -> Decision:
    """The nodes of ``gm`` to run in eager, given the whole graph's compile
    ``error`` (None: only the static checks, before any compile) and the
    nodes ``forced`` into eager (name -> why).
    ``compile_probe`` compiles a piece of ``gm`` as the graph itself would be
    (default: as a Dynamo graph, through torch.export)."""
    decision = _decide(gm, values, error, options, compile_probe)
    for name, reason in (forced or {}).items():
        decision.eager.setdefault(name, reason)
    _group_items(gm, decision)
    return decision


def _decide(gm: torch.fx.GraphModule, values: Mapping[torch.fx.Node, Any],
            error: Exception | None, options: BackendOptions,
            compile_probe: ProbeCompiler | None) -> Decision:
    compile_probe = compile_probe or (lambda sub, args: compile_exported(sub, args, options))
    decision = Decision()
    compute = [n for n in gm.graph.nodes if n.op in _CALLS]
    known = known_eager(gm, options)
    for node in compute:
        reason = static_reason(node, values.get(node), values) or known.get(node.name)
        if reason is not None:
            decision.eager[node.name] = reason
    if error is None:
        return decision
    # A getitem goes where the op whose results it unpacks goes (_group_items).
    tensors = [n for n in compute if _is_tensor_valued(values.get(n))
               and n.name not in decision.eager and not _is_item(n)]
    frame = getattr(error, "frame", None)
    for node in [n for n in tensors if frame is not None and _same_line(n, frame)]:
        reason = _probe(gm, [node], values, options, decision, compile_probe)
        if reason is not None:
            decision.eager[node.name] = reason
            _KNOWN[_known_key(node, options)] = reason
    if decision.eager:
        return decision
    culprit = _bisect(gm, tensors, values, options, decision, compile_probe)
    if culprit is None:
        decision.whole = fallback_reason(error).splitlines()[0]
    else:
        decision.eager[culprit[0].name] = culprit[1]
        _KNOWN[_known_key(culprit[0], options)] = culprit[1]
    return decision


def _is_item(node: torch.fx.Node) -> bool:
    """Whether ``node`` unpacks one result of an op that returns several."""
    return (node.op == "call_function" and node.target is operator.getitem
            and isinstance(node.args[0], torch.fx.Node) and node.args[0].op in _CALLS)


def _items(node: torch.fx.Node) -> list[torch.fx.Node]:
    return [user for user in node.users if _is_item(user)]


def _with_items(nodes: Sequence[torch.fx.Node]) -> list[torch.fx.Node]:
    """``nodes`` with the getitems unpacking their results and the ops their
    getitems unpack, in graph order: a piece never returns a tuple (which the
    importer cannot type) nor reads one."""
    chosen = set(nodes)
    for node in nodes:
        source = node.args[0] if _is_item(node) else node
        chosen.add(source)
        chosen.update(_items(source))
    order = {n: i for i, n in enumerate(nodes[0].graph.nodes)} if nodes else {}
    return sorted(chosen, key=order.__getitem__)


def _group_items(gm: torch.fx.GraphModule, decision: Decision) -> None:
    """An op returning several results runs where its getitems run, all in
    eager when one of them is."""
    for node in gm.graph.nodes:
        if node.op not in _CALLS or _is_item(node):
            continue
        group = [node, *_items(node)]
        reason = next((decision.eager[n.name] for n in group if n.name in decision.eager), None)
        if reason is not None:
            for member in group:
                decision.eager.setdefault(member.name, reason)


def known_eager(gm: torch.fx.GraphModule, options: BackendOptions) -> dict[str, str]:
    """The nodes of ``gm`` calling an op already found not to compile alone."""
    if not _KNOWN:
        return {}
    found = {}
    for node in gm.graph.nodes:
        if node.op in _CALLS and not _is_item(node):
            reason = _KNOWN.get(_known_key(node, options))
            if reason is not None:
                found[node.name] = reason
    return found


def _known_key(node: torch.fx.Node, options: BackendOptions) -> tuple:
    """The op and the dtypes it reads and makes (from the graph's fake values)."""
    def dtype(n: Any) -> str:
        value = n.meta.get("example_value", n.meta.get("val")) if isinstance(n, torch.fx.Node) \
            else None
        return str(getattr(value, "dtype", ""))

    return (op_name(node), tuple(dtype(a) for a in node.all_input_nodes), dtype(node),
            options.cache_key())


def split(gm: torch.fx.GraphModule, eager: Mapping[str, str]
          ) -> tuple[torch.fx.GraphModule, list[str]]:
    """``gm`` with every group of Nova nodes fused into a submodule
    (``fused_<i>``); the eager nodes stay at the top level. Returns the split
    module and its partitions' names."""
    partitioner = CapabilityBasedPartitioner(gm, NovaSupport(eager),
                                             allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    fused = partitioner.fuse_partitions(partitions)
    names = [n.target for n in fused.graph.nodes
             if n.op == "call_module" and str(n.target).startswith("fused_")]
    return fused, names


def eager_nodes(split_gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The calls the split module makes itself, in eager (not the partitions,
    nor the getitems that unpack a partition's results)."""
    result = []
    for node in split_gm.graph.nodes:
        if node.op not in _CALLS or (node.op == "call_module"
                                     and str(node.target).startswith("fused_")):
            continue
        if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node) \
                and str(node.args[0].target).startswith("fused_"):
            continue
        result.append(node)
    return result


# Probing ---------------------------------------------------------------------------------
def _probe(gm: torch.fx.GraphModule, nodes: list[torch.fx.Node],
           values: Mapping[torch.fx.Node, Any], options: BackendOptions,
           decision: Decision, compile_probe: ProbeCompiler) -> str | None:
    """Why ``nodes`` (topologically sorted) do not compile as a graph of their
    own, or None when they do."""
    single = len(nodes) == 1
    sub, inputs, _ = fuse_as_graphmodule(gm, _with_items(nodes), "NovaProbe")
    args = [values[n] for n in inputs]
    key = (sub.code, _signature(args), options.cache_key()) if single else None
    if key is not None and key in _PROBES:
        return _PROBES[key]
    decision.probes += 1
    reason = None
    try:
        compile_probe(sub, args)
    except Exception as error:
        if not can_fall_back(error):
            raise
        reason = fallback_reason(error).splitlines()[0]
    if key is not None:
        _PROBES[key] = reason
    logger.debug("nova: probe of %s: %s", [n.name for n in nodes], reason or "compiles")
    return reason


def _bisect(gm, nodes, values, options, decision, compile_probe
            ) -> tuple[torch.fx.Node, str] | None:
    """One node that fails alone, found by halving ``nodes``; None when every
    half compiles (the nodes fail only together)."""
    def fails(part):
        return _probe(gm, part, values, options, decision, compile_probe)

    while nodes:
        if len(nodes) == 1:
            reason = fails(nodes)
            return None if reason is None else (nodes[0], reason)
        half = len(nodes) // 2
        left, right = nodes[:half], nodes[half:]
        if fails(left) is not None:
            nodes = left
        elif fails(right) is not None:
            nodes = right
        else:
            return None
    return None


def compile_exported(sub: torch.fx.GraphModule, args: Sequence[Any],
                     options: BackendOptions) -> None:
    """Compiles ``sub`` at ``args`` as a Dynamo graph is compiled (torch.export)."""
    from nova.compiler.build import build_program
    from nova.compiler.options import TargetOptions
    from nova.frontend import import_model

    from nova.dynamo.graph import concrete

    imported = import_model(sub, *concrete(args))
    build_program(imported.mlir, TargetOptions(name=options.target, chips=options.chips),
                  double_buffer=options.double_buffer)


def _signature(args: Sequence[Any]) -> tuple:
    return tuple((tuple(a.shape), str(a.dtype)) if isinstance(a, torch.Tensor) else repr(a)
                 for a in args)


def _is_tensor_valued(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    return isinstance(value, (tuple, list)) and bool(value) and all(
        isinstance(v, torch.Tensor) for v in value)


def _same_line(node: torch.fx.Node, frame: Any) -> bool:
    from nova.frontend.export import frame_of_node

    mine = frame_of_node(node)
    if mine is None or mine.line != frame.line:
        return False
    try:
        return Path(mine.file).resolve() == Path(frame.file).resolve()
    except OSError:
        return mine.file == frame.file


def forget_probes() -> None:
    """Forgets every probe result (:func:`nova.dynamo.clear_cache`)."""
    _PROBES.clear()
    _KNOWN.clear()
