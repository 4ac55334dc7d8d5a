"""Opens a ``.novaprog`` (saved program) or bare ``.nova`` binary named on the command line."""

from __future__ import annotations

from pathlib import Path

from nova.cli.errors import ProgramFileError
from nova.runtime.errors import NovaRuntimeError
from nova.runtime.archive import load
from nova.runtime.program import CompiledProgram


def load_program(path: str | Path) -> CompiledProgram:
    """``nova.load(path)`` with every failure turned into a one-line ProgramFileError
    (``nova.load`` names the file and the problem in each of its errors)."""
    path = Path(path)
    if not path.is_file():
        raise ProgramFileError(f"{path}: no such file")
    try:
        loaded = load(path, import_types=True)
    except NovaRuntimeError as error:
        text, prefix = str(error), f"{path}: "
        detail = text[len(prefix):] if text.startswith(prefix) else text
        raise ProgramFileError(f"{path}: not a valid Nova program: {_one_line(detail)}") from error
    except OSError as error:
        raise ProgramFileError(f"{path}: cannot read: {error.strerror or error}") from error
    # A saved training step (nova.training.saved) is inspected and run as its step program.
    inner = getattr(loaded, "program", None)
    return inner if isinstance(inner, CompiledProgram) else loaded


def _one_line(text: str) -> str:
    """Escapes newlines and other control characters (names inside a damaged file
    may hold any), so that the error stays one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
