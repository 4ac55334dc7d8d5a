"""The Python entry points: compile a PyTorch model, run it, save and load it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from nova.compiler.build import build_program
from nova.compiler.options import TargetOptions
from nova.frontend import import_model
from nova.frontend.io_names import named_mlir
from nova.frontend.keywords import check_model_keywords
from nova.frontend.state import param_arrays
from nova.runtime.program import CompiledProgram


def compile(model: torch.nn.Module, *example_args: Any, target: str = "nova-t1",
            chips: int = 1, dump_dir: str | Path | None = None,
            double_buffer: bool = True, mesh: Any = None,
            plan: Any = None, tile_search: bool | None = None,
            **example_kwargs: Any) -> CompiledProgram:
    """Exports ``model`` at ``example_args`` / ``example_kwargs`` and compiles
    it for ``target``.

    The model's inputs may be positional or keyword arguments
    (``nova.compile(model, input_ids=ids, attention_mask=mask)``; the names
    of Nova's own options are taken). A keyword that is neither an option nor
    an input of the model's forward (a misspelt ``tragte=``) is a
    ``NovaOptionError`` naming the valid options. The program is called the same way
    and returns what the model returns — a tensor, a tuple, a dict, a Hugging
    Face ``ModelOutput`` — with only tensors going through the accelerator.
    Python scalar inputs are baked in at their export value (calling with
    another value is an error); ``None`` passes through. Inputs the model
    updates in place are updated in the caller's tensors after each run.
    Integer and bool tensors keep their dtype. Shapes come from
    the exported program: the model is not run on the host.

    ``chips`` is the number of chips of the target system the program runs on
    (1 by default; 0 keeps the target file's chip count); more than the target
    has is a ``nova.parallel.ChipCountError``. ``model`` may be a function
    (wrapped in a module without state).
    The parameters' current values are bound into the returned program, which
    is called with the model's inputs only. ``dump_dir`` receives the IR of
    every stage (``0-linalg.mlir`` ... ``3-binary.nova``). ``double_buffer``
    prefetches each loop's next tile (nova-double-buffer). ``tile_search``
    picks nova-tile's limits by simulating a few candidates, cached per
    program and target (None: the ``NOVA_TILE_SEARCH`` knob, off by default;
    :mod:`nova.compiler.tile_search`).
    Raises NovaModelCompileError naming the failing op and the model's source
    line when the model cannot be compiled.

    With a ``mesh`` (``nova.parallel.Mesh``) and a ``plan``
    (``nova.parallel.ParallelPlan``) the model is partitioned over
    ``mesh.size`` chips, the program carrying its split over them (see
    ``nova.parallel.compile_parallel``; ``chips`` is then unused), called
    the same way as a single-chip program.
    """
    from nova.parallel.errors import ParallelError
    from nova.parallel.target_chips import check_chips

    check_model_keywords("nova.compile", model, example_kwargs, COMPILE_OPTIONS)
    if mesh is not None or plan is not None:
        if mesh is None or plan is None:
            raise ParallelError("nova.compile: mesh and plan go together")
        from nova.parallel.compile import compile_parallel
        return compile_parallel(model, *example_args, mesh=mesh, plan=plan, target=target,
                                dump_dir=dump_dir, double_buffer=double_buffer,
                                **example_kwargs)
    if isinstance(chips, bool) or not isinstance(chips, int) or chips < 0:
        raise ParallelError(f"chips must be a non-negative integer, got {chips!r}")
    options = TargetOptions(name=target, chips=chips)
    if chips:
        check_chips(target, chips, f"chips={chips}")
    imported = import_model(model, *example_args, **example_kwargs)
    return build_program(named_mlir(imported, forward=getattr(model, "forward", model)),
                         options, params=param_arrays(imported), binding=imported.binding,
                         state_names=[spec.name for spec in imported.params], dump_dir=dump_dir, double_buffer=double_buffer,
                         tile_search=tile_search)


#: The keywords nova.compile takes itself (the rest go to the model).
COMPILE_OPTIONS = ("target", "chips", "dump_dir", "double_buffer", "mesh", "plan", "tile_search")


def export_and_run(model: torch.nn.Module, *args: Any, target: str = "nova-t1",
                   **kwargs: Any) -> Any:
    """Compiles ``model`` at ``args`` / ``kwargs`` and runs it once on the simulator."""
    check_model_keywords("nova.export_and_run", model, kwargs, ("target",))
    return compile(model, *args, target=target, **kwargs)(*args, **kwargs)
