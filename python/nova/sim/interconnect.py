"""Chip-to-chip links and routes for the four topologies of a target.

* ``switch``  full crossbar; every chip has one port (``cI->sw`` out, ``sw->cI`` in).
* ``ring``    bidirectional ring, links ``cI->cJ`` between neighbours, shortest way round.
* ``torus2d`` r x c torus (r the largest divisor of ``chips`` <= sqrt(chips)),
              dimension-order routing (along the row first, then the column), shortest way.
* ``pcie``    tree through the host: every transfer goes up ``cI->host`` and down ``host->cJ``.

Every link carries ``link_gbps`` per direction and adds ``link_latency_ns`` per hop.

Several nodes (``chips_per_node``): the topology joins the chips of one node (chip ids
stay global in link names, so a one-node system's links are named as before), and the
nodes meet in one full-bisection network switch. Local chip ``l`` of a node uses NIC
``l // (node_chips // nics)`` (rail-style), attached to that NIC's first chip. A route
to another node goes chip -> (links inside the node to the NIC's chip) -> NIC out
``nN.nicK->net`` -> in ``net->nM.nicJ`` (``nic_gbps`` each, ``nic_latency_ns`` for
the pair) -> (links inside the node) -> chip, ``J`` the destination chip's own NIC.
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
    node_chips: int = 0  # chips per node (0: every chip, one node)
    nics: int = 1  # NICs per node
    nic_gbps: float = 0.0
    nic_latency_ns: float = 0.0
    _routes: dict[tuple[int, int], Route] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.node_chips <= 0:
            self.node_chips = self.chips

    @classmethod
    def from_target(cls, target: Target) -> "Interconnect":
        if target.nodes == 1:
            return cls(target.topology, target.chips, float(target.link_gbps), float(target.link_latency_ns))
        return cls(target.topology, target.chips, float(target.link_gbps), float(target.link_latency_ns),
                   target.node_chips, target.node_nics, float(target.nic_gbps), float(target.nic_latency_ns))

    @property
    def shape(self) -> tuple[int, int]:
        """The torus of one node."""
        return torus_shape(self.node_chips)

    @property
    def nodes(self) -> int:
        return self.chips // self.node_chips

    def node_of(self, chip: int) -> int:
        return chip // self.node_chips

    def link_bandwidth(self, link: str) -> float:
        """GB/s of one link: a NIC's ``nic_gbps``, any other ``link_gbps``."""
        return self.nic_gbps if link.endswith("->net") or link.startswith("net->") else self.link_gbps

    def nic(self, chip: int) -> tuple[int, int]:
        """(NIC index within its node, the chip it is attached to) of ``chip``'s NIC."""
        per = self.node_chips // self.nics
        k = chip % self.node_chips // per
        return k, chip - chip % self.node_chips + k * per

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
        if src == dst:
            return Route((), 0.0)
        a, b = self.node_of(src), self.node_of(dst)
        if a == b:
            return self._intra(src, dst)
        (ka, via_a), (kb, via_b) = self.nic(src), self.nic(dst)
        out, into = self.route(src, via_a), self.route(via_b, dst)
        return Route(out.links + (f"n{a}.nic{ka}->net", f"net->n{b}.nic{kb}") + into.links,
                     out.latency_ns + self.nic_latency_ns + into.latency_ns)

    def _intra(self, src: int, dst: int) -> Route:
        """A route between two chips of one node."""
        lat = self.link_latency_ns
        if self.topology == "switch":
            return Route((f"c{src}->sw", f"sw->c{dst}"), lat)
        if self.topology == "pcie":
            return Route((f"c{src}->host", f"host->c{dst}"), 2 * lat)
        base = src - src % self.node_chips
        if self.topology == "ring":
            links, p = [], src
            for q in _ring_steps(src - base, dst - base, self.node_chips):
                links.append(f"c{p}->c{base + q}")
                p = base + q
            return Route(tuple(links), lat * len(links))
        # torus2d: along the row (column index) first, then along the column.
        rows, cols = self.shape
        (r0, c0), (r1, c1) = divmod(src - base, cols), divmod(dst - base, cols)
        links, p = [], src
        for cc in _ring_steps(c0, c1, cols):
            q = base + r0 * cols + cc
            links.append(f"c{p}->c{q}")
            p = q
        for rr in _ring_steps(r0, r1, rows):
            q = base + rr * cols + c1
            links.append(f"c{p}->c{q}")
            p = q
        return Route(tuple(links), lat * len(links))

    def ring_order(self, members: tuple[int, ...]) -> tuple[int, ...]:
        """An order of ``members`` in which neighbours are close on this topology: the
        members of each node together (nodes in order), and inside a node in the order
        of its topology, so a ring crosses the network once per node."""
        n = self.node_chips
        if self.topology == "ring":
            return tuple(sorted(members))
        if self.topology == "torus2d":
            rows, cols = self.shape
            def snake(c: int) -> tuple[int, int, int]:
                r, k = divmod(c % n, cols)
                return (c // n, r, k if r % 2 == 0 else cols - 1 - k)
            return tuple(sorted(members, key=snake))
        if n == self.chips:
            return tuple(members)
        return tuple(sorted(members, key=self.node_of))  # stable: each node's members in their order

    def by_node(self, members: tuple[int, ...]) -> list[tuple[int, ...]]:
        """``members`` (in ring order) split by node, nodes in order."""
        out: dict[int, list[int]] = {}
        for c in self.ring_order(members):
            out.setdefault(self.node_of(c), []).append(c)
        return [tuple(v) for v in out.values()]
