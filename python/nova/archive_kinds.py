"""The kinds of saved program ``nova.load`` reads: meta.json's ``format`` -> the
loader of that kind.

Each kind's module registers its own loader (:func:`register`) when it is
imported. :data:`PROVIDERS` names the module of each kind so that
:func:`loader_for` can import it the first time an archive of that kind is
read: ``nova.runtime`` (which reads the archive and checks what every kind
shares) then needs to know nothing of the parallel or training packages, and
loading a single-chip program imports neither.

This module imports nothing: it sits at the package's top so that any part of
Nova can use it without pulling another part in.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["PROVIDERS", "Loader", "loader_for", "register"]

#: ``loader(archive, meta, path, import_types) -> program``: ``archive`` is the
#: open ``zipfile.ZipFile`` (its meta.json parsed into ``meta`` and every
#: ``.npy`` member's header already checked), ``path`` names the file in errors.
Loader = Callable[..., Any]

#: format -> the module that registers its loader on import.
PROVIDERS: dict[str, str] = {
    "nova-program/1": "nova.runtime.program_archive",
    "nova-program/2": "nova.runtime.program_archive",
    "nova-parallel-program/1": "nova.runtime.program_archive",
    "nova-train-step/1": "nova.training.saved",
}

_LOADERS: dict[str, Loader] = {}


def register(format: str, loader: Loader) -> None:
    """Makes ``loader`` read archives whose meta.json ``format`` is ``format``."""
    if _LOADERS.get(format, loader) is not loader:
        raise ValueError(f"archive format {format!r} already has a loader")
    _LOADERS[format] = loader


def loader_for(format: Any) -> Loader | None:
    """The loader of ``format`` (importing its module when needed), or None."""
    if not isinstance(format, str):
        return None
    if format not in _LOADERS and format in PROVIDERS:
        importlib.import_module(PROVIDERS[format])
    return _LOADERS.get(format)
