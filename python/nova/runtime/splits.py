"""How an SPMD program's tensor is split over its chips: the host gives the
whole tensor, each chip gets its piece, and a read puts the pieces back.

``CompiledProgram(splits={position: split})`` takes a :class:`DimSplit`
(one dimension over every chip, as 1-D data parallelism splits the batch)
or any object with the same three methods and ``count`` -- such as
:class:`MeshSplit`, placements on an n-D mesh (:mod:`nova.runtime.mesh`),
which a program with a :class:`~nova.runtime.mesh.MeshLayout` uses for its
parameters, inputs and outputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

import numpy as np

from nova.errors import ParallelError
from nova.runtime.mesh import Mesh, Placement, Shard, split_axes

__all__ = ["ChipSplit", "DimSplit", "MeshSplit", "as_split", "assemble", "local_shard"]


class ChipSplit(Protocol):
    #: Into how many distinct pieces the tensor is cut (memory per chip = 1/count).
    count: int

    def global_shape(self, local: Sequence[int]) -> list[int]: ...

    def pieces(self, array: np.ndarray) -> list[np.ndarray]: ...

    def join(self, pieces: Sequence[np.ndarray]) -> np.ndarray: ...


@dataclass(frozen=True)
class DimSplit:
    """Dimension ``dim`` split evenly over ``chips`` chips (chip c holds piece c)."""

    dim: int
    chips: int

    @property
    def count(self) -> int:
        return self.chips

    def global_shape(self, local: Sequence[int]) -> list[int]:
        shape = list(local)
        shape[self.dim] *= self.chips
        return shape

    def pieces(self, array: np.ndarray) -> list[np.ndarray]:
        return np.split(array, self.chips, axis=self.dim)

    def join(self, pieces: Sequence[np.ndarray]) -> np.ndarray:
        return np.concatenate(list(pieces), axis=self.dim)


def as_split(split: "int | ChipSplit", chips: int) -> "ChipSplit":
    """``split`` as a split object: an int is a dimension split over all ``chips``."""
    if isinstance(split, (int, np.integer)) and not isinstance(split, bool):
        return DimSplit(int(split), chips)
    return split


def local_shard(array: np.ndarray, mesh: Mesh, placements: Mapping[int, Placement],
                chip: int) -> np.ndarray:
    """The piece of ``array`` that ``chip`` holds: along each split dimension,
    the block at the chip's row-major index over that dimension's mesh axes
    (the layout ``shard-partition`` assumes)."""
    coords = mesh.coordinates(chip)
    piece = array
    for dim, axes in enumerate(split_axes(range(len(mesh.shape)), placements, array.ndim)):
        if not axes:
            continue
        count, index = 1, 0
        for axis in axes:
            count *= mesh.shape[axis]
            index = index * mesh.shape[axis] + coords[axis]
        if piece.shape[dim] % count:
            raise ParallelError(f"dimension {dim} of size {piece.shape[dim]} does not split "
                                f"evenly over {count} chips")
        size = piece.shape[dim] // count
        piece = np.take(piece, np.arange(index * size, (index + 1) * size), axis=dim)
    # Not np.ascontiguousarray, which makes a 0-d array 1-d.
    return piece if piece.flags.c_contiguous else np.array(piece, order="C")


def assemble(pieces: list[np.ndarray], mesh: Mesh, placements: Mapping[int, Placement]
             ) -> np.ndarray:
    """The whole tensor from every chip's piece (``pieces[chip]``), the inverse
    of :func:`local_shard`: split dimensions are concatenated in chip order,
    replicated axes read from coordinate 0."""
    axes_of = split_axes(range(len(mesh.shape)), placements, pieces[0].ndim)
    split = {axis for axes in axes_of for axis in axes}
    # One chip per block: coordinate 0 on every axis the tensor is replicated over.
    chips = [c for c in range(mesh.size)
             if all(coord == 0 for axis, coord in enumerate(mesh.coordinates(c))
                    if axis not in split)]
    shape = list(pieces[0].shape)
    for dim, axes in enumerate(axes_of):
        for axis in axes:
            shape[dim] *= mesh.shape[axis]
    result = np.empty(shape, dtype=pieces[0].dtype)
    for chip in chips:
        coords = mesh.coordinates(chip)
        index = []
        for dim, axes in enumerate(axes_of):
            block = 0
            for axis in axes:
                block = block * mesh.shape[axis] + coords[axis]
            size = pieces[chip].shape[dim]
            index.append(slice(block * size, (block + 1) * size))
        result[tuple(index)] = pieces[chip]
    return result


class MeshSplit:
    """A tensor placed on an n-D mesh, as a split: chip c gets
    :func:`local_shard`, a read :func:`assemble` s the pieces."""

    def __init__(self, mesh: Mesh, placements: Mapping[int, Placement]) -> None:
        self.mesh = mesh
        self.placements = dict(placements)

    def _axes(self, rank: int) -> list[list[int]]:
        return split_axes(range(len(self.mesh.shape)), self.placements, rank)

    @property
    def count(self) -> int:
        count = 1
        for axis, placement in self.placements.items():
            if isinstance(placement, Shard):
                count *= self.mesh.shape[axis]
        return count

    def global_shape(self, local) -> list[int]:
        shape = list(local)
        for dim, axes in enumerate(self._axes(len(shape))):
            for axis in axes:
                shape[dim] *= self.mesh.shape[axis]
        return shape

    def pieces(self, array: np.ndarray) -> list[np.ndarray]:
        return [local_shard(array, self.mesh, self.placements, chip)
                for chip in range(self.mesh.size)]

    def join(self, pieces) -> np.ndarray:
        return assemble(list(pieces), self.mesh, self.placements)

    def __repr__(self) -> str:
        return f"MeshSplit({self.mesh.shape}, {self.placements})"
