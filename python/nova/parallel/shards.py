"""Per-chip pieces of a tensor placed on a mesh."""

from __future__ import annotations

from typing import Mapping

import numpy as np

from nova.parallel.mesh import Mesh
from nova.parallel.placements import Placement
from nova.parallel.plan import split_axes


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
            raise ValueError(f"dimension {dim} of size {piece.shape[dim]} does not split "
                             f"evenly over {count} chips")
        size = piece.shape[dim] // count
        piece = np.take(piece, np.arange(index * size, (index + 1) * size), axis=dim)
    return np.ascontiguousarray(piece)
