"""Target files: the one Python place that finds, reads and validates them.

A target name is found where ``nova-attach-target`` finds it: a ``.json`` path,
else ``<tools dir>/../targets/<name>.json`` (the installed package), else
``nova/targets`` and the source tree's ``targets/``. What a file holds is checked
against :mod:`nova.binary.target_schema`; ``nova.sim.target`` builds its
``Target`` from the validated dict, ``nova.parallel.target_chips`` checks chip
counts and the compiler's tile search keys its cache on the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nova.binary.errors import TargetError
from nova.binary.target_schema import validate_target
from nova.knobs import knobs

__all__ = ["available_targets", "load_target_dict", "read_target_json", "target_dirs", "target_file"]

_PACKAGE = Path(__file__).resolve().parents[1]  # .../nova


def target_dirs() -> list[Path]:
    """The folders searched for ``<name>.json``, first match wins: next to the tools
    (``NOVA_TOOLS_DIR/../targets`` or the package's), the package's, the source tree's."""
    tools = knobs().tools_dir or _PACKAGE / "bin"  # the tools' folder (nova.compiler.tools)
    return [tools.parent / "targets", _PACKAGE / "targets", _PACKAGE.parents[1] / "targets"]


def target_file(name: str) -> Path | None:
    """The JSON file of target ``name`` (a name in ``targets/`` or a path), or None."""
    path = Path(name)
    if path.suffix == ".json" and path.is_file():
        return path
    for folder in target_dirs():
        candidate = folder / f"{name}.json"
        if candidate.is_file():
            return candidate
    return None


def available_targets() -> dict[str, Path]:
    """Every target file found, by name (the first of each name in search order)."""
    found: dict[str, Path] = {}
    for folder in target_dirs():
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            found.setdefault(path.stem, path)
    return found


def read_target_json(path: str | Path) -> Any:
    """The JSON value of a target file, not yet validated; a file that cannot be read
    or parsed is a :class:`TargetError` naming it."""
    p = Path(path)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError) as e:  # ValueError: not JSON, not UTF-8
        raise TargetError(f"cannot read target '{p}': {e}") from e


def load_target_dict(path: str | Path) -> dict[str, Any]:
    """A target file read and validated against the schema (errors name the file)."""
    p = Path(path)
    return validate_target(read_target_json(p), f"target file '{p}'")
