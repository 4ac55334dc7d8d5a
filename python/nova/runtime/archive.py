"""Saved programs on disk: the ``.novaprog`` zip archive's reader and writer helpers
that every program kind shares (members, meta.json, ``.npy`` arrays, the binary
inside, the bound parameters), and :func:`load`, which picks the kind's loader
from :mod:`nova.archive_kinds` by meta.json's ``format``.

Every problem with a file is a :class:`~nova.runtime.errors.NovaRuntimeError`
naming it: :class:`BinaryFormatError` for the binary, :class:`ProgramArchiveError`
for the archive around it. Archive contents are untrusted: whatever their parsers
raise is turned into one of these.
"""

from __future__ import annotations

import io
import json
import math
import struct
import warnings
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from nova.archive_kinds import loader_for
from nova.binary.format import Binary
from nova.runtime.errors import BinaryFormatError, NovaRuntimeError, ProgramArchiveError

__all__ = ["MEMBER_ERRORS", "META_ERRORS", "binary_errors", "check_npy", "check_params", "load",
           "load_archive", "npy_bytes", "read_member", "read_meta", "read_npy", "reason"]

#: What zipfile, zlib and numpy raise on damaged archive members.
MEMBER_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError,
                 zlib.error, struct.error, OSError, ValueError, OverflowError, MemoryError)
#: What the third-party parsers of untrusted archive contents (numpy's .npy header,
#: torch's pytree spec, the metadata's JSON shapes) may raise: anything. Each is
#: turned into a ProgramArchiveError naming the member and the exception's type.
META_ERRORS = (Exception,)


def load(path: str | Path, import_types: bool = False) -> Any:
    """Loads a program written by :meth:`CompiledProgram.save` (or a bare
    ``.nova`` binary), or a program of another kind (a multi-chip one, a
    training step): meta.json's ``format`` picks the kind's loader from
    :mod:`nova.archive_kinds`. ``import_types`` imports the
    modules of the output types the program returns (a Hugging Face
    ``ModelOutput``) even when their package is not imported yet.

    Every problem with the file is a :class:`~nova.runtime.errors.NovaRuntimeError`
    naming it: :class:`BinaryFormatError` for the binary,
    :class:`ProgramArchiveError` for the archive around it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ProgramArchiveError(f"{path}: cannot read: {error.strerror or error}") from None
    if not zipfile.is_zipfile(io.BytesIO(data)):
        from nova.runtime.program import CompiledProgram  # a bare binary: one chip's program

        with binary_errors(path):
            return CompiledProgram(data)
    return load_archive(data, path, import_types)


def load_archive(data: bytes, path: Path, import_types: bool = False) -> Any:
    """The program in a saved archive's bytes (``path`` names it in errors)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except MEMBER_ERRORS as error:
        raise ProgramArchiveError(f"{path}: not a readable program archive: {error}") from None
    with archive:
        meta = read_meta(archive, path)
        for name in archive.namelist():
            if name.endswith(".npy"):
                check_npy(archive, name, path)
        loader = loader_for(meta.get("format"))
        if loader is None:
            raise ProgramArchiveError(f"{path}: not a saved Nova program (format "
                                      f"{meta.get('format')!r})")
        return loader(archive, meta, path, import_types)


@contextmanager
def binary_errors(path: Path, member: str = "") -> Iterator[None]:
    """Prefixes a binary's errors with the file (and the member) they come from."""
    where = f"{path}: {member + ': ' if member else ''}"
    try:
        yield
    except BinaryFormatError as error:
        raise BinaryFormatError(where + str(error)) from None
    except NovaRuntimeError as error:
        if str(error).startswith(where):
            raise
        raise type(error)(where + str(error)) from None


def reason(error: BaseException) -> str:
    """An exception as ``Type: message`` (its type alone when it has no message)."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def read_member(archive: zipfile.ZipFile, name: str, path: Path) -> bytes:
    """The bytes of member ``name``; missing or corrupt is a ProgramArchiveError."""
    try:
        return archive.read(name)
    except KeyError:
        raise ProgramArchiveError(f"{path}: member '{name}' is missing") from None
    except MEMBER_ERRORS as error:
        raise ProgramArchiveError(f"{path}: member '{name}' is corrupt: "
                                  f"{reason(error)}") from None


def read_meta(archive: zipfile.ZipFile, path: Path) -> dict:
    """meta.json, which must hold a JSON object."""
    raw = read_member(archive, "meta.json", path)
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ProgramArchiveError(f"{path}: meta.json is not valid JSON: {error}") from None
    if not isinstance(meta, dict):
        raise ProgramArchiveError(f"{path}: meta.json must hold a JSON object, got "
                                  f"{type(meta).__name__}")
    return meta


def check_npy(archive: zipfile.ZipFile, name: str, path: Path) -> None:
    """A ``.npy`` member's header must describe exactly the bytes that follow it
    (numpy would otherwise allocate what a damaged header claims)."""
    raw = read_member(archive, name, path)
    stream = io.BytesIO(raw)
    try:
        with warnings.catch_warnings():  # numpy warns on odd headers; we judge them here
            warnings.simplefilter("ignore")
            version = np.lib.format.read_magic(stream)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, _, dtype = read_header(stream)
    except MEMBER_ERRORS + META_ERRORS as error:
        raise ProgramArchiveError(f"{path}: member '{name}' is not a valid .npy array: "
                                  f"{reason(error)}") from None
    if dtype.hasobject:
        raise ProgramArchiveError(f"{path}: member '{name}' holds Python objects")
    need = math.prod(shape) * dtype.itemsize
    have = len(raw) - stream.tell()
    if need != have:
        raise ProgramArchiveError(f"{path}: member '{name}' declares {list(shape)} of "
                                  f"{dtype} ({need} bytes) but holds {have} bytes")


def read_npy(archive: zipfile.ZipFile, name: str, path: Path) -> np.ndarray:
    """The array in ``.npy`` member ``name`` (its header checked first)."""
    check_npy(archive, name, path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.load(io.BytesIO(archive.read(name)), allow_pickle=False)
    except MEMBER_ERRORS as error:
        raise ProgramArchiveError(f"{path}: member '{name}' is not a valid .npy array: "
                                  f"{reason(error)}") from None


def npy_bytes(array: np.ndarray) -> bytes:
    """``array`` as the bytes of a ``.npy`` member (no pickles)."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def check_params(binary: Binary, params: Sequence[np.ndarray], path: Path, member: str,
                 count: int | None = None) -> None:
    """The bound parameters are the binary's leading inputs: as many as ``count``
    (every chip binds the same ones), each of its entry's shape and dtype."""
    inputs = sorted(binary.inputs, key=lambda e: e.index)
    if count is not None and len(params) != count:
        raise ProgramArchiveError(f"{path}: {member.format('*')}: {len(params)} parameters, "
                                  f"but chip 0 binds {count}")
    if len(params) > len(inputs):
        raise ProgramArchiveError(f"{path}: {len(params)} parameters for a binary with "
                                  f"{len(inputs)} inputs")
    for i, (entry, value) in enumerate(zip(inputs, params)):
        expected = entry.dtype.numpy_dtype
        bf16_ok = entry.dtype.name == "BF16" and value.dtype in (np.float32, np.uint16)
        if tuple(value.shape) != tuple(entry.shape) or (value.dtype != expected and not bf16_ok):
            raise ProgramArchiveError(
                f"{path}: member '{member.format(i)}' holds {value.dtype}{list(value.shape)} "
                f"but input {entry.index} ('{entry.name}') of the binary is "
                f"{entry.dtype.name.lower()}{list(entry.shape)}")
