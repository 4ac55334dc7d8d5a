"""Nova: an MLIR-based compiler and simulator for a family of AI accelerators.

    import nova, torch
    program = nova.compile(model, x, target="nova-t1")
    y = program(x)                 # runs on the simulated chip, returns torch tensors
    print(program.report.summary())

The compiler proper is the C++ tools ``nova-opt`` / ``nova-translate`` (shipped
in ``nova/bin``), driven as subprocesses.
"""

from nova.errors import NovaError, NovaModelCompileError, NovaRuntimeError
from nova.version import __version__

__all__ = ["CompiledProgram", "NovaCompileError", "NovaError", "NovaModelCompileError",
           "NovaRuntimeError", "NovaUnsupportedOpError",
           "compile", "compile_pipeline_train_step", "compile_train_step", "export_and_run", "load", "run_opt"]


#: Public name -> the module that defines it. Loaded on first use, so importing a low
#: layer (``import nova.binary``) does not pull in the compiler, torch or the simulator.
_LAZY = {
    "compile": "nova.api", "export_and_run": "nova.api",
    "compile_train_step": "nova.training", "compile_pipeline_train_step": "nova.training",
    "CompiledProgram": "nova.runtime.program", "load": "nova.runtime.archive",
    "run_opt": "nova.compiler.driver",
    "NovaCompileError": "nova.compiler.errors", "NovaUnsupportedOpError": "nova.compiler.errors",
}


def torch_device_autoload() -> None:
    """PyTorch's device-backend autoload entry point (``torch.backends`` in
    pyproject.toml): ``import torch`` registers the ``nova`` device and the
    ``nova`` torch.distributed backend. A failure is a warning, never a broken
    ``import torch``."""
    try:
        import nova.device  # noqa: F401  (registers on import)
        import nova.distributed  # noqa: F401  (registers on import)
    except Exception as e:  # noqa: BLE001 - any failure must leave torch importable
        import warnings

        warnings.warn(f"nova: the 'nova' PyTorch device is not registered: {e}", stacklevel=2)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nova' has no attribute {name!r}")
