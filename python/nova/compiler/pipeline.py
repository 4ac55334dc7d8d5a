"""The one place where nova-opt pass flags are spelled.

Stages grow here as the lowering lands (torch -> linalg -> nova -> nova_isa ->
binary); callers ask for a stage's flags and never build pass strings
themselves.
"""

from __future__ import annotations

from nova.compiler.options import TargetOptions

# Diagnostics name the source location; printing the whole failing module after
# every error (MLIR's default) buries them. Locations are printed with the IR
# handed from one stage to the next, so that an instruction of the binary (a
# run-time assertion among them) still names the model's line of Python.
DIAGNOSTIC_FLAGS = ("--mlir-print-op-on-diagnostic=false", "--mlir-print-debuginfo")


def attach_target(target: TargetOptions) -> str:
    """The ``nova-attach-target`` flag that attaches ``target`` to the module."""
    options = f"target={target.name}"
    if target.chips:
        options += f" chips={target.chips}"
    return f"--nova-attach-target={options}"


def partition(bucket_bytes: int | None = None) -> list[str]:
    """``shard``-annotated linalg -> per-chip SPMD linalg with nova collectives;
    ``bucket_bytes``: the largest all-reduce bucket (None: the pass's 25 MiB)."""
    if bucket_bytes is None:
        return ["--nova-partition"]
    return [f"--nova-partition=bucket-bytes={int(bucket_bytes)}"]


def lower_to_tiles(target: TargetOptions, roll_layers: bool | None = None,
                   tile: tuple[int, int] | None = None) -> list[str]:
    """linalg-on-tensors -> tiled, bufferized ``nova`` ops on ``target``;
    ``roll_layers``: identical consecutive layers share one loop's code
    (nova-roll-layers; None: the ``NOVA_ROLL_LAYERS`` knob, on by default);
    ``tile``: nova-tile's (max-rows, max-cols) instead of its defaults."""
    if roll_layers is None:
        from nova.knobs import knobs

        roll_layers = knobs().roll_layers
    options = f"target={target.name}"
    if target.chips:
        options += f" chips={target.chips}"
    if not roll_layers:
        options += " roll-layers=false"
    if tile is not None:
        options += f" tile-max-rows={int(tile[0])} tile-max-cols={int(tile[1])}"
    return [f"--nova-lower-to-tiles={options}"]


def stage_tiles(target: TargetOptions) -> list[str]:
    """linalg -> tiles for one pipeline stage's body, to be stitched with the
    others into one program: layers straight-line (a stitched module has no
    loop over layers), types printed in local scope (the bodies are nested in
    one file)."""
    return lower_to_tiles(target, roll_layers=False) + ["--mlir-print-local-scope"]


def merge_stages(microbatches: int) -> list[str]:
    """Stage modules nested in one module -> one function per stage (chip)
    passing ``microbatches`` activations from stage to stage (GPipe forward)."""
    return [f"--nova-merge-stages=microbatches={int(microbatches)}"]


def tiles_to_isa(double_buffer: bool = True) -> list[str]:
    """Tiled ``nova`` ops -> memory-planned ``nova_isa`` instructions."""
    return [f"--nova-tiles-to-isa=double-buffer={'true' if double_buffer else 'false'}"]


def isa_to_binary() -> list[str]:
    """nova-translate flags that encode ``nova_isa`` as a ``.nova`` binary."""
    return ["--nova-to-binary"]
