"""How a tensor is laid out along one mesh axis."""

from __future__ import annotations

from dataclasses import dataclass

from nova.parallel.errors import ParallelError


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
