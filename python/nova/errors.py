"""The roots of every exception Nova raises on purpose.

This module sits below every layer (it imports nothing from Nova), so the
binary reader, the simulator and the runtime derive their errors from the same
root as the compiler without importing it:

* :class:`NovaError` — every error Nova raises on purpose;
* :class:`NovaModelCompileError` — every failure while compiling (exporting,
  lowering, an option, a tool): the message leads with the user's line of
  Python and says what to do;
* :class:`NovaRuntimeError` — every failure while loading or running a program
  (a malformed binary, a wrong input, a fault of the simulated chip);
* :class:`ParallelError` — a multi-chip request that cannot be met: raised by
  the meshes and split tables a program carries (``nova.runtime.mesh``) as by
  the plans that compute them (``nova.parallel``, which re-exports it).

``nova.NovaError``, ``nova.NovaModelCompileError`` and ``nova.NovaRuntimeError``
re-export them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NovaError", "NovaModelCompileError", "NovaRuntimeError", "ParallelError",
           "SourceFrame", "lead_with_frame"]


@dataclass(frozen=True)
class SourceFrame:
    """A line of the user's Python: the file, the line number and its text."""

    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f'  File "{self.file}", line {self.line}\n    {self.text}'


class NovaError(Exception):
    """Base class of every error Nova raises on purpose."""


def lead_with_frame(message: str, frame: SourceFrame | None, hint: str = "") -> str:
    """``message`` with the user's line first (``file:line: first line of the
    message``, then the line's text), then what to do (``hint``), then the rest
    of the message (tool diagnostics, a command line)."""
    head, _, rest = message.partition("\n")
    lines = [f"{frame.file}:{frame.line}: {head}", f"    {frame.text}"] if frame is not None \
        else [head]
    if hint:
        lines.append(f"  what to do: {hint}")
    if rest.strip():
        lines.append(rest)
    return "\n".join(lines)


class NovaModelCompileError(NovaError):
    """Compiling a model (or a program) failed: every compile-time error of Nova.

    ``reason`` is what went wrong, ``frame`` the user's line it came from (None
    when unknown) and ``hint`` what to do about it; the message puts the line
    first.
    """

    def __init__(self, reason: str, frame: SourceFrame | None = None, hint: str = "") -> None:
        self.reason, self.frame, self.hint = reason, frame, hint
        super().__init__(lead_with_frame(reason, frame, hint))


class NovaRuntimeError(NovaError):
    """Loading or running a compiled program failed: every run-time error of Nova
    (a malformed binary or archive, a wrong input, a fault of the simulated chip)."""


class ParallelError(NovaModelCompileError, ValueError):
    """A multi-chip request that cannot be compiled as asked (the message says why)."""
