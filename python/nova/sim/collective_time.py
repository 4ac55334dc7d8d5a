"""Collective times without a program: the in-process machine's own model, priced alone
or several at once.

A caller that moves the bytes itself (the torch.distributed backend: one process per
chip) still wants the time the in-process simulator would give. These functions run
the collectives through the same planner (:class:`nova.sim.collectives.CollectivePlanner`,
the fastest candidate alone) and the same flows of the shared-bandwidth pool
(:class:`nova.sim.collective_flows.CollectiveFlows`: routes, latencies, memory ports,
the receivers' reductions) as :class:`nova.sim.engines.Machine`, on an event queue of
their own, so a collective's time equals the machine's for the same target, members,
bytes, memory and element size.

* ``collective_time_ns(target, kind, members, nbytes)``: one collective alone, from the
  moment its last member issues it to the moment every member's instruction completes
  (at least one sequencer cycle), as the machine's collective engine is busy. Cached by
  its arguments; deterministic.
* ``simulate_collectives(target, [(kind, members, nbytes, start_ns), ...])``: several,
  each starting at ``start_ns``, sharing links and memory ports where their flows meet;
  the end time of each.

``target`` is a :class:`nova.sim.Target`, a target name or ``.json`` path (found as
``nova-attach-target`` finds it) or a target object (dict). ``kind`` is one of
:data:`KINDS`; ``nbytes`` the input bytes per chip, as the ISA's collectives count them
(all_gather: one chip's piece; reduce_scatter and all_to_all: a chip's whole input).
``broadcast`` and ``reduce`` send from / reduce into ``members[0]``; ``send`` is the
point-to-point ``members = (src, dst)``: its time runs to the matching ``recv``'s
completion (route latency, the bytes over the route's links, ``timing.recv_cycles``),
as the machine's send/recv pair takes it. ``space`` ("hbm" or "sram") is the memory the
tiles live in and ``elt`` their element size (a reduction's element count).
"""

from __future__ import annotations

import functools
import heapq
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from nova.binary import opcodes as oc
from nova.binary.targets import target_file
from .collective_flows import CollectiveFlows, planner_for
from .collectives import BROADCAST, REDUCE, CollectivePlanner, Plan
from .errors import CollectiveRequestError, TargetError
from .interconnect import Interconnect
from .target import Target, load_target, target_from_dict
from .timing import BandwidthPool, CostModel, resource_bandwidth

__all__ = ["KINDS", "CollectiveSim", "collective_plan", "collective_time_ns", "resolve_target", "simulate_collectives"]

#: The kinds priced, and the planner's opcode of each (send has no plan: one transfer).
KINDS: dict[str, int] = {
    "all_reduce": oc.ALL_REDUCE, "all_gather": oc.ALL_GATHER, "reduce_scatter": oc.REDUCE_SCATTER,
    "all_to_all": oc.ALL_TO_ALL, "broadcast": BROADCAST, "reduce": REDUCE, "barrier": oc.BARRIER,
    "send": oc.SEND,
}
SPACES = ("hbm", "sram")

Request = tuple[str, Sequence[int], int, float]


@functools.lru_cache(maxsize=64)
def _named(name: str) -> Target:
    path = target_file(name)
    if path is None:
        raise TargetError(f"cannot find target '{name}'")
    return load_target(path)


def resolve_target(target: Target | str | Mapping[str, Any]) -> Target:
    """A :class:`Target` from a Target, a target name or path, or a target object."""
    if isinstance(target, Target):
        return target
    if isinstance(target, str):
        return _named(target)
    if isinstance(target, Mapping):
        return target_from_dict(target)
    raise TargetError(f"a target must be a Target, a target name or a target object, got {type(target).__name__}")


@dataclass(frozen=True)
class _Model:
    """What a target's collectives are priced with (shared by every call)."""

    target: Target
    net: Interconnect
    bandwidth: Callable[[str], float]
    cost: CostModel
    planner: CollectivePlanner
    cycle: float


@functools.lru_cache(maxsize=16)
def _model(tg: Target) -> _Model:
    net = Interconnect.from_target(tg)
    bandwidth = resource_bandwidth(tg, net.link_bandwidth)
    cost = CostModel(tg)
    return _Model(tg, net, bandwidth, cost, planner_for(tg, net, bandwidth, cost), cost.sequencer)


def _members(tg: Target, kind: str, members: Sequence[int]) -> tuple[int, ...]:
    if kind not in KINDS:
        raise CollectiveRequestError(f"unknown collective kind {kind!r} (one of {', '.join(KINDS)})")
    m = tuple(members)
    if not m or any(isinstance(c, bool) or not isinstance(c, int) for c in m):
        raise CollectiveRequestError(f"{kind} members must be a non-empty sequence of chip ids, got {members!r}")
    bad = [c for c in m if not 0 <= c < tg.chips]
    if bad:
        raise CollectiveRequestError(f"{kind} member chip {bad[0]} is outside 0..{tg.chips - 1} "
                                     f"(target '{tg.name}')")
    if len(set(m)) != len(m):
        raise CollectiveRequestError(f"{kind} members {list(m)} name a chip twice")
    if kind == "send" and len(m) != 2:
        raise CollectiveRequestError(f"send members must be (src, dst), two chips, got {list(m)}")
    return m


def _check(kind: str, nbytes: float, space: str, elt: int) -> None:
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or not nbytes >= 0:
        raise CollectiveRequestError(f"{kind} bytes must be a number >= 0, got {nbytes!r}")
    if space not in SPACES:
        raise CollectiveRequestError(f"memory space must be one of {', '.join(SPACES)}, got {space!r}")
    if isinstance(elt, bool) or not isinstance(elt, int) or elt < 1:
        raise CollectiveRequestError(f"element size must be a positive integer, got {elt!r}")


def collective_plan(target: Target | str | Mapping[str, Any], kind: str, members: Sequence[int], nbytes: int,
                    *, space: str = "hbm", elt: int = 4) -> Plan:
    """The plan the machine would run (its algorithm, steps and price alone); not for ``send``."""
    m = _model(resolve_target(target))
    mem = _members(m.target, kind, members)
    _check(kind, nbytes, space, elt)
    if kind == "send":
        raise CollectiveRequestError("send has no plan: it is one transfer")
    return m.planner.plan(KINDS[kind], mem, float(nbytes), (space, space), elt)


def simulate_collectives(target: Target | str | Mapping[str, Any], collectives: Sequence[Request],
                         *, space: str = "hbm", elt: int = 4) -> list[float]:
    """End times (ns) of ``collectives``, each ``(kind, members, nbytes, start_ns)``, run
    together through the machine's flow model: groups whose flows meet on a link or a
    memory port share its bandwidth. Equal start times start in list order."""
    m = _model(resolve_target(target))
    tg = m.target
    reqs = []
    for i, c in enumerate(collectives):
        if len(c) != 4:
            raise CollectiveRequestError(f"collective {i} must be (kind, members, nbytes, start_ns), got {c!r}")
        kind, members, nbytes, start = c
        mem = _members(tg, kind, members)
        _check(kind, nbytes, space, elt)
        if isinstance(start, bool) or not isinstance(start, (int, float)) or not start >= 0:
            raise CollectiveRequestError(f"collective {i} start must be a time >= 0 ns, got {start!r}")
        reqs.append((kind, mem, float(nbytes), float(start)))

    sim = CollectiveSim(target, space=space)
    ends: list[float] = [0.0] * len(reqs)
    for i, (kind, mem, nbytes, start) in enumerate(reqs):
        sim.begin(start, kind, mem, nbytes, elt, (i,), lambda end, i=i: ends.__setitem__(i, end))
    sim.run()
    return ends


class CollectiveSim:
    """The machine's collectives on an event queue of their own, fed as they become
    known: :func:`simulate_collectives` all at once, a caller that learns of them one
    by one (nova.distributed's coordinator) through :meth:`begin` and :meth:`step`.

    Begins that fall at one time run in the order of their ``key``s, before any flow
    event of that time, so the order does not depend on when a begin was added."""

    def __init__(self, target: Target | str | Mapping[str, Any], *, space: str = "hbm") -> None:
        if space not in SPACES:
            raise CollectiveRequestError(f"memory space must be one of {', '.join(SPACES)}, got {space!r}")
        self.model = m = _model(resolve_target(target))
        self._heap: list[tuple[float, int, tuple, Callable[[Any], None], Any]] = []
        self._seq = itertools.count()
        self.pool = BandwidthPool(m.bandwidth, self._flow_event)
        self.flows = CollectiveFlows(m.target, m.net, self.pool, self._flow_event, m.cost, m.cycle)
        self.ports = (space, space)

    def _flow_event(self, t: float, fn: Callable[[Any], None], arg: Any) -> None:
        heapq.heappush(self._heap, (t, 1, (next(self._seq),), fn, arg))

    def begin(self, at_ns: float, kind: str, members: Sequence[int], nbytes: float, elt: int, key: tuple,
              done: Callable[[float], None], began: Callable[[], None] | None = None) -> None:
        """Starts a collective at ``at_ns`` (``began()`` then); ``done(end_ns)`` when every
        member's part has completed (at least one sequencer cycle after the start)."""
        m = self.model
        mem = _members(m.target, kind, members)
        heapq.heappush(self._heap, (max(float(at_ns), self.pool.now), 0, key, self._begin,
                                    (kind, mem, float(nbytes), elt, done, began)))

    def _begin(self, arg: tuple) -> None:
        kind, mem, nbytes, elt, done, began = arg
        if began is not None:
            began()
        m, pool, start = self.model, self.pool, self.pool.now
        if kind == "send":  # as the machine's _x_send / _recv_now
            route = m.net.route(mem[0], mem[1])
            self._flow_event(start + route.latency_ns, lambda _: pool.start(
                pool.now, nbytes, route.links, lambda: done(pool.now + m.cost.recv)), None)
            return
        plan = m.planner.plan(KINDS[kind], mem, nbytes, self.ports, elt)
        # as the machine's _collective_done
        self.flows.start(plan, self.ports, elt, kind,
                         lambda run: done(run.start + max(pool.now - run.start, m.cycle)), None)

    def next_ns(self) -> float | None:
        """The time of the next event, None when nothing is left to run."""
        return self._heap[0][0] if self._heap else None

    def step(self) -> None:
        t, _, _, fn, arg = heapq.heappop(self._heap)
        self.pool.now = t
        fn(arg)

    def run(self) -> None:
        while self._heap:
            self.step()


@functools.lru_cache(maxsize=4096)
def _alone(tg: Target, kind: str, members: tuple[int, ...], nbytes: float, space: str, elt: int) -> float:
    return simulate_collectives(tg, [(kind, members, nbytes, 0.0)], space=space, elt=elt)[0]


def collective_time_ns(target: Target | str | Mapping[str, Any], kind: str, members: Sequence[int],
                       nbytes: int, *, space: str = "hbm", elt: int = 4) -> float:
    """ns the machine takes for one collective alone on ``members`` (cached by arguments)."""
    tg = resolve_target(target)
    mem = _members(tg, kind, members)
    _check(kind, nbytes, space, elt)
    return _alone(tg, kind, mem, float(nbytes), space, elt)
