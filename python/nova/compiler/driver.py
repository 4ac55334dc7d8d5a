"""Runs nova-opt as a subprocess (the compiler and torch-mlir's MLIR never share a process)."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from nova.compiler.errors import NovaCompileError
from nova.compiler.pipeline import DIAGNOSTIC_FLAGS
from nova.compiler.stage_times import timed
from nova.compiler.tools import find_tool
from nova.knobs import knobs

# Long enough for any pipeline on a large model; a hung tool must not hang Python.
# NOVA_COMPILE_TIMEOUT_S overrides it.
DEFAULT_TIMEOUT_S = 600.0


def _budget(timeout: float | None) -> float | None:
    """``timeout`` unless it is the default and NOVA_COMPILE_TIMEOUT_S sets another."""
    if timeout == DEFAULT_TIMEOUT_S:
        return knobs().compile_timeout_s or DEFAULT_TIMEOUT_S
    return timeout


def _die_with_parent() -> None:
    """In the child before exec: the kernel sends it SIGKILL when the Python
    process that started it dies, so a killed caller leaves no compiler running
    (a time-out kills it through subprocess)."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)


def tool_process_options() -> dict[str, Any]:
    """``subprocess`` keyword arguments for every compiler tool Nova starts."""
    return {"preexec_fn": _die_with_parent} if sys.platform.startswith("linux") else {}


#: Flags every run may carry, which name no stage.
_NOT_A_STAGE = (*DIAGNOSTIC_FLAGS, "--verify-each=false", "--emit-bytecode")


def _stage(command: list[str]) -> str:
    """A tool run's stage name: the tool and its first pass or flag."""
    tool = Path(command[0]).name
    flags = [c for c in command[1:] if c.startswith("--") and c not in _NOT_A_STAGE]
    return f"{tool} {flags[0].split('=')[0]}" if flags else tool


class Bytecode(bytes):
    """MLIR bytecode: a stage handed from one tool to the next in MLIR's binary
    form, which nova-opt writes and reads several times faster than the text
    (28 MB of tiled IR for a GPT-2-small step)."""


def _run(command: list[str], stdin: str | bytes | None, timeout: float | None) -> bytes:
    if isinstance(stdin, str):
        stdin = stdin.encode()
    try:
        with timed(_stage(command)):
            result = subprocess.run(
                command, input=stdin, capture_output=True, timeout=timeout,
                check=False, **tool_process_options(),
            )
    except subprocess.TimeoutExpired as error:
        stderr = error.stderr.decode(errors="replace") if error.stderr else ""
        raise NovaCompileError(command, -1, f"timed out after {timeout} s (the compile budget; "
                               f"NOVA_COMPILE_TIMEOUT_S sets it)\n{stderr}") from None
    if result.returncode != 0:
        raise NovaCompileError(command, result.returncode, result.stderr.decode(errors="replace"))
    return result.stdout


def run_opt(
    source: str | bytes, passes: Sequence[str] = (), *,
    timeout: float | None = DEFAULT_TIMEOUT_S, bytecode: bool = False
) -> str | Bytecode:
    """Runs ``nova-opt <passes>`` on ``source`` (MLIR text or bytecode) and returns
    the printed result, or with ``bytecode=True`` the result as :class:`Bytecode`.

    ``passes`` are nova-opt flags, e.g. ``["--nova-attach-target=target=nova-t1"]``
    (see :mod:`nova.compiler.pipeline`). Raises NovaCompileError, carrying
    nova-opt's diagnostics, when parsing, verification or a pass fails.
    """
    # Bytecode is for the next tool, which verifies it as it reads it: the IR
    # is then not verified again after every pass (NOVA_VERIFY_EACH=1 does).
    handed_on = ["--verify-each=false", "--emit-bytecode"] if bytecode else []
    if knobs().verify_each:
        handed_on = handed_on[1:]
    command = [str(find_tool("nova-opt")), *DIAGNOSTIC_FLAGS, *passes, *handed_on, "-"]
    output = _run(command, source, _budget(timeout))
    return Bytecode(output) if bytecode else output.decode()


def run_opt_file(
    path: str | Path, passes: Sequence[str] = (), *, timeout: float | None = DEFAULT_TIMEOUT_S
) -> str:
    """Like :func:`run_opt` on the file at ``path``, so diagnostics name that file."""
    command = [str(find_tool("nova-opt")), *DIAGNOSTIC_FLAGS, *passes, str(path)]
    return _run(command, None, _budget(timeout)).decode()


def run_translate(
    source: str | bytes, flags: Sequence[str], *, timeout: float | None = DEFAULT_TIMEOUT_S
) -> bytes:
    """Runs ``nova-translate <flags>`` on ``source`` (MLIR text or bytecode) and
    returns its output bytes."""
    command = [str(find_tool("nova-translate")), *DIAGNOSTIC_FLAGS, *flags, "-", "-o", "-"]
    return _run(command, source, _budget(timeout))
