"""How an SPMD program's input is split over its chips: the host gives the
whole tensor, each chip gets its piece, and a read puts the pieces back.

``CompiledProgram(splits={position: split})`` takes a :class:`DimSplit`
(one dimension over every chip, as 1-D data parallelism splits the batch)
or any object with the same three methods and ``count`` -- such as
:class:`nova.parallel.shards.MeshSplit`, a placement on an n-D mesh."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

__all__ = ["ChipSplit", "DimSplit", "as_split"]


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
