"""Chip-to-chip links and routes for the four topologies of a target.

* ``switch``  full crossbar; every chip has one port (``cI->sw`` out, ``sw->cI`` in).
* ``ring``    bidirectional ring, links ``cI->cJ`` between neighbours, shortest way round.
* ``torus2d`` r x c torus (r the largest divisor of ``chips`` <= sqrt(chips)),
              dimension-order routing (along the row first, then the column), shortest way.
* ``pcie``    tree through the host: every transfer goes up ``cI->host`` and down ``host->cJ``.

Every link carries ``link_gbps`` per direction and adds ``link_latency_ns`` per hop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .errors import ScalarFaultError
from .target import Target


@dataclass(frozen=True)
class Route:
    links: tuple[str, ...]
    latency_ns: float


def torus_shape(chips: int) -> tuple[int, int]:
    """(rows, cols) with rows the largest divisor of ``chips`` <= sqrt(chips)."""
    r = max(d for d in range(1, math.isqrt(chips) + 1) if chips % d == 0)
    return r, chips // r


def _ring_steps(a: int, b: int, n: int) -> list[int]:
    """Positions visited going from a to b the shortest way round a ring of n (excluding a)."""
    fwd = (b - a) % n
    step = 1 if fwd <= n - fwd else -1
    out, p = [], a
    while p != b:
        p = (p + step) % n
        out.append(p)
    return out


@dataclass
class Interconnect:
    """Links, routes and the per-link byte counters of one system."""

    topology: str
    chips: int
    link_gbps: float
    link_latency_ns: float
    _routes: dict[tuple[int, int], Route] = field(default_factory=dict, repr=False)

    @classmethod
    def from_target(cls, target: Target) -> "Interconnect":
        return cls(target.topology, target.chips, float(target.link_gbps), float(target.link_latency_ns))

    @property
    def shape(self) -> tuple[int, int]:
        return torus_shape(self.chips)

    def route(self, src: int, dst: int) -> Route:
        key = (src, dst)
        r = self._routes.get(key)
        if r is None:
            r = self._routes[key] = self._compute_route(src, dst)
        return r

    def _compute_route(self, src: int, dst: int) -> Route:
        for c in (src, dst):
            if not 0 <= c < self.chips:
                raise ScalarFaultError(f"peer chip {c} is outside 0..{self.chips - 1}")
        lat = self.link_latency_ns
        if src == dst:
            return Route((), 0.0)
        if self.topology == "switch":
            return Route((f"c{src}->sw", f"sw->c{dst}"), lat)
        if self.topology == "pcie":
            return Route((f"c{src}->host", f"host->c{dst}"), 2 * lat)
        if self.topology == "ring":
            links, p = [], src
            for q in _ring_steps(src, dst, self.chips):
                links.append(f"c{p}->c{q}")
                p = q
            return Route(tuple(links), lat * len(links))
        # torus2d: along the row (column index) first, then along the column.
        rows, cols = self.shape
        (r0, c0), (r1, c1) = divmod(src, cols), divmod(dst, cols)
        links, p = [], src
        for cc in _ring_steps(c0, c1, cols):
            q = r0 * cols + cc
            links.append(f"c{p}->c{q}")
            p = q
        for rr in _ring_steps(r0, r1, rows):
            q = rr * cols + c1
            links.append(f"c{p}->c{q}")
            p = q
        return Route(tuple(links), lat * len(links))

    def ring_order(self, members: tuple[int, ...]) -> tuple[int, ...]:
        """An order of ``members`` in which neighbours are close on this topology."""
        if self.topology == "ring":
            return tuple(sorted(members))
        if self.topology == "torus2d":
            rows, cols = self.shape
            def snake(c: int) -> tuple[int, int]:
                r, k = divmod(c, cols)
                return (r, k if r % 2 == 0 else cols - 1 - k)
            return tuple(sorted(members, key=snake))
        return tuple(members)
