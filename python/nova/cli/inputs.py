"""Program inputs for ``nova run`` / ``nova profile``: from an ``.npz`` file or random."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from nova.cli.errors import InputsFileError
from nova.binary.format import IODType, IOEntry


def random_inputs(entries: list[IOEntry], seed: int = 0) -> list[np.ndarray]:
    """One array per entry with its shape and storage dtype (normal floats, small ints)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for entry in entries:
        dtype = entry.dtype.numpy_dtype
        if entry.dtype == IODType.BF16:
            bits = rng.standard_normal(entry.shape).astype(np.float32).view(np.uint32)
            arrays.append((bits >> 16).astype(np.uint16))
        elif entry.dtype == IODType.I1:
            arrays.append(rng.integers(0, 2, entry.shape).astype(bool))
        elif np.issubdtype(dtype, np.integer):
            arrays.append(rng.integers(0, 16, entry.shape).astype(dtype))
        else:
            arrays.append(rng.standard_normal(entry.shape).astype(dtype))
    return arrays


def load_inputs(path: str | Path, entries: list[IOEntry]) -> list[np.ndarray]:
    """Reads the inputs from ``path``: keyed by input name, or ``arr_0``, ``arr_1``...
    (``np.savez(path, x, y)``) in input order."""
    path = Path(path)
    if not path.is_file():
        raise InputsFileError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as data:
            stored = {key: data[key] for key in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise InputsFileError(f"{path}: not a .npz file ({error})") from error
    arrays = []
    for position, entry in enumerate(entries):
        for key in (entry.name, f"arr_{position}"):
            if key in stored:
                arrays.append(stored.pop(key))
                break
        else:
            raise InputsFileError(
                f"{path}: no array for input {position} '{entry.name}' "
                f"(keys: {', '.join(sorted(stored)) or 'none'})")
    if stored:
        raise InputsFileError(f"{path}: arrays {', '.join(sorted(stored))} match no input")
    return arrays
