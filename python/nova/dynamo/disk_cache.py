"""The on-disk cache of compiled graphs, so that a second process compiling
the same model skips compilation.

An entry is keyed by everything the program depends on: the graph (its
fingerprint: the code of the graph and of its subgraphs), the call's input
dtypes, shapes and strides (:func:`nova.dynamo.graph.call_key`), the
backend's options, the target (its file's contents), and the versions of
Nova, torch and torch-mlir plus the identity (size, mtime) of the nova-opt
and nova-translate binaries and of Nova's Python sources, which version
strings do not capture in a development tree. Programs are written with ``CompiledProgram.save`` and
read with :func:`nova.runtime.archive.load`; the per-op fallback's decision
for a graph (which nodes run in eager, and why) is a small JSON file.

The folder follows the XDG convention (``$XDG_CACHE_HOME/nova``, else
``~/.cache/nova``) and ``NOVA_CACHE_DIR`` overrides it
(:mod:`nova.knobs`); :func:`clear_disk_cache` or ``nova cache clear``
empties it. A damaged entry is a miss (and is removed), never an error.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: The subfolder of the cache folder that this backend owns.
_SUBDIR = "dynamo"


def cache_root() -> Path:
    """The backend's folder in Nova's cache folder (it may not exist yet)."""
    from nova.knobs import knobs

    folder = knobs().cache_dir
    if folder is None:  # pragma: no cover - knobs() always resolves it
        folder = Path("~/.cache/nova").expanduser()
    return folder / _SUBDIR


def clear_disk_cache() -> int:
    """Removes every cached program and decision; returns how many files went."""
    root = cache_root()
    if not root.is_dir():
        return 0
    count = sum(1 for path in root.rglob("*") if path.is_file())
    shutil.rmtree(root, ignore_errors=True)
    return count


def entry_key(fingerprint: str, call_key: tuple, options_key: str, target: str) -> str:
    """The digest naming the entry of one graph compiled for one call signature."""
    text = repr((fingerprint, call_key, options_key, _target_digest(target), _environment()))
    return hashlib.sha256(text.encode()).hexdigest()


def load_program(key: str) -> Any | None:
    """The program saved under ``key``, or None."""
    path = _path(key, ".nova")
    if not path.is_file():
        return None
    from nova.runtime.archive import load

    try:
        return load(path)
    except Exception as error:  # a damaged or foreign file: recompile instead
        logger.warning("nova: ignoring the damaged cache entry %s: %s", path, error)
        path.unlink(missing_ok=True)
        return None


def save_program(key: str, program: Any) -> bool:
    """Writes ``program`` under ``key`` (atomically); False if it cannot be saved."""
    save = getattr(program, "save", None)
    if save is None:
        return False
    return _write(_path(key, ".nova"), save)


def load_decision(key: str) -> dict | None:
    """The per-op fallback decision saved under ``key``, or None."""
    path = _path(key, ".json")
    try:
        decision = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return decision if isinstance(decision, dict) else None


def save_decision(key: str, decision: dict) -> bool:
    return _write(_path(key, ".json"),
                  lambda path: Path(path).write_text(json.dumps(decision, sort_keys=True)))


def _path(key: str, suffix: str) -> Path:
    return cache_root() / key[:2] / f"{key}{suffix}"


def _write(path: Path, write) -> bool:
    """``write(tmp)`` then a rename, so a reader never sees half a file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        os.close(fd)
        try:
            write(tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except Exception as error:  # a read-only or full disk must not stop the model
        logger.warning("nova: cannot write the cache entry %s: %s", path, error)
        return False
    return True


def _target_digest(target: str) -> str:
    """The target's file contents (its name when the file cannot be found,
    which the compiler then reports)."""
    from nova.binary.targets import target_file

    path = target_file(target)
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path else target
    except OSError:
        return target


@functools.lru_cache(maxsize=1)
def _environment() -> tuple:
    """The versions (and tool binaries) a compiled program depends on."""
    import importlib.metadata

    import torch

    from nova.compiler.tools import tools_dir
    from nova.version import __version__

    try:
        torch_mlir = importlib.metadata.version("torch-mlir")
    except importlib.metadata.PackageNotFoundError:
        torch_mlir = "unknown"
    tools = []
    for name in ("nova-opt", "nova-translate"):
        try:
            stat = (tools_dir() / name).stat()
            tools.append((name, stat.st_size, stat.st_mtime_ns))
        except OSError:
            tools.append((name, None, None))
    return (__version__, torch.__version__, torch_mlir, tuple(tools), _sources_digest())


def _sources_digest() -> str:
    """The identity (path, size, mtime) of Nova's Python sources: a development
    tree changes them without changing the version, and the frontend's code
    decides what a graph compiles to."""
    from nova.version import PACKAGE_DIR as root
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()
