"""Nova: an MLIR-based compiler and simulator for a family of AI accelerators.

    import nova, torch
    program = nova.compile(model, x, target="nova-t1")
    y = program(x)                 # runs on the simulated chip, returns torch tensors
    print(program.report.summary())

The compiler proper is the C++ tools ``nova-opt`` / ``nova-translate`` (shipped
in ``nova/bin``), driven as subprocesses.
"""

from nova.compiler.driver import run_opt
from nova.compiler.errors import NovaCompileError, NovaUnsupportedOpError
from nova.errors import NovaError, NovaModelCompileError, NovaRuntimeError

__version__ = "0.1.0"

__all__ = ["CompiledProgram", "NovaCompileError", "NovaError", "NovaModelCompileError",
           "NovaRuntimeError", "NovaUnsupportedOpError",
           "compile", "compile_pipeline_train_step", "compile_train_step", "export_and_run", "load", "run_opt"]


def __getattr__(name: str):
    # torch is imported only by the entry points that need it.
    if name in ("compile", "export_and_run"):
        from nova import api
        return getattr(api, name)
    if name in ("compile_train_step", "compile_pipeline_train_step"):
        import nova.training
        return getattr(nova.training, name)
    if name in ("CompiledProgram", "load"):
        from nova.runtime import program
        return getattr(program, name)
    raise AttributeError(f"module 'nova' has no attribute {name!r}")
