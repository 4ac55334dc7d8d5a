"""``nova.compile`` split into the steps ``nova compile`` reports progress on.

Same result as :func:`nova.api.compile`; the steps are yielded one by one so the
command line can print each as it finishes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import torch

from nova.compiler.build import build_program
from nova.compiler.options import TargetOptions
from nova.frontend import import_model
from nova.frontend.io_names import named_mlir
from nova.frontend.state import param_arrays
from nova.runtime.program import CompiledProgram


def compile_stages(model: torch.nn.Module, *example_args: torch.Tensor, target: str = "nova-t1",
                   chips: int = 1, dump_dir: str | Path | None = None,
                   ) -> Iterator[tuple[str, CompiledProgram | None]]:
    """Yields ``("exporting", None)`` (torch-mlir), ``("compiling", None)``
    (nova-opt and nova-translate) and ``("encoding", program)`` (binding the
    state: parameters, buffers and lifted constants, as the exported program
    lists them), each once that step is done, the last with the program."""
    options = TargetOptions(name=target, chips=chips)
    imported = import_model(model, *example_args)
    yield "exporting", None
    program = build_program(named_mlir(imported, forward=getattr(model, "forward", model)),
                            options, params=param_arrays(imported),
                            binding=imported.binding, dump_dir=dump_dir)
    yield "compiling", None
    yield "encoding", program
