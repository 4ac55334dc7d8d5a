"""The values of an imported program's state arguments as arrays for the binary."""

from __future__ import annotations

import numpy as np
import torch

from nova.frontend.export import ImportedProgram


def param_arrays(imported: ImportedProgram) -> list[np.ndarray]:
    """The values of the program's state arguments (parameters, buffers
    persistent or not, and lifted constants, in argument order: the
    binary's leading inputs) as arrays; bfloat16 becomes float32.

    These, not ``model.named_parameters()`` + ``named_buffers()``, are the
    program's arguments: a non-persistent buffer, a constant made in
    ``forward`` or a tied weight kept under both names is in one list and not
    the other."""
    arrays = []
    for value in imported.param_values:
        value = value.detach().cpu()
        arrays.append((value.float() if value.dtype == torch.bfloat16 else value).numpy())
    return arrays
