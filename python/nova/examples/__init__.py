"""Sample Nova programs shipped with the package (``nova/examples/*.mlir``)."""

from __future__ import annotations

from pathlib import Path

_DIR = Path(__file__).resolve().parent


def available() -> list[str]:
    """Names of the shipped examples (file names without ``.mlir``)."""
    return sorted(path.stem for path in _DIR.glob("*.mlir"))


def example_path(name: str) -> Path:
    """Path of the example ``name``; raises ValueError for an unknown one."""
    path = _DIR / f"{name}.mlir"
    if not path.is_file():
        raise ValueError(f"unknown example '{name}', expected one of {', '.join(available())}")
    return path
