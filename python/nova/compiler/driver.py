"""Runs nova-opt as a subprocess (the compiler and torch-mlir's MLIR never share a process)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Sequence

from nova.compiler.errors import NovaCompileError
from nova.compiler.pipeline import DIAGNOSTIC_FLAGS
from nova.compiler.tools import find_tool

# Long enough for any pipeline on a large model; a hung tool must not hang Python.
DEFAULT_TIMEOUT_S = 600.0


def _run(command: list[str], stdin: str | None, timeout: float | None) -> str:
    try:
        result = subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as error:
        stderr = error.stderr.decode() if isinstance(error.stderr, bytes) else (error.stderr or "")
        raise NovaCompileError(command, -1, f"timed out after {timeout} s\n{stderr}") from None
    if result.returncode != 0:
        raise NovaCompileError(command, result.returncode, result.stderr)
    return result.stdout


def run_opt(
    source: str, passes: Sequence[str] = (), *, timeout: float | None = DEFAULT_TIMEOUT_S
) -> str:
    """Runs ``nova-opt <passes>`` on the MLIR text ``source`` and returns the printed result.

    ``passes`` are nova-opt flags, e.g. ``["--nova-attach-target=target=nova-t1"]``
    (see :mod:`nova.compiler.pipeline`). Raises NovaCompileError, carrying
    nova-opt's diagnostics, when parsing, verification or a pass fails.
    """
    command = [str(find_tool("nova-opt")), *DIAGNOSTIC_FLAGS, *passes, "-"]
    return _run(command, source, timeout)


def run_opt_file(
    path: str | Path, passes: Sequence[str] = (), *, timeout: float | None = DEFAULT_TIMEOUT_S
) -> str:
    """Like :func:`run_opt` on the file at ``path``, so diagnostics name that file."""
    command = [str(find_tool("nova-opt")), *DIAGNOSTIC_FLAGS, *passes, str(path)]
    return _run(command, None, timeout)


def run_translate(
    source: str, flags: Sequence[str], *, timeout: float | None = DEFAULT_TIMEOUT_S
) -> bytes:
    """Runs ``nova-translate <flags>`` on the MLIR text ``source`` and returns its output bytes."""
    command = [str(find_tool("nova-translate")), *DIAGNOSTIC_FLAGS, *flags, "-", "-o", "-"]
    try:
        result = subprocess.run(
            command, input=source.encode(), capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise NovaCompileError(command, -1, f"timed out after {timeout} s") from None
    if result.returncode != 0:
        raise NovaCompileError(command, result.returncode, result.stderr.decode(errors="replace"))
    return result.stdout
