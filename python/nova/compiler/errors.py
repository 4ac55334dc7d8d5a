"""Exceptions raised by the compiler driver."""

from __future__ import annotations

import shlex
from typing import Sequence


class NovaError(Exception):
    """Base class of every error Nova raises on purpose."""


class NovaOptionError(NovaError, ValueError):
    """A compiler option (target name, chip count) is malformed."""


class NovaToolNotFoundError(NovaError):
    """A C++ tool (``nova-opt``, ``nova-translate``) is not where it should be."""


class NovaCompileError(NovaError):
    """A Nova tool rejected its input or failed.

    ``stderr`` holds the tool's diagnostics verbatim (MLIR's
    ``file:line:col: error: ...`` lines), ``command`` the command line that ran
    and ``returncode`` its exit status.
    """

    def __init__(self, command: Sequence[str], returncode: int, stderr: str) -> None:
        self.command = list(command)
        self.returncode = returncode
        self.stderr = stderr
        tool = self.command[0] if self.command else "tool"
        details = stderr.strip() or "(no diagnostics on stderr)"
        super().__init__(
            f"{tool} failed with exit status {returncode}\n"
            f"  command: {shlex.join(self.command)}\n{details}"
        )


class NovaModelCompileError(NovaCompileError):
    """Compiling a PyTorch model failed; the message leads with the model's source line.

    ``frame`` is the user's frame the failing op came from (None when the
    diagnostics carry no location in the user's code).
    """

    def __init__(self, command: Sequence[str], returncode: int, stderr: str, frame) -> None:
        self.frame = frame
        super().__init__(command, returncode, stderr)
        from nova.compiler.diagnostics import first_error  # no cycle at import time

        lead = first_error(stderr)
        where = f"{frame}\n" if frame is not None else ""
        self.args = (f"cannot compile the model: {lead}\n{where}{self.args[0]}",)


class NovaUnsupportedOpError(NovaError):
    """The imported model uses an op that no Nova stage takes (e.g. torch-mlir's
    ``tm_tensor.scan`` for cumsum); ``frame`` is the model's source line."""

    def __init__(self, op_name: str, frame) -> None:
        self.op_name = op_name
        self.frame = frame
        where = f"\n{frame}" if frame is not None else ""
        super().__init__(f"cannot compile the model: '{op_name}' has no Nova lowering{where}")
