"""The mesh split as data: a logical mesh of chips, how a tensor lies along
each of its axes (placements), and a program's split tables (:class:`MeshLayout`:
the placements of every bound parameter, input and output).

A program carries its layout and its archive saves it (:mod:`nova.runtime.program`);
``nova.parallel`` computes it from a plan (and re-exports these names). The
pieces a chip holds and their reassembly are :mod:`nova.runtime.splits`'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from nova.errors import ParallelError

__all__ = ["Mesh", "MeshLayout", "Partial", "Placement", "Replicate", "Shard",
           "placements_from_json", "placements_to_json", "split_axes"]


@dataclass(frozen=True)
class Mesh:
    """Chips arranged row-major on a grid, e.g. ``Mesh((2, 2), ("dp", "tp"))``.

    Chip ``c`` sits at the row-major multi-index of ``c`` (as upstream
    ``shard.process_linear_index`` numbers devices).
    """

    shape: tuple[int, ...]
    axis_names: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "axis_names", tuple(self.axis_names))
        if not self.shape or any(not isinstance(s, int) or isinstance(s, bool) or s < 1
                                 for s in self.shape):
            raise ParallelError(f"mesh shape must be positive integers, got {self.shape!r}")
        if len(self.axis_names) != len(self.shape):
            raise ParallelError(f"mesh has {len(self.shape)} axes but {len(self.axis_names)} names")
        if len(set(self.axis_names)) != len(self.axis_names):
            raise ParallelError(f"mesh axis names must be distinct, got {self.axis_names!r}")

    @property
    def size(self) -> int:
        """Number of chips."""
        return math.prod(self.shape)

    def axis(self, name: str | int) -> int:
        """The index of axis ``name`` (a name or an index)."""
        if isinstance(name, int):
            if not 0 <= name < len(self.shape):
                raise ParallelError(f"mesh has no axis {name}")
            return name
        if name not in self.axis_names:
            raise ParallelError(f"mesh has no axis {name!r}; axes are {self.axis_names!r}")
        return self.axis_names.index(name)

    def coordinates(self, chip: int) -> tuple[int, ...]:
        """The row-major multi-index of ``chip``."""
        coords = []
        for size in reversed(self.shape):
            coords.append(chip % size)
            chip //= size
        return tuple(reversed(coords))


class Placement:
    """Base of the placements along one mesh axis."""


@dataclass(frozen=True)
class Shard(Placement):
    """Split tensor dimension ``dim`` evenly over the axis's chips."""

    dim: int

    def __post_init__(self) -> None:
        if isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 0:
            raise ParallelError(f"Shard dim must be a non-negative integer, got {self.dim!r}")


@dataclass(frozen=True)
class Replicate(Placement):
    """Every chip of the axis holds the whole tensor."""


@dataclass(frozen=True)
class Partial(Placement):
    """Every chip holds a partial sum. Arises inside a partitioned program
    (after a contraction over a split dimension); MLIR 22's ``shard.sharding``
    cannot state it for a program input, so plans reject it there."""


def split_axes(mesh_axes: Sequence[int], placements: Mapping[int, Placement],
               rank: int) -> list[list[int]]:
    """The ``split_axes`` of ``shard.sharding``: per tensor dimension, the
    mesh axes it is split over (in mesh-axis order)."""
    axes: list[list[int]] = [[] for _ in range(max(rank, 1))]
    for mesh_axis in mesh_axes:
        placement = placements.get(mesh_axis, Replicate())
        if isinstance(placement, Shard):
            if placement.dim >= rank:
                raise ParallelError(f"Shard({placement.dim}) of a rank-{rank} tensor")
            axes[placement.dim].append(mesh_axis)
    return axes


#: One tensor's placements: mesh axis -> placement (an axis left out: replicated).
Placements = Mapping[int, Placement]


@dataclass(frozen=True)
class MeshLayout:
    """A program's split tables: the mesh, and per bound parameter, input and
    output (in the binary's order) its placements. A tensor beyond the end of
    its table, or with no placements, is whole on every chip; an output so
    is chip 0's."""

    mesh: Mesh
    params: tuple[Placements, ...] = ()
    inputs: tuple[Placements, ...] = ()
    outputs: tuple[Placements, ...] = ()

    def __post_init__(self) -> None:
        for field in ("params", "inputs", "outputs"):
            object.__setattr__(self, field, tuple(dict(p) for p in getattr(self, field)))

    @staticmethod
    def of(table: Sequence[Placements], position: int) -> Placements:
        return table[position] if position < len(table) else {}

    def to_json(self) -> dict[str, Any]:
        return {"mesh": {"shape": list(self.mesh.shape), "names": list(self.mesh.axis_names)},
                "params": [placements_to_json(p) for p in self.params],
                "inputs": [placements_to_json(p) for p in self.inputs],
                "outputs": [placements_to_json(p) for p in self.outputs]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "MeshLayout":
        mesh = data["mesh"]
        return cls(Mesh(tuple(mesh["shape"]), tuple(mesh["names"])),
                   params=[placements_from_json(p) for p in data.get("params", [])],
                   inputs=[placements_from_json(p) for p in data["inputs"]],
                   outputs=[placements_from_json(p) for p in data["outputs"]])


def placements_to_json(placements: Placements) -> dict[str, list]:
    def one(p: Placement) -> list:
        if isinstance(p, Shard):
            return ["shard", p.dim]
        return ["partial"] if isinstance(p, Partial) else ["replicate"]
    return {str(axis): one(p) for axis, p in placements.items()}


def placements_from_json(data: Mapping[str, list]) -> dict[int, Placement]:
    def one(p: list) -> Placement:
        kind = p[0]
        if kind == "shard":
            return Shard(int(p[1]))
        return Partial() if kind == "partial" else Replicate()
    return {int(axis): one(p) for axis, p in data.items()}
