"""The one compile driver: imported IR -> (partitioned over a mesh) -> binary
-> a program that holds its metadata from construction on.

Pipeline programs come in two further forms: :class:`Stages` (each stage's
linalg, merged into one program by ``nova-merge-stages``) and :class:`Tiles`
(tiled ``nova`` text a caller stitched from stage bodies it lowered with
:func:`stage_tiles`, as a pipeline training step does); the program kinds of
pipelines (a higher floor) come in as a ``program`` factory of the compile result.

Every entry point hands over what it imported — ``nova.compile``, the dynamo
backend, the training-step compilers, ``nova.parallel`` — and gets a program
back: the linalg text and what the program binds (parameters, the call
binding, input splits); for a mesh, the program already carrying its
``shard`` annotations (:class:`Sharded`) and its split tables (a
:class:`~nova.runtime.mesh.MeshLayout`: the one program class carries the mesh
split as data). Plans live above this floor (docs/architecture.md), so they
cross it as that annotated text and those tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, MutableMapping, Sequence, TypeVar

import numpy as np

from nova.compiler import pipeline
from nova.compiler.compile import CompileResult, compile_linalg, tiles_to_binary
from nova.compiler.stage_texts import StageTexts
from nova.compiler.stage_times import timed
from nova.compiler.driver import run_opt
from nova.compiler.options import TargetOptions
from nova.runtime.binding import CallBinding
from nova.runtime.mesh import MeshLayout
from nova.runtime.program import CompiledProgram

__all__ = ["Sharded", "Stages", "Tiles", "build_binary", "build_program", "partition",
           "stage_tiles"]

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


@dataclass(frozen=True)
class Stages:
    """Pipeline stages (stage ``s`` on chip ``s``): each stage's linalg text,
    lowered alone (:func:`stage_tiles`) and merged into one program whose
    stages pass ``microbatches`` activations on (``nova-merge-stages``)."""

    linalg: tuple[str, ...]
    microbatches: int


@dataclass(frozen=True)
class Tiles:
    """Tiled ``nova`` text, compiled from the tiles on (to ISA, then binary)."""

    text: str


def stage_tiles(linalg: str, target: TargetOptions) -> str:
    """One pipeline stage's body lowered to tiles, to be stitched with the others."""
    return run_opt(linalg, pipeline.stage_tiles(target))


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
                  output_splits: dict[int, Any] | None = None,
                  dump_dir: str | Path | None = None, double_buffer: bool = True,
                  tile_search: bool | None = None,
                  cache: MutableMapping[str, CompileResult] | None = None,
                  cache_key: str | None = None,
                  grad_shards: tuple[str, ...] = (), zero: int = 0,
                  layout: MeshLayout | Callable[[bytes], MeshLayout] | None = None,
                  state_names: Sequence[str] | None = None,
                  relayouts: dict[str, Any] | None = None,
                  program: Callable[[CompileResult], P] | None = None
                  ) -> CompiledProgram | P:
    """Compiles imported linalg-on-tensors text for ``target`` and returns the program.

    ``linalg`` is the frontend's text, a :class:`Sharded` one for a mesh
    (partitioned first; the annotated text is kept as the ``sharded`` stage),
    or a pipeline's :class:`Stages` or :class:`Tiles` (:func:`build_binary`).
    ``dump_dir``, ``double_buffer`` and ``tile_search`` are
    :func:`nova.compiler.compile.compile_linalg`'s. ``cache`` (with
    ``cache_key``) holds earlier compiles: a hit is not compiled again and a
    miss is stored.

    The program is a :class:`~nova.runtime.program.CompiledProgram` binding
    ``params`` (whole), ``binding`` and ``splits`` (and, for the memory report
    of a ZeRO step, ``zero`` and ``grad_shards``). On a mesh, ``layout`` places
    its parameters, inputs and outputs on the chips -- or makes that placement
    from the binary, where partitioning decides it (an argument the program
    never reads stays whole). ``state_names`` and ``relayouts`` let it load a
    state dict. ``program`` makes a program of another kind from the compile
    result instead (a pipeline's, of a higher floor, given its metadata there).
    Raises NovaCompileError naming the user's line.
    """
    result = cache.get(cache_key) if cache is not None else None
    if result is None:
        result = build_binary(linalg, target, dump_dir=dump_dir, double_buffer=double_buffer,
                              tile_search=tile_search)
        if cache is not None:
            cache[cache_key] = result
    if program is not None:
        return program(result)
    if callable(layout):
        layout = layout(result.binary)
    with timed("load the binary (read, validate)"):
        return CompiledProgram(result.binary, params, stages=result.stages, binding=binding,
                               splits=splits, output_splits=output_splits, grad_shards=grad_shards,
                               zero=zero, layout=layout, state_names=state_names,
                               relayouts=relayouts)


def build_binary(source: str | Sharded | Stages | Tiles, target: TargetOptions | None, *,
                 dump_dir: str | Path | None = None, double_buffer: bool = True,
                 tile_search: bool | None = None) -> CompileResult:
    """The binary (and every stage's text) of ``source``: linalg text, a
    :class:`Sharded` program (partitioned first; the annotated text is kept as
    the ``sharded`` stage), pipeline :class:`Stages` or :class:`Tiles` (whose
    text holds its target already: ``target`` may be None)."""
    if isinstance(source, (Stages, Tiles)):
        if isinstance(source, Stages):
            nested = "module {\n" + "\n".join(stage_tiles(text, target)
                                               for text in source.linalg) + "\n}\n"
            tiles = run_opt(nested, pipeline.merge_stages(source.microbatches))
        else:
            tiles = source.text
        isa, double_buffered, binary = tiles_to_binary(tiles, double_buffer)
        return CompileResult(binary, StageTexts({"nova": tiles, "nova_isa": isa,
                                                 "binary": binary}),
                             double_buffered=double_buffered)
    text = partition(source, dump_dir) if isinstance(source, Sharded) else source
    result = compile_linalg(text, target, dump_dir=dump_dir, double_buffer=double_buffer,
                            tile_search=tile_search)
    if isinstance(source, Sharded):
        result.stages["sharded"] = source.annotated
    return result
