"""``nova --version``: Nova's version and those of what it is built on."""

from __future__ import annotations

import re
import subprocess
from importlib import metadata

import nova


def _distribution(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _mlir() -> str:
    """The LLVM/MLIR version nova-opt was built with (it prints LLVM's banner)."""
    from nova.compiler.tools import find_tool

    try:
        banner = subprocess.run([str(find_tool("nova-opt")), "--version"], capture_output=True,
                                text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError, nova.NovaError) as error:
        return f"unknown ({error})"
    match = re.search(r"LLVM version (\S+)", banner)
    return match[1] if match else "unknown"


def versions() -> dict[str, str]:
    """Nova, torch, torch-mlir and the MLIR of nova-opt, by name."""
    return {"nova": nova.__version__, "torch": _distribution("torch"),
            "torch-mlir": _distribution("torch-mlir"), "MLIR (nova-opt)": _mlir()}


def version_text() -> str:
    return "\n".join(f"{name:<16s}{value}" for name, value in versions().items()) + "\n"
