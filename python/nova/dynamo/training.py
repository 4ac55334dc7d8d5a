"""Training through ``torch.compile(backend="nova")``: aot_autograd splits
each Dynamo graph into a forward and a backward graph (min-cut
rematerialisation partitioner) and Nova compiles both, so ``loss.backward()``
runs Nova's backward program and ``torch.optim`` steps the parameters on the
host.

aot_autograd's graphs are already aten-level, functional and decomposed
(with Nova's decomposition table), with every tensor a placeholder: they are
imported by the frontend's :func:`nova.frontend.export.import_fx_graph` (the
import ``nova.compile_train_step`` uses) and compiled by the same pipeline.
The backward graph returns ``None`` for inputs that need no gradient; those
are put back around the program's results.

The tensors the forward saves for the backward stay on the simulated chip:
the forward program runs with ``keep=`` their positions (aot_autograd's
``fw_metadata`` says which outputs they are), so they are not read back,
and aot_autograd saves :class:`~nova.runtime.device.DeviceTensor` handles
(no host data; any torch op on one is a clear error). The backward program
takes the handles as inputs by an HBM-to-HBM copy from the forward's output
buffers (charged as a DMA in the backward's simulated time), not written by
the host; a saved tensor is freed when autograd drops it after the
backward. The user's outputs are read back as usual, also when the same
value is saved. When the backward does not run whole on Nova (split, or in
eager), the handles are read back to the host first.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from nova.compiler.errors import NovaModelCompileError
from nova.dynamo.backend import NovaGraph
from nova.dynamo.cache import ProgramCache
from nova.dynamo.graph import (attribute_values, call_key, copy_graph, device_hooks,
                               recorded_results)
from nova.dynamo.options import BackendOptions
from nova.dynamo.partition import narrow_in_eager
from nova.dynamo.rewrite import draw_seed, rewrite_for_training
from nova.runtime.device import DeviceTensor, host_values


class NovaTrainingGraphError(NovaModelCompileError):
    """An aot_autograd graph that the training path does not compile (the
    graph then runs in eager, with the fallback warning)."""


def train_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                  options: BackendOptions) -> Callable[..., Any]:
    """A Dynamo graph that needs gradients: rewritten (SDPA in primitive ops,
    dropout from a seed input; :mod:`nova.dynamo.rewrite`), then compiled by
    :func:`aot_backend`. A graph that draws dropout masks gets a fresh seed
    at every call."""
    name = getattr(gm, "meta", {}).get("dynamo_compile_id")
    rewritten, seeded = rewrite_for_training(gm)
    if not seeded:
        return aot_backend(options, str(name) if name else None)(rewritten, example_inputs)
    compiled = aot_backend(options, str(name) if name else None)(
        rewritten, [*example_inputs, draw_seed()])
    def run(*args: Any) -> Any:
        return compiled(*args, draw_seed())
    return run


def aot_backend(options: BackendOptions, name: str | None = None) -> Callable[..., Any]:
    """aot_autograd with Nova compiling the forward and the backward graph
    (``name``: the Dynamo graph's id, which names both in the report)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    from nova.frontend.decompositions import decomposition_table

    forced: dict[str, dict[str, str]] = {"forward": {}, "backward": {}}

    def partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> Any:
        forward, backward = min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)
        forced["forward"], forced["backward"] = paired_in_eager(forward, backward)
        return forward, backward

    def compiler(kind: str):
        def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]):
            graph = AotGraph(gm, example_inputs, options, kind, name=name)
            graph.forced = dict(forced[kind])
            graph.narrow_forced = narrow_in_eager(gm)
            return make_boxed_func(graph)
        return compile_graph

    return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                        partition_fn=partition, decompositions=training_table(decomposition_table()))


def training_table(table: dict[Any, Callable]) -> dict[Any, Callable]:
    """``table`` without the decompositions of forward ops returning several
    results whose backward kernel it does not decompose: decomposed, such an op makes its results its
    own way (torch-mlir's ``_scaled_dot_product_flash_attention_for_cpu``
    returns the attention weights where the kernel's logsumexp goes), and the
    backward kernel, in eager, would read them as its own forward's."""
    kept = {}
    for op, decompose in table.items():
        several = len(getattr(getattr(op, "_schema", None), "returns", ())) > 1
        backward = _backward_of(op) if several else None
        if backward is not None and not any(o in table for o in _overloads(backward)):
            continue
        kept[op] = decompose
    return kept


def _backward_of(op: Any) -> Any:
    """``aten.<name>_backward`` for ``aten.<name>.<overload>``, or None."""
    namespace = getattr(op, "namespace", None)
    if namespace is None:
        return None
    return getattr(getattr(torch.ops, namespace), f"{_base(op)}_backward", None)


def _overloads(packet: Any) -> list[Any]:
    return [getattr(packet, name) for name in packet.overloads()]


def _base(target: Any) -> str:
    """``aten.foo.default`` -> ``foo``."""
    return str(getattr(target, "__name__", target)).split(".")[0]


def paired_in_eager(forward: torch.fx.GraphModule, backward: torch.fx.GraphModule
                    ) -> tuple[dict[str, str], dict[str, str]]:
    """The forward and backward nodes that run in eager so that an eager
    backward kernel reads what its own forward saved: a forward op ``f``
    returning several results (an output and what only its backward kernel
    understands, e.g. a fused attention's logsumexp) whose results
    ``f_backward`` reads, and that backward op, both in eager, whatever Nova
    compiles (otherwise one could run on Nova and the other read its results)."""
    saved = {n.name: n for n in forward.graph.nodes}
    fw_forced: dict[str, str] = {}
    bw_forced: dict[str, str] = {}
    for placeholder in backward.graph.find_nodes(op="placeholder"):
        item = saved.get(placeholder.name)
        if item is None or item.target is not operator.getitem:
            continue
        source = item.args[0]
        if not isinstance(source, torch.fx.Node) or source.op != "call_function":
            continue
        for user in placeholder.users:
            if user.op == "call_function" and _base(user.target) == f"{_base(source.target)}_backward":
                why = (f"its results are read by {user.target} in the backward, which runs "
                       f"in eager with it")
                fw_forced[source.name] = why
                bw_forced[user.name] = f"it reads what {source.target} saved, which runs in eager"
    return fw_forced, bw_forced


class AotGraph(NovaGraph):
    """An aot_autograd forward or backward graph, compiled at its first call."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 options: BackendOptions, kind: str, *, parent: NovaGraph | None = None,
                 name: str | None = None) -> None:
        super().__init__(gm, example_inputs, options, parent=parent, name=name)
        self.kind = kind
        from torch._guards import TracingContext

        context = TracingContext.try_get()
        compile_id = getattr(context, "compile_id", None) if context is not None else None
        if compile_id is not None and name is None:
            self.name = str(compile_id)
        returned = self.gm.graph.output_node().args[0]
        # A partition of a split graph may return one value (aot_autograd's own, a tuple).
        self.single = not isinstance(returned, (tuple, list))
        #: Whether some input has a symbolic size (Dynamo's automatic-dynamic or
        #: mark_dynamic): each call signature is then specialised (:meth:`_specialised`).
        self.symbolic = any(node.op == "placeholder" and not _concrete_tensor(node)
                            for node in self.gm.graph.nodes)
        self._layouts: dict[tuple, _Layout] = {}
        #: Positions of the forward graph's results that are saved for the backward
        #: (kept on the chip); none for a backward or a partition of a split graph.
        self.saved: frozenset[int] = frozenset()
        if kind == "forward" and parent is None and context is not None:
            self.saved = _saved_positions(getattr(context, "fw_metadata", None),
                                          len(returned) if not self.single else 1)

    #: The nodes that make or read a uint8 / int16 tensor (name -> why): on the
    #: nova device they run in eager; on the host the program carries them in
    #: int32 (nova.frontend.narrow_ints) and the call converts at its boundary.
    narrow_forced: dict[str, str] = {}

    def __call__(self, *args: Any) -> Any:
        # Constants aot_autograd keeps as attributes (lifted to trailing inputs).
        args = (*args, *attribute_values(self.original, self.lifted))
        if self.parent is None:
            self.stats.calls += 1
        device = device_hooks(args)
        if self.narrow_forced and (device or self.parent is not None):
            self.forced = {**self.narrow_forced, **self.forced}
            self.narrow_forced = {}
        narrow = bool(self.narrow_forced) and self.split is None
        program = self._program(args) if self.split is None else None
        if program is None:
            # Split per op (the eager ops between Nova partitions), or all in eager:
            # saved tensors kept on the chip are read back for them.
            return (self.split or self.gm)(*self._on_host(args))
        layout = self._layout(args)
        inputs = [args[i] for i in layout.inputs]
        if narrow:  # the program takes uint8 / int16 values as int32
            inputs = [a.to(torch.int32) if a.dtype in _NARROW else a for a in inputs]
        if device:
            # On the nova device every result is a device tensor already: none is kept apart.
            results = device.run(self, program, inputs, call=program.run,
                                 recorded=recorded_results([layout.returned[i] for i in layout.kept]))
        else:
            # A narrow result comes back to the host, converted (never kept as int32).
            keep = [i for i, position in enumerate(layout.kept) if position in self.saved
                    and not (narrow and _narrow_node(layout.returned[position]))]
            results = program.run(*inputs, keep=keep)
        self._record(program)
        full: list[Any] = list(layout.returned)
        for position, result in zip(layout.kept, results):
            node = layout.returned[position]
            if narrow and _narrow_node(node):
                result = result.to(node.meta["val"].dtype)
            full[position] = result
        return full[0] if self.single else tuple(full)

    # Shapes --------------------------------------------------------------------------------
    def _layout(self, args: Sequence[Any]) -> "_Layout":
        """Which arguments the program takes and where its results go, for this call."""
        signature = call_key(args)
        layout = self._layouts.get(signature)
        if layout is None:
            gm = self._specialised(args) if self.symbolic else self.gm
            layout = self._layouts[signature] = _Layout.of(gm, args)
        return layout

    def _specialised(self, args: Sequence[Any]) -> torch.fx.GraphModule:
        """The graph retraced at this call's concrete sizes: its SymInt inputs
        become constants (and are dropped), so Nova compiles static shapes."""
        from torch.fx.experimental.proxy_tensor import make_fx

        # Fake tracing reads no data: a kept tensor stands in by an empty one.
        args = [torch.empty_strided(a.shape, a.stride(), dtype=a.dtype)
                if isinstance(a, DeviceTensor) else a for a in args]
        with torch.no_grad():
            gm = make_fx(self.gm, tracing_mode="fake")(*args)
        for node, value in zip([n for n in gm.graph.nodes if n.op == "placeholder"], args):
            if not isinstance(value, torch.Tensor):
                if node.users:
                    raise NovaTrainingGraphError(
                        f"the {self.kind} graph uses its integer input {node.name} after "
                        f"specialisation; compile with torch.compile(..., dynamic=False)")
                gm.graph.erase_node(node)
        gm.recompile()
        return gm

    def _fall_back(self, args: Sequence[Any], error: Exception | None,
                   disk_key: str | None) -> None:
        if isinstance(error, NovaTrainingGraphError):  # the graph as a whole is the problem
            self._run_in_eager(str(error), None)
            return
        if self.narrow_forced:  # a partition is not widened: its narrow ops run in eager
            self.forced = {**self.narrow_forced, **self.forced}
            self.narrow_forced = {}
        # Deciding the split runs the graph in eager: it needs the saved tensors' data.
        super()._fall_back(self._on_host(args), error, disk_key)

    def _on_host(self, args: Sequence[Any]) -> list[Any]:
        """``args`` with the saved tensors kept on the chip read back (counted
        in this graph's host reads)."""
        self.stats.traffic.host_read += sum(a.device_value.nbytes
                                    for a in args if isinstance(a, DeviceTensor))
        return host_values(args)

    def _child(self, gm: torch.fx.GraphModule, name: str) -> "AotGraph":
        return AotGraph(gm, [], self.options, self.kind, parent=self, name=name)

    def _compile_probe(self, gm: torch.fx.GraphModule, args: Sequence[Any]) -> None:
        """A piece of an aot_autograd graph, imported as the graph itself is."""
        from nova.compiler.build import build_program
        from nova.compiler.options import TargetOptions
        mlir = _import(gm.graph, narrow=False)
        build_program(mlir, TargetOptions(name=self.options.target, chips=self.options.chips),
                      double_buffer=self.options.double_buffer)

    def _compile(self, args: Sequence[Any], cache: ProgramCache) -> Any:

        if self.options.parallel:
            raise NovaTrainingGraphError(
                "training graphs compile for one chip; the mesh and plan options apply to "
                "inference (under torch.no_grad())")
        gm = self._specialised(args) if self.symbolic else self.gm
        for node in gm.graph.nodes:
            if node.op == "placeholder" and not _concrete_tensor(node):
                raise NovaTrainingGraphError(
                    f"the {self.kind} graph takes {node.name} with a symbolic shape or no "
                    f"tensor value; compile with torch.compile(..., dynamic=False)")
        layout = self._layouts.setdefault(call_key(args), _Layout.of(gm, args))
        graph = gm.graph
        output = graph.output_node()
        saved = output.args
        output.args = (tuple(layout.returned[i] for i in layout.kept),)
        try:
            mlir = _import(graph, narrow=bool(self.narrow_forced))
        finally:
            output.args = saved
        cache.imports += 1
        return self._build(mlir, cache)


def _import(graph: torch.fx.Graph, narrow: bool) -> str:
    """A copy of ``graph`` (the graph itself still runs in eager if the compile
    fails) with every compile path's idiom rewrites (:mod:`nova.frontend.idioms`),
    uint8 / int16 carried in int32 if ``narrow``, imported by torch-mlir."""
    from nova.frontend.export import import_fx_graph
    from nova.frontend.idioms import rewrite_idioms

    lowered = copy_graph(graph)
    rewrite_idioms(lowered)
    if narrow:
        from nova.frontend.narrow_ints import widen_narrow_ints

        widen_narrow_ints(lowered)
    return import_fx_graph(lowered, func_name="forward")[0]


@dataclass(frozen=True)
class _Layout:
    """A program's view of a call: the positions of the arguments it takes
    (the tensors), the graph's results with the nodes the program computes at
    ``kept`` (the others are constants: ``None`` gradients, a size made
    static by specialisation)."""

    inputs: tuple[int, ...]
    returned: tuple[Any, ...]
    kept: tuple[int, ...]

    @classmethod
    def of(cls, gm: torch.fx.GraphModule, args: Sequence[Any]) -> "_Layout":
        returned = gm.graph.output_node().args[0]
        returned = tuple(returned) if isinstance(returned, (tuple, list)) else (returned,)
        kept = tuple(i for i, value in enumerate(returned) if isinstance(value, torch.fx.Node))
        inputs = tuple(i for i, value in enumerate(args) if isinstance(value, torch.Tensor))
        return cls(inputs, returned, kept)


def _saved_positions(metadata: Any, count: int) -> frozenset[int]:
    """The forward graph's results aot_autograd saves for the backward (its
    ``tensors_saved_for_backwards_slice``); none when it is not known."""
    try:
        return frozenset(range(count)[metadata.tensors_saved_for_backwards_slice])
    except (AttributeError, AssertionError, TypeError):
        return frozenset()


def _concrete_tensor(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and all(isinstance(d, int) for d in value.shape)


_NARROW = (torch.uint8, torch.int16)


def _narrow_node(node: Any) -> bool:
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return isinstance(value, torch.Tensor) and value.dtype in _NARROW
