"""Locating the C++ tools that the Python package drives."""

from __future__ import annotations

import os
from pathlib import Path

from nova.compiler.errors import NovaToolNotFoundError
from nova.knobs import knobs

TOOL_NAMES = ("nova-opt", "nova-translate")

# The wheel installs the tools next to this package: site-packages/nova/bin.
_PACKAGE_BIN = Path(__file__).resolve().parent.parent / "bin"


def tools_dir() -> Path:
    """The folder the tools are taken from: ``NOVA_TOOLS_DIR`` if set, else ``nova/bin``."""
    override = knobs().tools_dir
    return override if override is not None else _PACKAGE_BIN


def find_tool(name: str) -> Path:
    """Returns the path of tool ``name`` (one of :data:`TOOL_NAMES`).

    Raises NovaToolNotFoundError, naming the folder searched, when it is
    missing or not executable.
    """
    if name not in TOOL_NAMES:
        raise ValueError(f"unknown tool '{name}', expected one of {', '.join(TOOL_NAMES)}")
    folder = tools_dir()
    path = folder / name
    if not path.is_file() or not os.access(path, os.X_OK):
        source = "NOVA_TOOLS_DIR" if knobs().tools_dir is not None else "the nova package"
        raise NovaToolNotFoundError(
            f"cannot find an executable {name} in {folder} (from {source}); "
            "reinstall the package (scripts/setup) or point NOVA_TOOLS_DIR at a build's bin/"
        )
    return path
