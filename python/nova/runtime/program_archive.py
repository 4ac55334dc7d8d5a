"""A :class:`~nova.runtime.program.CompiledProgram` on disk: its ``save`` and
``nova.load``'s loaders of its archive formats (registered in
:mod:`nova.archive_kinds`).

* ``nova-program/1``: one list of bound parameters (``param<i>.npy``), for a
  program without a layout whose chips all bind the same ones;
* ``nova-program/2``: a program on many chips: meta.json's ``layout`` (its
  split tables, :class:`~nova.runtime.mesh.MeshLayout`) and ``per_chip`` (the
  parameters chips bind pieces of, ``chip<c>/param<i>.npy``; the others are
  ``param<i>.npy``, the same on every chip);
* ``nova-parallel-program/1``: what ``nova.parallel.ParallelProgram.save``
  wrote before it was this class (every chip's parameters, the mesh and the
  I/O placements), read into the same class.
"""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nova.archive_kinds import register
from nova.binary.format import load_binary
from nova.runtime.archive import (MEMBER_ERRORS, META_ERRORS, binary_errors, check_params,
                                  npy_bytes, read_member, read_npy, reason)
from nova.runtime.binding import CallBinding
from nova.runtime.errors import BinaryFormatError, NovaRuntimeError, ProgramArchiveError
from nova.runtime.mesh import Mesh, MeshLayout, placements_from_json
from nova.runtime.program import CompiledProgram

__all__ = ["LEGACY_PARALLEL_FORMAT", "MESH_FORMAT", "SINGLE_FORMAT", "save_program"]

SINGLE_FORMAT = "nova-program/1"
MESH_FORMAT = "nova-program/2"
LEGACY_PARALLEL_FORMAT = "nova-parallel-program/1"


def _per_chip(program: CompiledProgram) -> list[int]:
    """The parameters whose value differs between chips (each chip's piece is saved)."""
    first = program.chip_params[0]
    return [i for i, p in enumerate(first)
            if any(ps[i] is not p and not np.array_equal(ps[i], p)
                   for ps in program.chip_params[1:])]


def save_program(program: CompiledProgram, path: str | Path) -> None:
    """Writes ``program`` to ``path`` (see the module docstring for the formats)."""
    per_chip = _per_chip(program)
    if program.layout is None and not per_chip:
        meta: dict[str, Any] = {"format": SINGLE_FORMAT, "params": len(program.params)}
    else:
        meta = {"format": MESH_FORMAT, "params": len(program.params),
                "chips": len(program.chip_params), "per_chip": per_chip,
                "layout": None if program.layout is None else program.layout.to_json()}
    if program.binding is not None:
        meta["binding"] = program.binding.to_json()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("meta.json", json.dumps(meta))
        archive.writestr("program.nova", program.binary_bytes)
        for i, param in enumerate(program.params):
            if i not in per_chip:
                archive.writestr(f"param{i}.npy", npy_bytes(param))
        for chip, params in enumerate(program.chip_params):
            for i in per_chip:
                archive.writestr(f"chip{chip}/param{i}.npy", npy_bytes(params[i]))


def _count(meta: Mapping[str, Any], path: Path) -> int:
    count = meta.get("params")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ProgramArchiveError(f"{path}: meta.json 'params' must be a count of "
                                  f"parameters, got {count!r}")
    return count


def _binding(meta: Mapping[str, Any], path: Path, import_types: bool) -> CallBinding | None:
    if "binding" not in meta:
        return None
    try:
        return CallBinding.from_json(meta["binding"], import_types)
    except NovaRuntimeError as error:
        raise ProgramArchiveError(f"{path}: {error}") from None
    except META_ERRORS as error:
        raise ProgramArchiveError(f"{path}: meta.json 'binding' is malformed: "
                                  f"{reason(error)}") from None


def _load_single(archive: zipfile.ZipFile, meta: dict, path: Path,
                 import_types: bool) -> CompiledProgram:
    """The program of a ``nova-program/1`` archive."""
    count = _count(meta, path)
    params = [read_npy(archive, f"param{i}.npy", path) for i in range(count)]
    binding = _binding(meta, path, import_types)
    binary = read_member(archive, "program.nova", path)
    with binary_errors(path, "program.nova"):
        program = CompiledProgram(binary, params, binding=binding)
    check_params(program.binary, program.params, path, "param{}.npy")
    return program


def _load_mesh(archive: zipfile.ZipFile, meta: dict, path: Path,
               import_types: bool) -> CompiledProgram:
    """The program of a ``nova-program/2`` archive."""
    count = _count(meta, path)
    chips, per_chip = meta.get("chips"), meta.get("per_chip")
    if isinstance(chips, bool) or not isinstance(chips, int) or chips < 1:
        raise ProgramArchiveError(f"{path}: meta.json 'chips' must be a count of chips, "
                                  f"got {chips!r}")
    if not isinstance(per_chip, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < count for i in per_chip):
        raise ProgramArchiveError(f"{path}: meta.json 'per_chip' must list positions of the "
                                  f"{count} parameters, got {per_chip!r}")
    layout = None
    if meta.get("layout") is not None:
        try:
            layout = MeshLayout.from_json(meta["layout"])
        except META_ERRORS as error:
            raise ProgramArchiveError(f"{path}: meta.json 'layout' is malformed: "
                                      f"{reason(error)}") from None
    shared = {i: read_npy(archive, f"param{i}.npy", path)
              for i in range(count) if i not in per_chip}
    chip_params = [[read_npy(archive, f"chip{c}/param{i}.npy", path) if i in per_chip
                    else shared[i] for i in range(count)] for c in range(chips)]
    binding = _binding(meta, path, import_types)
    binary = read_member(archive, "program.nova", path)
    with binary_errors(path, "program.nova"):
        decoded = load_binary(binary)
    _check_chips(decoded.chips, chips, layout, path)
    for chip, params in enumerate(chip_params):
        member = "param{}.npy" if not per_chip else f"chip{chip}/param{{}}.npy"
        check_params(decoded, params, path, member)
    with binary_errors(path, "program.nova"):
        return CompiledProgram(binary, chip_params=chip_params, binding=binding, layout=layout)


def _check_chips(binary_chips: int, chips: int, layout: MeshLayout | None, path: Path) -> None:
    if chips != binary_chips:
        raise ProgramArchiveError(f"{path}: meta.json lists parameters for {chips} chip(s), "
                                  f"the binary has {binary_chips}")
    if layout is not None and layout.mesh.size != chips:
        raise ProgramArchiveError(f"{path}: the layout's mesh {layout.mesh.shape} has "
                                  f"{layout.mesh.size} chips, the binary {chips}")


def _load_legacy_parallel(archive: zipfile.ZipFile, meta: Mapping[str, Any], path: Path,
                          import_types: bool) -> CompiledProgram:
    """The program of a ``nova-parallel-program/1`` archive: checks the members
    it names, then each chip's parameters against the binary."""
    read_member(archive, "program.nova", path)  # present and intact
    counts = meta.get("params")
    if not isinstance(counts, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        raise ProgramArchiveError(f"{path}: meta.json 'params' must list each chip's "
                                  f"number of parameters, got {counts!r}")
    present = set(archive.namelist())
    for chip, count in enumerate(counts):
        for name in (f"chip{chip}/param{i}.npy" for i in range(count)):
            if name not in present:
                raise ProgramArchiveError(f"{path}: member '{name}' is missing")
    try:
        with warnings.catch_warnings():  # its np.load of headers judged by nova.load
            warnings.simplefilter("ignore")
            chip_params = [[np.load(io.BytesIO(archive.read(f"chip{chip}/param{i}.npy")),
                                    allow_pickle=False) for i in range(count)]
                           for chip, count in enumerate(meta["params"])]
            mesh = (Mesh(tuple(meta["mesh"]["shape"]), tuple(meta["mesh"]["names"]))
                    if meta.get("mesh") else None)
            inputs = [placements_from_json(p) for p in meta["inputs"]]
            outputs = [placements_from_json(p) for p in meta["outputs"]]
            binding = CallBinding.from_json(meta["binding"]) if "binding" in meta else None
            binary = archive.read("program.nova")
            decoded = load_binary(binary)
    except BinaryFormatError as error:  # from the binary inside
        raise BinaryFormatError(f"{path}: program.nova: {error}") from None
    except NovaRuntimeError as error:
        raise ProgramArchiveError(f"{path}: {error}") from None
    except MEMBER_ERRORS + META_ERRORS as error:
        raise ProgramArchiveError(f"{path}: malformed multi-chip program: "
                                  f"{reason(error)}") from None
    # Without a mesh, the old class ignored the placements: every input whole.
    layout = None if mesh is None else MeshLayout(mesh, inputs=inputs, outputs=outputs)
    _check_chips(decoded.chips, len(chip_params), layout, path)
    for chip, params in enumerate(chip_params):
        check_params(decoded, params, path, f"chip{chip}/param{{}}.npy", len(chip_params[0]))
    try:
        return CompiledProgram(binary, chip_params=chip_params, binding=binding, layout=layout)
    except NovaRuntimeError as error:
        raise ProgramArchiveError(f"{path}: {error}") from None
    except META_ERRORS as error:
        raise ProgramArchiveError(f"{path}: malformed multi-chip program: "
                                  f"{reason(error)}") from None


register(SINGLE_FORMAT, _load_single)
register(MESH_FORMAT, _load_mesh)
register(LEGACY_PARALLEL_FORMAT, _load_legacy_parallel)
