"""Exceptions raised by the training API."""

from __future__ import annotations

from nova.errors import NovaError, NovaModelCompileError

__all__ = ["TrainStepError", "TrainStepMemoryError"]


class TrainStepError(NovaError, ValueError):
    """A training step cannot be compiled or called as asked: an unsupported
    optimizer or option, a hyperparameter change that needs another program,
    a state dict that does not fit the step."""


class TrainStepMemoryError(TrainStepError, NovaModelCompileError):
    """The step does not fit the target's HBM. The message lists each category
    (parameters, gradients, optimizer state...) and the largest tensors;
    ``breakdown`` is the :class:`nova.training.memory.MemoryBreakdown`."""

    def __init__(self, message: str, breakdown: object) -> None:
        super().__init__(message)
        self.breakdown = breakdown
