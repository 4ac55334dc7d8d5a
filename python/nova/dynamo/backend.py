"""``torch.compile(model, backend="nova")``: each graph Dynamo hands over is
compiled by the same frontend and pipeline as ``nova.compile`` and runs on
the simulated accelerator.

A backend is called as ``backend(gm, example_inputs, **kwargs)``;
``torch.compile(..., options={...})`` arrives as ``options=``. The graph is
compiled at its first call, for the shapes, dtypes and strides of that call,
and again for each new one (a dynamic graph from Dynamo's automatic-dynamic
is specialised this way); see :mod:`nova.dynamo.cache`. Parameters and
buffers are graph inputs (Dynamo lifts them), so every call binds their
current values. A graph Nova cannot compile runs in eager with one
:class:`NovaFallbackWarning` naming the op and the model's line, unless
``options={"fallback": False}``.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from nova.dynamo.cache import ProgramCache, program_cache
from nova.dynamo.errors import NovaFallbackWarning, can_fall_back, fallback_reason
from nova.dynamo.graph import (
    attribute_values,
    call_key,
    fingerprint,
    has_compute,
    lift_attributes,
    placeholders,
)
from nova.dynamo.options import BackendOptions

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
        from nova.dynamo.training import aot_backend
        return aot_backend(options)(gm, example_inputs)
    return NovaGraph(gm, example_inputs, options)


class NovaGraph:
    """One Dynamo graph: compiled per input signature at call time, or run in eager."""

    #: What the graph computes: "inference", or aot_autograd's "forward" / "backward".
    kind = "inference"

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 options: BackendOptions) -> None:
        self.original = gm
        self.gm, self.lifted = lift_attributes(gm)
        self.placeholders = placeholders(self.gm, example_inputs, self.lifted)
        self.options = options
        self.name = str(getattr(gm, "meta", {}).get("dynamo_compile_id", "") or "graph")
        self.fingerprint = fingerprint(self.gm)
        self.compute = has_compute(self.gm)

    def __call__(self, *args: Any) -> Any:
        args = (*args, *attribute_values(self.original, self.lifted))
        program = self._program(args) if self.compute else None
        if program is None:
            return self.gm(*args)
        return program(*args)

    @property
    def label(self) -> str:
        return self.name if self.kind == "inference" else f"{self.name} ({self.kind})"

    # Compiling ---------------------------------------------------------------------------
    def _program(self, args: Sequence[Any]) -> Any:
        cache = program_cache()
        options_key = self.options.cache_key()
        if (self.fingerprint, options_key) in cache.failures:
            return None
        key = (self.fingerprint, call_key(args), options_key)
        program = cache.programs.get(key)
        if program is not None:
            cache.hits += 1
            return program
        try:
            program = self._compile(args, cache)
        except Exception as error:
            if not self.options.fallback or not can_fall_back(error):
                raise
            reason = fallback_reason(error)
            cache.failures[(self.fingerprint, options_key)] = reason
            _warn(f"nova: Dynamo graph {self.label} runs in eager: {reason}",
                  getattr(error, "frame", None))
            return None
        cache.programs[key] = program
        return program

    def _compile(self, args: Sequence[Any], cache: ProgramCache) -> Any:
        logger.info("nova: compiling Dynamo graph %s for %s", self.name, call_key(args))
        if self.options.parallel:
            return self._compile_parallel(args, cache)
        from nova.compiler.compile import compile_linalg
        from nova.compiler.options import TargetOptions
        from nova.frontend import import_model
        from nova.frontend.state import param_arrays
        from nova.runtime.program import CompiledProgram

        imported = import_model(self.gm, *args)
        cache.imports += 1
        options_key = self.options.cache_key()
        binary_key = cache.binary_key(imported.mlir, options_key)
        result = cache.binaries.get(binary_key)
        if result is None:
            result = compile_linalg(
                imported.mlir, TargetOptions(name=self.options.target, chips=self.options.chips),
                dump_dir=self._dump_dir(), double_buffer=self.options.double_buffer)
            cache.count_compile(self.kind)
            cache.binaries[binary_key] = result
        return CompiledProgram(result.binary, param_arrays(imported), stages=result.stages,
                               binding=imported.binding)

    def _compile_parallel(self, args: Sequence[Any], cache: ProgramCache) -> Any:
        from nova.api import compile as nova_compile

        program = nova_compile(self.gm, *args, target=self.options.target,
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
