"""A logical mesh of chips: a shape and one name per axis."""

from __future__ import annotations

import math
from dataclasses import dataclass

from nova.parallel.errors import ParallelError


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
