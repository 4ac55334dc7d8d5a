"""The chip count of a target system, checked before compiling: ``chips=9`` on the
8-chip ``nova-t1`` or a 16-chip mesh on it is refused at compile time rather than
simulated as a system that does not exist.

Target files are found where ``nova-attach-target`` finds them: a path, else
``<tools dir>/../targets/<name>.json`` (the installed package), else the source
tree's ``targets/``. A target that cannot be found or read is left to the
compiler, which reports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nova.parallel.errors import ChipCountError

_PACKAGE = Path(__file__).resolve().parents[1]  # .../nova


def _target_dirs() -> list[Path]:
    from nova.compiler.tools import tools_dir

    return [tools_dir().parent / "targets", _PACKAGE / "targets", _PACKAGE.parents[1] / "targets"]


def target_file(name: str) -> Path | None:
    """The JSON file of target ``name`` (a name in ``targets/`` or a path), or None."""
    path = Path(name)
    if path.suffix == ".json" and path.is_file():
        return path
    for folder in _target_dirs():
        candidate = folder / f"{name}.json"
        if candidate.is_file():
            return candidate
    return None


def available_targets() -> dict[str, Path]:
    """Every target file found, by name (the first of each name in search order)."""
    found: dict[str, Path] = {}
    for folder in _target_dirs():
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            found.setdefault(path.stem, path)
    return found


def _chips_of(path: Path) -> int | None:
    try:
        data: Any = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    chips = data.get("chips") if isinstance(data, dict) else None
    return chips if isinstance(chips, int) and not isinstance(chips, bool) and chips > 0 else None


def target_chips(name: str) -> int | None:
    """How many chips target ``name`` has, or None when its file cannot be read."""
    path = target_file(name)
    return None if path is None else _chips_of(path)


def _bigger_targets(requested: int) -> list[str]:
    names: dict[str, int] = {}
    for folder in _target_dirs():
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            chips = _chips_of(path)
            if chips is not None and chips >= requested:
                names.setdefault(path.stem, chips)
    return [f"{name} ({chips} chips)" for name, chips in names.items()]


def check_chips(target: str, requested: int, what: str) -> None:
    """Raises ChipCountError when ``requested`` chips (``what`` asked for them:
    ``"chips=9"``, ``"mesh (16,)"``...) are more than ``target`` has."""
    available = target_chips(target)
    if available is None or requested <= available:
        return
    bigger = _bigger_targets(requested)
    hint = (f"; targets with enough chips: {', '.join(bigger)}" if bigger else
            "; no installed target has that many (write a target file with more)")
    raise ChipCountError(
        f"{what} needs {requested} chips but target '{target}' has {available}{hint}",
        target, available, requested)
