"""The chip count of a target system, checked before compiling: ``chips=9`` on the
8-chip ``nova-t1`` or a 16-chip mesh on it is refused at compile time rather than
simulated as a system that does not exist.

Target files are found and read by :mod:`nova.binary.targets`. A target that cannot
be found or read is left to the compiler, which reports it.
"""

from __future__ import annotations

from pathlib import Path

from nova.binary.errors import TargetError
from nova.binary.targets import read_target_json, target_dirs, target_file
from nova.parallel.errors import ChipCountError


def _chips_of(path: Path) -> int | None:
    try:
        data = read_target_json(path)
    except TargetError:
        return None
    chips = data.get("chips") if isinstance(data, dict) else None
    return chips if isinstance(chips, int) and not isinstance(chips, bool) and chips > 0 else None


def target_chips(name: str) -> int | None:
    """How many chips target ``name`` has, or None when its file cannot be read."""
    path = target_file(name)
    return None if path is None else _chips_of(path)


def _bigger_targets(requested: int) -> list[str]:
    names: dict[str, int] = {}
    for folder in target_dirs():
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            chips = _chips_of(path)
            if chips is not None and chips >= requested:
                names.setdefault(path.stem, chips)
    # The smallest that suffice first.
    return [f"{name} ({chips} chips)" for name, chips in sorted(names.items(), key=lambda kv: (kv[1], kv[0]))]


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
