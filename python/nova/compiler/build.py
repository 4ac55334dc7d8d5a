"""The one compile driver: imported IR -> (partitioned over a mesh) -> binary
-> a program that holds its metadata from construction on.

Every entry point hands over what it imported — ``nova.compile``, the dynamo
backend, the training-step compilers, ``nova.parallel`` — and gets a program
back: the linalg text and what the program binds (parameters, the call
binding, input splits); for a mesh, the program already carrying its
``shard`` annotations (:class:`Sharded`). Meshes and plans live above this
floor (docs/architecture.md), so they cross it as that annotated text, and a
program kind of a higher floor as a ``program`` factory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, MutableMapping, Sequence, TypeVar

import numpy as np

from nova.compiler import pipeline
from nova.compiler.compile import CompileResult, compile_linalg
from nova.compiler.driver import run_opt
from nova.compiler.options import TargetOptions
from nova.runtime.binding import CallBinding
from nova.runtime.program import CompiledProgram

__all__ = ["Sharded", "build_program", "partition"]

P = TypeVar("P")


@dataclass(frozen=True)
class Sharded:
    """A program annotated for a mesh (``shard.shard`` ops on its arguments and
    results, by :func:`nova.parallel.annotate.annotate`), to be partitioned
    into one SPMD program that every chip runs."""

    annotated: str
    #: The largest gradient all-reduce bucket in bytes (None: the pass's 25 MiB).
    bucket_bytes: int | None = None
    #: Called with (annotated, partitioned) text: raises where partitioning
    #: gives wrong numbers the passes do not see
    #: (``nova.parallel.split_tables.check_gathers_kept_whole``).
    check: Callable[[str, str], None] | None = None


def partition(sharded: Sharded, dump_dir: str | Path | None = None) -> str:
    """The per-chip SPMD program (nova collectives) of ``sharded``. The
    annotated text goes to ``dump_dir`` first (``0-sharded.mlir``): when
    partitioning fails, it is the reproducer."""
    if dump_dir is not None:
        folder = Path(dump_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "0-sharded.mlir").write_text(sharded.annotated)
    spmd = run_opt(sharded.annotated, pipeline.partition(sharded.bucket_bytes))
    if sharded.check is not None:
        sharded.check(sharded.annotated, spmd)
    return spmd


def build_program(linalg: str | Sharded, target: TargetOptions, *,
                  params: Sequence[np.ndarray] = (), binding: CallBinding | None = None,
                  splits: dict[int, Any] | None = None,
                  dump_dir: str | Path | None = None, double_buffer: bool = True,
                  tile_search: bool | None = None,
                  cache: MutableMapping[str, CompileResult] | None = None,
                  cache_key: str | None = None,
                  grad_shards: tuple[str, ...] = (), zero: int = 0,
                  program: Callable[[CompileResult], P] | None = None
                  ) -> CompiledProgram | P:
    """Compiles imported linalg-on-tensors text for ``target`` and returns the program.

    ``linalg`` is the frontend's text, or a :class:`Sharded` one for a mesh
    (partitioned first; the annotated text is kept as the ``sharded`` stage).
    ``dump_dir``, ``double_buffer`` and ``tile_search`` are
    :func:`nova.compiler.compile.compile_linalg`'s. ``cache`` (with
    ``cache_key``) holds earlier compiles: a hit is not compiled again and a
    miss is stored.

    The program is a :class:`~nova.runtime.program.CompiledProgram` binding
    ``params``, ``binding`` and ``splits`` (and, for the memory report of a
    ZeRO step, ``zero`` and ``grad_shards``), or whatever ``program`` makes of
    the compile result (a program kind of a higher floor, given its metadata
    there). Raises NovaCompileError naming the user's line.
    """
    result = cache.get(cache_key) if cache is not None else None
    if result is None:
        text = partition(linalg, dump_dir) if isinstance(linalg, Sharded) else linalg
        result = compile_linalg(text, target, dump_dir=dump_dir, double_buffer=double_buffer,
                                tile_search=tile_search)
        if isinstance(linalg, Sharded):
            result.stages["sharded"] = linalg.annotated
        if cache is not None:
            cache[cache_key] = result
    if program is not None:
        return program(result)
    return CompiledProgram(result.binary, params, stages=result.stages, binding=binding,
                           splits=splits, grad_shards=grad_shards, zero=zero)
