"""Collective semantics (real data movement between chips) and their timing.

Functional results follow docs/isa.md 2.5. Timing: every algorithm is a list of
synchronous *steps*, each a set of point-to-point transfers ``(src, dst, bytes)``
routed over the interconnect; a step lasts ``max route latency + max over links of
(bytes on that link / link bandwidth)``, so transfers that share a link split its
bandwidth. For every collective the candidate algorithms for its group are priced on
the topology and the fastest is used (NCCL-style selection):

* ``ring``        reduce-scatter + all-gather around a topology-ordered ring, the
                  message cut in ``p`` chunks that pipeline round it (2(p-1) steps);
* ``biring``      two counter-rotating rings, half the message each (uses both
                  directions of a bidirectional ring or torus);
* ``rhd``         recursive halving (reduce-scatter) and doubling (all-gather), p a power of 2;
* ``direct``      every chip sends its chunk straight to every other (one step per phase;
                  wins on a switch, where each port carries the same bytes as in a ring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import opcodes as oc
from .interconnect import Interconnect
from .numerics import reduce_stack

Transfer = tuple[int, int, float]


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
class Step:
    duration_ns: float
    link_bytes: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Plan:
    """How one collective runs: chosen algorithm, its steps and total time."""

    algorithm: str
    duration_ns: float
    steps: tuple[Step, ...]

    @property
    def link_bytes(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self.steps:
            for l, b in s.link_bytes:
                out[l] = out.get(l, 0.0) + b
        return out


def _step(net: Interconnect, transfers: list[Transfer]) -> Step:
    loads: dict[str, float] = {}
    lat = 0.0
    for s, d, b in transfers:
        if s == d or b <= 0:
            continue
        r = net.route(s, d)
        lat = max(lat, r.latency_ns)
        for l in r.links:
            loads[l] = loads.get(l, 0.0) + b
    bw = max(loads.values()) / net.link_gbps if loads else 0.0
    return Step(lat + bw, tuple(sorted(loads.items())))


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


def candidates(op: int, members: tuple[int, ...], nbytes: float,
               net: Interconnect) -> dict[str, list[list[Transfer]]]:
    """Algorithms (as lists of steps) for ``op`` on ``members``; ``nbytes`` = input bytes per chip."""
    p = len(members)
    o = net.ring_order(members)
    algos: dict[str, list[list[Transfer]]] = {}
    if op == oc.ALL_REDUCE:
        algos["ring"] = _ring_steps(o, nbytes / p, 2 * (p - 1), False)
        algos["biring"] = _ring_steps(o, nbytes / p, 2 * (p - 1), True)
        algos["direct"] = [_direct(members, nbytes / p)] * 2
        if _pow2(p):
            algos["rhd"] = _halving(members, nbytes) + _doubling(members, nbytes / p)
    elif op == oc.ALL_GATHER:
        algos["ring"] = _ring_steps(o, nbytes, p - 1, False)
        algos["biring"] = _ring_steps(o, nbytes, p - 1, True)
        algos["direct"] = [_direct(members, nbytes)]
        if _pow2(p):
            algos["rhd"] = _doubling(members, nbytes)
    elif op == oc.REDUCE_SCATTER:
        algos["ring"] = _ring_steps(o, nbytes / p, p - 1, False)
        algos["biring"] = _ring_steps(o, nbytes / p, p - 1, True)
        algos["direct"] = [_direct(members, nbytes / p)]
        if _pow2(p):
            algos["rhd"] = _halving(members, nbytes)
    elif op == oc.ALL_TO_ALL:
        algos["direct"] = [_direct(members, nbytes / p)]
        algos["pairwise"] = [[(members[i], members[(i + k) % p], nbytes / p) for i in range(p)]
                             for k in range(1, p)]
    else:
        raise ValueError(f"no algorithms for opcode 0x{op:02x}")
    return algos


class CollectivePlanner:
    """Prices and caches the collective algorithms of one interconnect."""

    def __init__(self, net: Interconnect) -> None:
        self.net = net
        self._cache: dict[tuple[int, tuple[int, ...], float], Plan] = {}

    def plan(self, op: int, members: tuple[int, ...], nbytes: float) -> Plan:
        key = (op, members, nbytes)
        plan = self._cache.get(key)
        if plan is None:
            plan = self._cache[key] = self._plan(op, members, nbytes)
        return plan

    def _plan(self, op: int, members: tuple[int, ...], nbytes: float) -> Plan:
        p = len(members)
        if p == 1:
            return Plan("local", 0.0, ())
        if op == oc.BARRIER:
            return Plan("dissemination", 2 * math.ceil(math.log2(p)) * self.net.link_latency_ns, ())
        best: Plan | None = None
        for name, steps in candidates(op, members, nbytes, self.net).items():
            st = tuple(_step(self.net, s) for s in steps)
            t = sum(s.duration_ns for s in st)
            if best is None or t < best.duration_ns:
                best = Plan(name, t, st)
        assert best is not None
        return best
