"""Exceptions raised while exporting a model (every one a ``NovaModelCompileError``)."""

from __future__ import annotations

from nova.compiler.errors import NovaUnsupportedOpError
from nova.errors import NovaModelCompileError, SourceFrame

#: What to do about a model torch.export cannot trace as one static graph.
TORCH_COMPILE_HINT = ('torch.compile(model, backend="nova") runs it: Dynamo splits the model '
                      "at the Python that torch.export cannot trace, runs that in eager and "
                      "the graphs around it on Nova")


class NovaExportError(NovaModelCompileError, ValueError):
    """The model's call signature has no Nova program form (a non-tensor,
    non-scalar input such as a KV-cache object, a buffer the model updates in
    place...); the message says which argument and what to do instead."""


class NovaDataDependentError(NovaExportError):
    """The model's Python control flow depends on tensor values (``if x.sum() > 0:``,
    ``int(t)``): a Nova program is one static graph. ``frame`` is the model's line;
    the message suggests ``torch.compile(backend="nova")``."""

    def __init__(self, message: str, frame: SourceFrame | None = None) -> None:
        super().__init__(message, frame, TORCH_COMPILE_HINT)


class NovaTorchExportError(NovaExportError):
    """``torch.export`` could not trace the model; the message leads with the
    model's line (``frame``) and torch's own reason; the torch exception is the
    ``__cause__``."""

    def __init__(self, message: str, frame: SourceFrame | None = None,
                 hint: str = TORCH_COMPILE_HINT) -> None:
        super().__init__(message, frame, hint)


class NovaLoweringError(NovaUnsupportedOpError):
    """torch-mlir could not lower an op of the model to linalg (``torch.fft.fft`` is
    ``torch.aten.fft_fft``, which has no linalg form); ``op_name`` names it and
    ``frame`` is the model's line."""

    def __init__(self, op_name: str, frame: SourceFrame | None, detail: str = "") -> None:
        why = f" ({detail})" if detail else ""
        super().__init__(op_name, frame, f"cannot compile the model: torch-mlir cannot lower "
                                         f"'{op_name}' to linalg{why}")


class NovaZeroSizeError(NovaUnsupportedOpError):
    """An op of the model reads or makes a tensor without elements in a way Nova
    does not compile (most such programs compile: see
    :mod:`nova.frontend.zero_size`); ``reason`` says why. Raised before
    torch-mlir, whose lowering can die of a division by zero on such shapes.
    ``frame`` is the model's line."""

    def __init__(self, what: str, shape: tuple[int, ...], frame: SourceFrame | None,
                 reason: str = "; Nova does not compile tensors without elements") -> None:
        # what: "input 'x' is", "aten.slice.Tensor makes", "aten.convolution.default reads"
        sep = "" if reason.startswith(";") else " "
        super().__init__(what.rsplit(" ", 1)[0], frame,
                         f"cannot compile the model: {what} a zero-size tensor of shape "
                         f"{list(shape)}{sep}{reason}",
                         "give the tensor at least one element (or leave the op out when "
                         "it has none)")
