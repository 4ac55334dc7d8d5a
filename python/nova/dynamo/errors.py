"""The warning a graph that falls back to eager gives, and how it reads."""

from __future__ import annotations

from nova.compiler.diagnostics import first_error
from nova.compiler.errors import NovaCompileError, NovaError, NovaUnsupportedOpError
from nova.errors import NovaRuntimeError


class NovaFallbackWarning(UserWarning):
    """A graph Dynamo handed to Nova runs in eager instead (see the message for why)."""


def fallback_reason(error: Exception) -> str:
    """One line saying what Nova could not compile, then the model's line when known."""
    frame = getattr(error, "frame", None)
    if isinstance(error, NovaUnsupportedOpError):
        lead = f"'{error.op_name}' has no Nova lowering"
    elif isinstance(error, NovaCompileError):
        lead = first_error(error.stderr)
    else:
        lead = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return lead + (f"\n{frame}" if frame is not None else "")


def can_fall_back(error: Exception) -> bool:
    """Errors that say the graph is beyond Nova (not a bug to surface as is):
    Nova's own compile-time errors, and torch-mlir failing to lower the graph."""
    if isinstance(error, NovaError) and not isinstance(error, NovaRuntimeError):
        return True
    try:
        from torch_mlir.compiler_utils import TorchMlirCompilerError
    except ImportError:  # pragma: no cover - torch-mlir is a dependency
        return False
    return isinstance(error, TorchMlirCompilerError)
