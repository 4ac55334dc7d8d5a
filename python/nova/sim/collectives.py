"""Collective semantics (real data movement between chips) and their timing.

Functional results follow docs/isa.md 2.5. Timing: every algorithm is a list of
synchronous *steps*, each a set of point-to-point transfers ``(src, dst, bytes)``;
the machine (:mod:`nova.sim.engines_collective`) runs each transfer as a flow of the
shared-bandwidth pool over the sender's memory port, the route's links and the
receiver's memory port, so collectives contend with DMAs and with each other, and
charges each reducing step's arithmetic and operand traffic at the receivers. The
algorithm is chosen by pricing every candidate alone (``CollectivePlanner``) and taking
the fastest (NCCL-style selection), unless ``timing.collective_algorithm`` forces one:

* ``ring``        reduce-scatter + all-gather around a topology-ordered ring, the
                  message cut in ``p`` chunks that pipeline round it (2(p-1) steps);
* ``biring``      two counter-rotating rings, half the message each (uses both
                  directions of a bidirectional ring or torus);
* ``rhd``         recursive halving (reduce-scatter) and doubling (all-gather), p a power of 2;
* ``direct``      every chip sends its chunk straight to every other (one step per phase;
                  wins on a switch, where each port carries the same bytes as in a ring);
* ``hierarchical`` (all-reduce on members spread evenly over several nodes, NCCL's way)
                  a ring reduce-scatter inside every node, a ring all-reduce of each
                  chip's piece among the chips of the same place in every node (one
                  ring per NIC rail, concurrently), a ring all-gather inside every node.

Rings keep each node's members together (:meth:`Interconnect.ring_order`), so a ring
over several nodes crosses the network once per node. Broadcast and reduce (root
``members[0]``) are not ISA instructions; :mod:`nova.sim.collective_time` prices them
with the candidates here (``direct``, a binomial ``tree``, and ``ring``: scatter +
all-gather, reduce-scatter + gather).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from nova.binary import opcodes as oc
from .interconnect import Interconnect
from .numerics import reduce_stack

Transfer = tuple[int, int, float]

#: Collectives that are not ISA instructions, priced by nova.sim.collective_time
#: (root: the group's first member). Outside the 8-bit opcode space.
BROADCAST, REDUCE = 0x100, 0x101


# ---------------------------------------------------------------------------------
# Functional semantics on whole arrays (float32 in, float32 out).

def all_reduce(xs: list[np.ndarray], kind: int) -> list[np.ndarray]:
    r = reduce_stack(xs, kind)
    return [r] * len(xs)


def all_gather(xs: list[np.ndarray], dim: int) -> list[np.ndarray]:
    r = np.concatenate(xs, axis=dim)
    return [r] * len(xs)


def reduce_scatter(xs: list[np.ndarray], kind: int, dim: int) -> list[np.ndarray]:
    return np.split(reduce_stack(xs, kind), len(xs), axis=dim)


def all_to_all(xs: list[np.ndarray], split_dim: int, concat_dim: int) -> list[np.ndarray]:
    p = len(xs)
    parts = [np.split(x, p, axis=split_dim) for x in xs]
    return [np.concatenate([parts[j][rank] for j in range(p)], axis=concat_dim) for rank in range(p)]


# ---------------------------------------------------------------------------------
# Timing.

@dataclass(frozen=True)
class Plan:
    """How one collective runs: the chosen algorithm, its synchronous steps (each a set
    of point-to-point transfers), which steps reduce at the receivers, and the time it
    takes alone (the price it was chosen by)."""

    algorithm: str
    duration_ns: float
    steps: tuple[tuple[Transfer, ...], ...]
    reduces: tuple[bool, ...]
    net: Interconnect | None = None

    @property
    def link_bytes(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for st in self.steps:
            for s, d, b in st:
                if s == d or b <= 0:
                    continue
                for l in self.net.route(s, d).links:
                    out[l] = out.get(l, 0.0) + b
        return out


def receivers(transfers: tuple[Transfer, ...]) -> dict[int, tuple[int, float]]:
    """Per receiving chip: (chunks arrived, bytes per chunk) of one step."""
    out: dict[int, tuple[int, float]] = {}
    for s, d, b in transfers:
        if s != d and b > 0:
            j, _ = out.get(d, (0, b))
            out[d] = (j + 1, b)
    return out


def _ring_steps(o: tuple[int, ...], nbytes: float, nsteps: int, both: bool) -> list[list[Transfer]]:
    p = len(o)
    if both:
        h = nbytes / 2
        one = [(o[i], o[(i + 1) % p], h) for i in range(p)] + [(o[i], o[(i - 1) % p], h) for i in range(p)]
    else:
        one = [(o[i], o[(i + 1) % p], nbytes) for i in range(p)]
    return [one] * nsteps


def _direct(m: tuple[int, ...], nbytes: float) -> list[Transfer]:
    return [(s, d, nbytes) for s in m for d in m if s != d]


def _pow2(p: int) -> bool:
    return p & (p - 1) == 0


def _halving(m: tuple[int, ...], total: float) -> list[list[Transfer]]:
    """Recursive halving: log2 p steps sending total/2, total/4, ... to the partner."""
    p, steps, d, b = len(m), [], len(m) // 2, total / 2
    while d >= 1:
        steps.append([(m[i], m[i ^ d], b) for i in range(p)])
        d, b = d // 2, b / 2
    return steps


def _doubling(m: tuple[int, ...], piece: float) -> list[list[Transfer]]:
    """Recursive doubling: log2 p steps sending piece, 2 piece, ... to the partner."""
    p, steps, d, b = len(m), [], 1, piece
    while d < p:
        steps.append([(m[i], m[i ^ d], b) for i in range(p)])
        d, b = d * 2, b * 2
    return steps


def _ring_of(o: tuple[int, ...], nbytes: float, nsteps: int) -> list[list[Transfer]]:
    """``nsteps`` steps of one ring round ``o`` (each member to the next)."""
    return _ring_steps(o, nbytes, nsteps, False) if len(o) > 1 else []


def _merge(groups: list[list[list[Transfer]]]) -> list[list[Transfer]]:
    """Steps of several groups run side by side: step i holds every group's step i."""
    n = max((len(g) for g in groups), default=0)
    return [[t for g in groups if i < len(g) for t in g[i]] for i in range(n)]


def _hierarchical(members: tuple[int, ...], nbytes: float,
                  net: Interconnect) -> tuple[list[list[Transfer]], list[bool]] | None:
    """NCCL's hierarchical all-reduce, or None when ``members`` are not spread evenly
    over several nodes (with more than one on each)."""
    nodes = net.by_node(members)
    k, n = len(nodes[0]), len(nodes)
    if n < 2 or k < 2 or any(len(g) != k for g in nodes):
        return None
    piece = nbytes / k
    rs = _merge([_ring_of(g, piece, k - 1) for g in nodes])  # every chip ends with one reduced piece
    cols = [tuple(g[i] for g in nodes) for i in range(k)]
    ar = _merge([_ring_of(c, piece / n, 2 * (n - 1)) for c in cols])
    ag = _merge([_ring_of(g, piece, k - 1) for g in nodes])
    return rs + ar + ag, [True] * len(rs) + [True] * (n - 1) + [False] * (n - 1) + [False] * len(ag)


def _binomial(m: tuple[int, ...], nbytes: float) -> list[list[Transfer]]:
    """Binomial-tree broadcast from ``m[0]``: in step i every holder j < 2^i sends to j + 2^i."""
    p, steps, d = len(m), [], 1
    while d < p:
        steps.append([(m[j], m[j + d], nbytes) for j in range(d) if j + d < p])
        d *= 2
    return steps


def candidates(op: int, members: tuple[int, ...], nbytes: float,
               net: Interconnect) -> dict[str, tuple[list[list[Transfer]], list[bool]]]:
    """Algorithms for ``op`` on ``members`` (``nbytes`` = input bytes per chip): each a
    list of steps and, per step, whether the receivers reduce what arrived."""
    p = len(members)
    o = net.ring_order(members)
    algos: dict[str, tuple[list[list[Transfer]], list[bool]]] = {}
    if op == oc.ALL_REDUCE:
        rs, ag = [True] * (p - 1), [False] * (p - 1)
        algos["ring"] = (_ring_steps(o, nbytes / p, 2 * (p - 1), False), rs + ag)
        algos["biring"] = (_ring_steps(o, nbytes / p, 2 * (p - 1), True), rs + ag)
        algos["direct"] = ([_direct(members, nbytes / p)] * 2, [True, False])
        if _pow2(p):
            h = _halving(members, nbytes)
            algos["rhd"] = (h + _doubling(members, nbytes / p), [True] * len(h) + [False] * len(h))
        if net.nodes > 1:
            hier = _hierarchical(members, nbytes, net)
            if hier is not None:
                algos["hierarchical"] = hier
    elif op == BROADCAST:
        root, rest = members[0], members[1:]
        algos["direct"] = ([[(root, d, nbytes) for d in rest]], [False])
        t = _binomial(members, nbytes)
        algos["tree"] = (t, [False] * len(t))
        algos["ring"] = ([[(root, d, nbytes / p) for d in rest]] + _ring_steps(o, nbytes / p, p - 1, False),
                         [False] * p)
    elif op == REDUCE:
        root, rest = members[0], members[1:]
        algos["direct"] = ([[(s, root, nbytes) for s in rest]], [True])
        t = [[(d, s, b) for s, d, b in st] for st in reversed(_binomial(members, nbytes))]
        algos["tree"] = (t, [True] * len(t))
        algos["ring"] = (_ring_steps(o, nbytes / p, p - 1, False) + [[(s, root, nbytes / p) for s in rest]],
                         [True] * (p - 1) + [False])
    elif op == oc.ALL_GATHER:
        algos["ring"] = (_ring_steps(o, nbytes, p - 1, False), [False] * (p - 1))
        algos["biring"] = (_ring_steps(o, nbytes, p - 1, True), [False] * (p - 1))
        algos["direct"] = ([_direct(members, nbytes)], [False])
        if _pow2(p):
            d = _doubling(members, nbytes)
            algos["rhd"] = (d, [False] * len(d))
    elif op == oc.REDUCE_SCATTER:
        algos["ring"] = (_ring_steps(o, nbytes / p, p - 1, False), [True] * (p - 1))
        algos["biring"] = (_ring_steps(o, nbytes / p, p - 1, True), [True] * (p - 1))
        algos["direct"] = ([_direct(members, nbytes / p)], [True])
        if _pow2(p):
            h = _halving(members, nbytes)
            algos["rhd"] = (h, [True] * len(h))
    elif op == oc.ALL_TO_ALL:
        algos["direct"] = ([_direct(members, nbytes / p)], [False])
        algos["pairwise"] = ([[(members[i], members[(i + k) % p], nbytes / p) for i in range(p)]
                              for k in range(1, p)], [False] * (p - 1))
    else:
        raise ValueError(f"no algorithms for opcode 0x{op:02x}")
    return algos


class CollectivePlanner:
    """Chooses and caches the algorithm of each collective on one interconnect.

    Every candidate is priced alone, as the bandwidth pool would run it on an idle
    system: a step lasts its longest route latency plus, over every resource it uses
    (links, and with ``ports`` the memory ports read at the senders and written at the
    receivers), the bytes through it over its bandwidth; a reducing step adds, with
    ``reduce`` pricing, the slowest receiver's reduction. ``algorithm`` other than
    ``auto`` forces that one where it applies to the collective.
    """

    def __init__(self, net: Interconnect, bandwidth: Callable[[str], float] | None = None,
                 reduce: Callable[[int, float, int, str], float] | None = None,
                 algorithm: str = "auto") -> None:
        self.net = net
        self._bw = bandwidth or net.link_bandwidth
        self._reduce = reduce
        self.algorithm = algorithm
        self._cache: dict[tuple, Plan] = {}

    def plan(self, op: int, members: tuple[int, ...], nbytes: float, ports: tuple[str, str] | None = None,
             elt: int = 4) -> Plan:
        """``ports``: memory kinds ("hbm"/"sram") of the input and output tiles."""
        key = (op, members, nbytes, ports, elt)
        plan = self._cache.get(key)
        if plan is None:
            plan = self._cache[key] = self._plan(op, members, nbytes, ports, elt)
        return plan

    def step_ns(self, transfers: list[Transfer], reduces: bool, ports: tuple[str, str] | None, elt: int) -> float:
        loads: dict[str, float] = {}
        lat = 0.0
        for s, d, b in transfers:
            if s == d or b <= 0:
                continue
            r = self.net.route(s, d)
            lat = max(lat, r.latency_ns)
            res = r.links if ports is None else (f"c{s}.{ports[0]}",) + r.links + (f"c{d}.{ports[1]}",)
            for l in res:
                loads[l] = loads.get(l, 0.0) + b
        t = lat + max((v / self._bw(l) for l, v in loads.items()), default=0.0)
        if reduces and self._reduce is not None and ports is not None:
            t += max((self._reduce(j, b, elt, f"c{d}.{ports[1]}")
                      for d, (j, b) in receivers(tuple(transfers)).items()), default=0.0)
        return t

    def _barrier_hop_ns(self, members: tuple[int, ...]) -> float:
        """One round of a barrier: a link's latency inside one node, else the
        slowest route between the members' nodes."""
        first = self.net.node_of(members[0])
        if all(self.net.node_of(c) == first for c in members):
            return self.net.link_latency_ns
        return max(self.net.route(members[0], c).latency_ns for c in members[1:])

    def _plan(self, op: int, members: tuple[int, ...], nbytes: float, ports: tuple[str, str] | None,
              elt: int) -> Plan:
        p = len(members)
        if p == 1:
            return Plan("local", 0.0, (), (), self.net)
        if op == oc.BARRIER:
            return Plan("dissemination", 2 * math.ceil(math.log2(p)) * self._barrier_hop_ns(members), (), (),
                        self.net)
        algos = candidates(op, members, nbytes, self.net)
        if self.algorithm in algos:
            algos = {self.algorithm: algos[self.algorithm]}
        best: Plan | None = None
        for name, (steps, reduces) in algos.items():
            t = sum(self.step_ns(st, r, ports, elt) for st, r in zip(steps, reduces))
            if best is None or t < best.duration_ns:
                best = Plan(name, t, tuple(tuple(st) for st in steps), tuple(reduces), self.net)
        assert best is not None
        return best
