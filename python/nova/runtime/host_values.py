"""Host values at a program's I/O boundary: the checks every program kind makes
on the tensors a call passes (count, dtype, shape) and the conversions between
torch/numpy values and the binary's I/O entries. One implementation for the
single-chip :class:`~nova.runtime.program.CompiledProgram` and the multi-chip
programs of ``nova.parallel``."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from nova.runtime.binding import ProgramInputError, check_tensor_dtype

__all__ = ["check_arity", "contiguous", "host_array", "input_label", "to_numpy", "to_tensor",
           "torch_dtype"]


def to_numpy(value: Any) -> np.ndarray:
    """A torch tensor (bf16 as float32) or array-like as a numpy array."""
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def contiguous(array: np.ndarray) -> np.ndarray:
    """C-contiguous, keeping a 0-d array 0-d (np.ascontiguousarray makes it 1-d)."""
    return array if array.flags.c_contiguous else np.array(array, order="C")


def to_tensor(entry, value: np.ndarray) -> Any:
    """An output's value as a torch tensor of its entry's dtype."""
    import torch

    tensor = torch.from_numpy(np.array(value))
    return tensor.to(torch.bfloat16) if entry.dtype.name == "BF16" else tensor


def torch_dtype(entry) -> Any:
    """The torch dtype of an I/O entry."""
    import torch

    if entry.dtype.name == "BF16":
        return torch.bfloat16
    return torch.from_numpy(np.empty(0, dtype=entry.dtype.numpy_dtype)).dtype


def input_label(names: Sequence[str], position: int) -> str:
    """'input 0' for the model's first positional tensor, 'input 'mask'' for a keyword
    one (``names``: the binding's tensor input names, or none)."""
    name = names[position] if position < len(names) else ""
    if not name or name == f"input{position}":
        return f"input {position}"
    return f"input {name!r}"


def check_arity(expected: int, args: Sequence[Any]) -> None:
    if len(args) != expected:
        raise ProgramInputError(f"the program takes {expected} input(s), got {len(args)}")


def host_array(label: str, value: Any, entry, shape: Sequence[int]) -> np.ndarray:
    """``value`` given for input ``entry`` as a C-contiguous array, checked to be the
    entry's dtype and of ``shape`` (the whole input's: a split one is given whole)."""
    check_tensor_dtype(label, value, entry.dtype.name)
    array = to_numpy(value)
    if tuple(array.shape) != tuple(shape):
        raise ProgramInputError(f"{label} must have shape {list(shape)}, got {list(array.shape)}")
    expected = entry.dtype.numpy_dtype
    # bf16 has no numpy type: its values travel as float32 (the simulator rounds
    # them to bf16 bits).
    bf16_as_f32 = entry.dtype.name == "BF16" and array.dtype == np.float32
    if array.dtype != expected and not bf16_as_f32:
        raise ProgramInputError(
            f"{label} must have dtype {np.dtype(expected).name}, got {array.dtype.name}")
    return contiguous(array)
