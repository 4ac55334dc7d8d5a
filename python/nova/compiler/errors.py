"""Exceptions raised by the compiler driver (every one a ``NovaModelCompileError``)."""

from __future__ import annotations

import shlex
from typing import Sequence

from nova.errors import NovaError, NovaModelCompileError, SourceFrame

__all__ = ["NovaCompileError", "NovaError", "NovaModelCompileError", "NovaOptionError",
           "NovaToolNotFoundError", "NovaUnsupportedOpError", "OP_FALLBACK_HINT"]

#: What to do about an op Nova cannot compile.
OP_FALLBACK_HINT = ('torch.compile(model, backend="nova") runs the rest of the model on Nova '
                    "and this op in eager; or rewrite the line with ops Nova compiles "
                    "(docs/coverage.md lists them)")


class NovaOptionError(NovaModelCompileError, ValueError):
    """A compiler option (target name, chip count, an unknown keyword) is malformed."""


class NovaToolNotFoundError(NovaModelCompileError):
    """A C++ tool (``nova-opt``, ``nova-translate``) is not where it should be."""


class NovaCompileError(NovaModelCompileError):
    """A Nova tool rejected its input or failed.

    ``stderr`` holds the tool's diagnostics verbatim (MLIR's
    ``file:line:col: error: ...`` lines), ``command`` the command line that ran
    and ``returncode`` its exit status. ``model``: the tool was compiling the
    user's model, and the message leads with ``frame`` (the user's line the
    first diagnostic came from, or None) and the first diagnostic.
    """

    def __init__(self, command: Sequence[str], returncode: int, stderr: str,
                 frame: SourceFrame | None = None, *, model: bool = False) -> None:
        self.command = list(command)
        self.returncode = returncode
        self.stderr = stderr
        tool = self.command[0] if self.command else "tool"
        details = stderr.strip() or "(no diagnostics on stderr)"
        report = f"{tool} failed with exit status {returncode}\n" \
                 f"  command: {shlex.join(self.command)}\n{details}"
        if not model:
            super().__init__(report, frame)
            return
        from nova.compiler.diagnostics import first_error  # no cycle at import time

        super().__init__(f"cannot compile the model: {first_error(stderr)}\n{report}", frame,
                         OP_FALLBACK_HINT)


class NovaUnsupportedOpError(NovaModelCompileError):
    """The imported model uses an op that no Nova stage takes (e.g. torch-mlir's
    ``tm_tensor.scan`` for cumsum); ``frame`` is the model's source line."""

    def __init__(self, op_name: str, frame: SourceFrame | None, reason: str = "",
                 hint: str = "") -> None:
        self.op_name = op_name
        super().__init__(reason or f"cannot compile the model: '{op_name}' has no Nova lowering",
                         frame, hint or OP_FALLBACK_HINT)
