"""Exceptions raised by the training API."""

from __future__ import annotations

from nova.compiler.errors import NovaError

__all__ = ["TrainStepError"]


class TrainStepError(NovaError, ValueError):
    """A training step cannot be compiled or called as asked: an unsupported
    optimizer or option, a hyperparameter change that needs another program,
    a state dict that does not fit the step."""
