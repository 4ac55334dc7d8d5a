"""Nova's version and the folder its package lives in, at the bottom of the package
so that any layer can read them without importing ``nova``'s top (the entry points)."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

#: The installed ``nova`` package folder.
PACKAGE_DIR = Path(__file__).resolve().parent
