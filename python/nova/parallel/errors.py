"""Exceptions raised while compiling or calling a multi-chip program."""

from __future__ import annotations

from nova.errors import ParallelError

__all__ = ["ChipCountError", "ParallelError", "PipelineError"]


class ChipCountError(ParallelError):
    """The chips a program asks for (``chips=``, a mesh, pipeline stages) are more
    than its target system has; ``target``, ``available`` and ``requested`` say so."""

    def __init__(self, message: str, target: str, available: int, requested: int) -> None:
        super().__init__(message)
        self.target, self.available, self.requested = target, available, requested


class PipelineError(ParallelError):
    """Pipeline settings that cannot be compiled (``microbatches``, the stages)."""
