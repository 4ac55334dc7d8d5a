"""Compilation as named stages: linalg -> nova (tiles) -> nova_isa -> binary.

Each stage's output can be written to a folder (``dump_dir``) so a user can
read the IR at every step, the way Triton keeps ttir/ttgir/ptx.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from nova.compiler import pipeline
from nova.compiler.diagnostics import user_frame
from nova.compiler.driver import Bytecode, run_opt, run_translate
from nova.compiler.errors import NovaCompileError
from nova.compiler.options import TargetOptions
from nova.compiler.stage_texts import StageTexts

STAGES = ("linalg", "nova", "nova_isa", "binary")
_ON_CHIP_OVERFLOW = re.compile(r"needs \d+ bytes of (sram|acc) but target")


@dataclass
class CompileResult:
    """The binary and the text of every stage (keys of :data:`STAGES`)."""

    binary: bytes
    stages: StageTexts = field(default_factory=StageTexts)
    #: False when double buffering was asked for but the program did not fit
    #: the chip's SRAM / accumulator with it, and was compiled without.
    double_buffered: bool = True
    #: nova-tile's (max-rows, max-cols) when a tile-size search chose them.
    tile: tuple[int, int] | None = None


def _dump(dump_dir: Path | None, index: int, name: str, content: str | bytes) -> None:
    if dump_dir is None:
        return
    dump_dir.mkdir(parents=True, exist_ok=True)
    suffix = ".nova" if isinstance(content, bytes) else ".mlir"
    path = dump_dir / f"{index}-{name}{suffix}"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def tiles_to_isa(tiles: str | bytes, double_buffer: bool = True) -> tuple[Bytecode, bool]:
    """``nova-tiles-to-isa`` on tiled ``nova`` IR (text or bytecode): the ISA
    as bytecode, and whether it is double-buffered. nova-double-buffer gives
    each double-buffered loop's tiles two slots without knowing what else is
    live; when that overflows the SRAM or the accumulator, single buffers may
    still fit, and the program is compiled with them."""
    try:
        return (run_opt(tiles, pipeline.tiles_to_isa(double_buffer), bytecode=True),
                double_buffer)
    except NovaCompileError as error:
        if not double_buffer or not _ON_CHIP_OVERFLOW.search(error.stderr):
            raise
    return run_opt(tiles, pipeline.tiles_to_isa(False), bytecode=True), False


def tiles_to_binary(tiles: str | bytes,
                    double_buffer: bool = True) -> tuple[Bytecode, bool, bytes]:
    """tiles -> ISA -> binary: the ISA (bytecode), whether it is
    double-buffered, and the binary."""
    isa, double_buffered = tiles_to_isa(tiles, double_buffer)
    return isa, double_buffered, run_translate(isa, pipeline.isa_to_binary())


def _lower(linalg: str, target: TargetOptions, double_buffer: bool,
           roll_layers: bool | None = None,
           tile: tuple[int, int] | None = None) -> tuple[Bytecode, Bytecode, bool, bytes]:
    """linalg -> tiles -> ISA -> binary: the tiles and the ISA (bytecode),
    whether it is double-buffered, and the binary."""
    tiles = run_opt(linalg, pipeline.lower_to_tiles(target, roll_layers=roll_layers,
                                                    tile=tile), bytecode=True)
    return (tiles, *tiles_to_binary(tiles, double_buffer))


def lower(linalg: str, target: TargetOptions, double_buffer: bool,
          tile: tuple[int, int] | None = None) -> tuple[Bytecode, Bytecode, bool, bytes]:
    """:func:`_lower` with layers rolled into a loop when that compiles and
    pays: the tiles and the ISA (bytecode), whether double-buffered, the binary."""
    try:
        tiles, isa, double_buffered, binary = _lower(linalg, target, double_buffer, tile=tile)
    except NovaCompileError:
        # A program whose loop over layers (nova-roll-layers) does not
        # compile (its tiles overflow a small chip's SRAM, or a carried
        # value bufferization cannot keep in place) is compiled with
        # every layer straight-line, as without the loop.
        from nova.knobs import knobs

        if not knobs().roll_layers:
            raise
        return _lower(linalg, target, double_buffer, roll_layers=False, tile=tile)
    if double_buffer and not double_buffered and "nova.layers" in run_opt(tiles):
        # The loop over layers fits only single-buffered: every layer
        # straight-line but double-buffered is the faster program
        # (Hugging Face GPT-2: 1.38x), at the binary size of before.
        try:
            straight = _lower(linalg, target, double_buffer, roll_layers=False, tile=tile)
        except NovaCompileError:
            straight = None
        if straight is not None and straight[2]:
            return straight
    return tiles, isa, double_buffered, binary


def compile_linalg(linalg: str, target: TargetOptions, *,
                   dump_dir: str | Path | None = None,
                   double_buffer: bool = True,
                   tile_search: bool | None = None) -> CompileResult:
    """Compiles linalg-on-tensors text (from :mod:`nova.frontend`) to a binary.

    ``tile_search``: pick nova-tile's limits by simulating candidates
    (:mod:`nova.compiler.tile_search`, cached per program and target; None:
    the ``NOVA_TILE_SEARCH`` knob, off by default).

    Raises NovaCompileError (a NovaModelCompileError) whose message starts with
    the user's source line the first diagnostic came from and that diagnostic.
    """
    folder = Path(dump_dir) if dump_dir is not None else None
    result = CompileResult(binary=b"")
    _dump(folder, 0, "linalg", linalg)
    result.stages["linalg"] = linalg
    if tile_search is None:
        from nova.knobs import knobs

        tile_search = knobs().tile_search
    tile = None
    try:
        if tile_search:
            from nova.compiler.tile_search import search

            tile = search(linalg, target,
                          lambda t: lower(linalg, target, double_buffer, t)[3]).tile
        result.tile = tile
        tiles, isa, result.double_buffered, binary = lower(linalg, target, double_buffer, tile)
        result.stages["nova"] = tiles
        result.stages["nova_isa"] = isa
        if folder is not None:  # printed as text only when asked for
            _dump(folder, 1, "nova", result.stages["nova"])
            _dump(folder, 2, "nova_isa", result.stages["nova_isa"])
    except NovaCompileError as error:
        raise NovaCompileError(error.command, error.returncode, error.stderr,
                               user_frame(error.stderr), model=True) from None
    _dump(folder, 3, "binary", binary)
    result.stages["binary"] = binary
    result.binary = binary
    return result
