"""Exceptions raised while exporting a model."""

from __future__ import annotations

from nova.compiler.errors import NovaError, NovaUnsupportedOpError


class NovaExportError(NovaError, ValueError):
    """The model's call signature has no Nova program form (a non-tensor,
    non-scalar input such as a KV-cache object, a buffer the model updates in
    place...); the message says which argument and what to do instead."""


class NovaDataDependentError(NovaExportError):
    """The model's Python control flow depends on tensor values (``if x.sum() > 0:``,
    ``int(t)``): a Nova program is one static graph. ``frame`` is the model's line."""

    def __init__(self, message: str, frame=None) -> None:
        self.frame = frame
        super().__init__(message + (f"\n{frame}" if frame is not None else ""))


class NovaTorchExportError(NovaExportError):
    """``torch.export`` could not trace the model; the message leads with torch's own
    reason and ends with the model's line (``frame``); the torch exception is the
    ``__cause__``."""

    def __init__(self, message: str, frame=None) -> None:
        self.frame = frame
        super().__init__(message + (f"\n{frame}" if frame is not None else ""))


class NovaLoweringError(NovaUnsupportedOpError):
    """torch-mlir could not lower an op of the model to linalg (``torch.fft.fft`` is
    ``torch.aten.fft_fft``, which has no linalg form); ``op_name`` names it and
    ``frame`` is the model's line."""

    def __init__(self, op_name: str, frame, detail: str = "") -> None:
        super().__init__(op_name, frame)
        where = f"\n{frame}" if frame is not None else ""
        why = f" ({detail})" if detail else ""
        self.args = (f"cannot compile the model: torch-mlir cannot lower '{op_name}' to "
                     f"linalg{why}{where}",)


class NovaZeroSizeError(NovaUnsupportedOpError):
    """An op of the model reads or makes a tensor without elements in a way Nova
    does not compile (most such programs compile: see
    :mod:`nova.frontend.zero_size`); ``reason`` says why. Raised before
    torch-mlir, whose lowering can die of a division by zero on such shapes.
    ``frame`` is the model's line."""

    def __init__(self, what: str, shape: tuple[int, ...], frame,
                 reason: str = "; Nova does not compile tensors without elements") -> None:
        # what: "input 'x' is", "aten.slice.Tensor makes", "aten.convolution.default reads"
        super().__init__(what.rsplit(" ", 1)[0], frame)
        where = f"\n{frame}" if frame is not None else ""
        sep = "" if reason.startswith(";") else " "
        self.args = (f"cannot compile the model: {what} a zero-size tensor of shape "
                     f"{list(shape)}{sep}{reason}{where}",)
