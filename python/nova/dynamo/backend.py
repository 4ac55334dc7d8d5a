"""``torch.compile(model, backend="nova")``: each graph Dynamo hands over is
compiled by the same frontend and pipeline as ``nova.compile`` and runs on
the simulated accelerator.

A backend is called as ``backend(gm, example_inputs, **kwargs)``;
``torch.compile(..., options={...})`` arrives as ``options=``. The graph is
compiled at its first call, for the shapes, dtypes and strides of that call,
and again for each new one (a dynamic graph from Dynamo's automatic-dynamic
is specialised this way); see :mod:`nova.dynamo.cache`. Parameters and
buffers are graph inputs (Dynamo lifts them), so every call binds their
current values. In a graph Nova cannot compile, the ops it cannot lower run
in eager and the rest on Nova, split by torch.fx's capability-based
partitioner (:mod:`nova.dynamo.partition`), with one
:class:`NovaFallbackWarning` per graph naming the ops, why, and the model's
lines, unless ``options={"fallback": False}``. Programs and those decisions
are also cached on disk (:mod:`nova.dynamo.disk_cache`); each graph's calls,
simulated time, hits and eager ops are in :func:`nova.dynamo.report`.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from nova.dynamo.cache import ProgramCache, program_cache
from nova.dynamo.disk_cache import (entry_key, load_decision, load_program, save_decision,
                                    save_program)
from nova.dynamo.errors import NovaFallbackWarning, can_fall_back, fallback_reason
from nova.dynamo.graph import (
    attribute_values,
    device_hooks,
    recorded_results,
    call_key,
    concrete,
    copy_graph,
    fingerprint,
    has_compute,
    lift_attributes,
    placeholders,
)
from nova.dynamo.options import BackendOptions
from nova.dynamo.partition import (Decision, decide, eager_nodes, known_eager, op_name,
                                   record_values, split)
from nova.dynamo.stats import GraphStats
from nova.frontend.export import frame_of_node

logger = logging.getLogger(__name__)


def backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
            **kwargs: Any) -> Callable[..., Any]:
    """The ``nova`` Dynamo backend (registered under the ``torch_dynamo_backends``
    entry point). ``kwargs`` holds torch.compile's ``options`` (see
    :class:`BackendOptions`) and ``mode``, which Nova does not use."""
    unknown = set(kwargs) - {"options", "mode"}
    if unknown:
        raise TypeError(f"nova backend: unexpected argument(s) {sorted(unknown)}")
    options = BackendOptions.from_dict(kwargs.get("options"))
    if torch.is_grad_enabled() and any(isinstance(value, torch.Tensor) and value.requires_grad
                                       for value in example_inputs):
        from nova.dynamo.training import train_backend
        return train_backend(gm, example_inputs, options)
    return NovaGraph(gm, example_inputs, options)


class NovaGraph:
    """One Dynamo graph: compiled per input signature at call time; when Nova
    cannot compile it, split so that only the ops Nova cannot lower run in
    eager (:mod:`nova.dynamo.partition`), or as a last resort run in eager."""

    #: What the graph computes: "inference", or aot_autograd's "forward" / "backward".
    kind = "inference"
    #: Whether a graph that fails is split per op (the aot_autograd graphs are not yet).
    splittable = True
    #: How many times a partition that fails is split again before it runs in eager.
    max_depth = 2

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 options: BackendOptions, *, parent: "NovaGraph | None" = None,
                 name: str | None = None) -> None:
        self.original = gm
        self.gm, self.lifted = lift_attributes(gm)
        self.placeholders = placeholders(self.gm, example_inputs, self.lifted)
        self.options = options
        self.name = name or str(getattr(gm, "meta", {}).get("dynamo_compile_id", "") or "graph")
        self.fingerprint = fingerprint(self.gm)
        self.compute = has_compute(self.gm)
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        #: Nodes that run in eager whatever compiles (FX name -> why; see
        #: nova.dynamo.training.paired_in_eager).
        self.forced: dict[str, str] = {}
        #: The graph split into Nova partitions and eager ops, once decided.
        self.split: torch.fx.GraphModule | None = None
        self._stats: GraphStats | None = None

    def __call__(self, *args: Any) -> Any:
        args = (*args, *attribute_values(self.original, self.lifted))
        if self.parent is None:
            self.stats.calls += 1
        if self.split is None and self.compute:
            device = device_hooks(args)
            program = self._program(args)
            if program is not None:
                result = (device.run(self, program, args,
                                     recorded=recorded_results([self.gm.graph.output_node().args[0]]))
                          if device else program(*args))
                self._record(program)
                return result
        if self.split is not None:
            return self.split(*args)
        return self.gm(*args)

    @property
    def label(self) -> str:
        return self.name if self.kind == "inference" else f"{self.name} ({self.kind})"

    @property
    def stats(self) -> GraphStats:
        """This graph's row of the report (a partition counts in its graph's row)."""
        if self.parent is not None:
            return self.parent.stats
        if self._stats is None:
            graphs = program_cache().graphs
            label, count = self.label, 1
            while label in graphs:  # the same graph compiled again (torch._dynamo.reset)
                count += 1
                label = f"{self.label} #{count}"
            self._stats = graphs[label] = GraphStats(label, self.kind)
        return self._stats

    def _record(self, program: Any) -> None:
        report = getattr(program, "report", None)
        if report is not None:
            self.stats.sim_ns += float(report.time_ns)
        traffic = getattr(program, "last_traffic", None)
        if traffic is not None:
            self.stats.add_traffic(traffic)

    # Compiling ---------------------------------------------------------------------------
    def _program(self, args: Sequence[Any]) -> Any:
        """The program for this call, or None when the graph does not run whole
        on Nova (then ``split`` is set, or the graph runs in eager)."""
        cache = program_cache()
        options_key = self.options.cache_key()
        if (self.fingerprint, options_key) in cache.failures:
            return None
        signature = call_key(args)
        key = (self.fingerprint, signature, options_key)
        program = cache.programs.get(key)
        if program is not None:
            cache.hits += 1
            self.stats.memory_hits += 1
            if self.parent is None:  # a new graph whose program another compiled
                self.stats.partitions = max(self.stats.partitions, 1)
            return program
        decision = cache.decisions.get((self.fingerprint, options_key))
        if decision is not None:
            self._apply(decision)
            return None
        disk_key = (entry_key(self.fingerprint, signature, options_key, self.options.target)
                    if self.options.disk_cache else None)
        if disk_key is not None:
            program = self._from_disk(disk_key)
            if program is not None:
                cache.programs[key] = program
                return program
            if self.split is not None or (self.fingerprint, options_key) in cache.failures:
                return None  # a per-op decision read from the disk
        if self.splittable and self.depth < self.max_depth and (
                self.forced or known_eager(self.gm, self.options)):
            # An op this process already found Nova cannot lower: split first.
            self._fall_back(args, None, disk_key)
            return None
        try:
            program = self._compile(args, cache)
        except Exception as error:
            if not self.options.fallback or not can_fall_back(error):
                raise
            self._fall_back(args, error, disk_key)
            return None
        self.stats.compiles += 1
        if self.parent is None:
            self.stats.partitions = max(self.stats.partitions, 1)
        cache.programs[key] = program
        if disk_key is not None:
            save_program(disk_key, program)
        return program

    def _from_disk(self, disk_key: str) -> Any:
        """The program (or per-op decision) a process before this one saved."""
        cache = program_cache()
        program = load_program(disk_key)
        if program is not None:
            cache.disk_hits += 1
            self.stats.disk_hits += 1
            if self.parent is None:
                self.stats.partitions = max(self.stats.partitions, 1)
            logger.info("nova: Dynamo graph %s: read from the disk cache", self.label)
            return program
        saved = load_decision(disk_key) if self.splittable else None
        decision = Decision.from_json(saved) if saved is not None else None
        if decision is not None:
            logger.info("nova: Dynamo graph %s: per-op fallback read from the disk cache",
                        self.label)
            cache.decisions[(self.fingerprint, self.options.cache_key())] = decision
            self._apply(decision)
        return None

    def _fall_back(self, args: Sequence[Any], error: Exception | None,
                   disk_key: str | None) -> None:
        """Splits the graph around what Nova cannot compile (or, when that cannot
        help, runs it in eager as a whole). ``error`` is the whole graph's
        compile error, None when known ops decide without one."""
        if not self.splittable or self.depth >= self.max_depth:
            self._run_in_eager(fallback_reason(error), getattr(error, "frame", None))
            return
        values = record_values(self.gm, args)
        decision = decide(self.gm, values, error, self.options, self._compile_probe,
                          forced=self.forced)
        program_cache().probes += decision.probes
        if decision.whole is not None:
            decision.whole = fallback_reason(error)
        program_cache().decisions[(self.fingerprint, self.options.cache_key())] = decision
        if disk_key is not None:
            save_decision(disk_key, decision.to_json())
        self._apply(decision, getattr(error, "frame", None))

    def _apply(self, decision: Decision, frame: Any = None) -> None:
        if decision.whole is not None:
            self._run_in_eager(decision.whole, frame)
            return
        if self.depth >= self.max_depth:  # a decision cached for the same graph elsewhere
            self._run_in_eager("its pieces do not compile", frame)
            return
        # The partitioner rewrites the graph it is given: a copy (node names kept).
        split_gm, names = split(torch.fx.GraphModule(self.gm, copy_graph(self.gm.graph)),
                                decision.eager)
        if not eager_nodes(split_gm) and len(names) == 1:
            # Nothing left for eager: the one partition would be this graph again.
            self._run_in_eager(decision.whole or "it does not compile whole", frame)
            return
        by_name = {p.node_name: p for p in self.placeholders}
        for name in names:
            child = self._child(getattr(split_gm, name), f"{self.name}.{name}")
            child.placeholders = [by_name.get(p.node_name, p) for p in child.placeholders]
            setattr(split_gm, name, _Partition(child))
        self.split = split_gm
        eager = eager_nodes(split_gm)
        reasons = [(op_name(n), decision.eager.get(n.name, "outside every partition"))
                   for n in eager]
        # A partition split again is replaced by its own partitions.
        self.stats.partitions += len(names) - (self.parent is not None)
        self.stats.eager_ops.extend(reasons)
        logger.info("nova: Dynamo graph %s split: %d partition(s) on Nova, in eager: %s",
                    self.label, len(names), ", ".join(op for op, _ in reasons) or "nothing")
        if not reasons:
            return
        ops = "; ".join(f"{op} ({why})" for op, why in reasons)
        count = f"{len(reasons)} op{' runs' if len(reasons) == 1 else 's run'} in eager"
        frames = [frame_of_node(n) for n in eager]
        lines = "".join(f"\n{f}" for f in dict.fromkeys(f for f in frames if f is not None))
        _warn(f"nova: Dynamo graph {self.label}: {count}, the rest on Nova in "
              f"{len(names)} partition{'s' if len(names) != 1 else ''}: {ops}{lines}",
              next((f for f in frames if f is not None), None))

    def _child(self, gm: torch.fx.GraphModule, name: str) -> "NovaGraph":
        """A partition of this graph, compiled as this graph would be."""
        return NovaGraph(gm, [], self.options, parent=self, name=name)

    def _compile_probe(self, gm: torch.fx.GraphModule, args: Sequence[Any]) -> None:
        from nova.dynamo.partition import compile_exported

        compile_exported(gm, args, self.options)

    def _run_in_eager(self, reason: str, frame: Any) -> None:
        cache = program_cache()
        cache.failures[(self.fingerprint, self.options.cache_key())] = reason
        if self.parent is None:
            self.stats.eager_reason = reason.splitlines()[0]
        else:
            self.stats.partitions -= 1
            self.stats.eager_ops.append((f"partition {self.name}", reason.splitlines()[0]))
        _warn(f"nova: Dynamo graph {self.label} runs in eager: {reason}", frame)

    def _compile(self, args: Sequence[Any], cache: ProgramCache) -> Any:
        logger.info("nova: compiling Dynamo graph %s for %s", self.name, call_key(args))
        if self.options.parallel:
            return self._compile_parallel(args, cache)
        from nova.frontend import import_model
        from nova.frontend.state import param_arrays

        imported = import_model(self.gm, *concrete(args))
        cache.imports += 1
        return self._build(imported.mlir, cache, params=param_arrays(imported),
                           binding=imported.binding)

    def _build(self, mlir: str, cache: ProgramCache, **bound: Any) -> Any:
        """The program of imported ``mlir`` under this graph's options; its binary
        is compiled once per text and options (``cache.binaries``)."""
        from nova.compiler.build import build_program
        from nova.compiler.options import TargetOptions

        key = cache.binary_key(mlir, self.options.cache_key())
        compiled = key in cache.binaries
        program = build_program(
            mlir, TargetOptions(name=self.options.target, chips=self.options.chips),
            dump_dir=self._dump_dir(), double_buffer=self.options.double_buffer,
            cache=cache.binaries, cache_key=key, **bound)
        if not compiled:
            cache.count_compile(self.kind)
        return program

    def _compile_parallel(self, args: Sequence[Any], cache: ProgramCache) -> Any:
        from nova.api import compile as nova_compile

        program = nova_compile(self.gm, *concrete(args), target=self.options.target,
                               mesh=self.options.mesh, plan=self._plan(),
                               dump_dir=self._dump_dir(),
                               double_buffer=self.options.double_buffer)
        cache.imports += 1
        cache.count_compile(self.kind)
        return program

    def _plan(self) -> Any:
        """The user's plan in the names of this graph's arguments: the exported
        graph takes every placeholder positionally (``input<i>``), state
        included; state the plan does not name is replicated."""
        plan = self.options.plan
        named = plan.placements
        placements = {}
        for i, placeholder in enumerate(self.placeholders):
            if placeholder.name in named:
                placements[f"input{i}"] = named[placeholder.name]
            elif placeholder.is_state:
                placements[f"input{i}"] = {}
        return dataclasses.replace(plan, placements=placements)

    def _dump_dir(self) -> Path | None:
        if self.options.dump_dir is None:
            return None
        suffix = "" if self.kind == "inference" else f"_{self.kind}"
        return Path(self.options.dump_dir) / f"graph_{self.name.replace('/', '_')}{suffix}"


def _warn(message: str, frame: Any) -> None:
    """The fallback warning, located at the model's line when it is known
    (the caller's frame is inside Dynamo's generated code)."""
    if frame is None:
        warnings.warn(message, NovaFallbackWarning, stacklevel=4)
        return
    warnings.warn_explicit(message, NovaFallbackWarning, filename=frame.file,
                           lineno=frame.line, module=Path(frame.file).stem)


class _Partition(torch.nn.Module):
    """A partition of a split graph, as the submodule its call_module node calls."""

    def __init__(self, graph: NovaGraph) -> None:
        super().__init__()
        self.graph = graph

    def forward(self, *args: Any) -> Any:
        return self.graph(*args)
