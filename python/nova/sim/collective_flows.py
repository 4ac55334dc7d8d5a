"""Planned collectives run as flows of the shared-bandwidth pool (docs/isa.md 2.5).

The planner (:class:`nova.sim.collectives.CollectivePlanner`) picks the algorithm; here
its steps run one after the other. In a step every transfer ``s -> d`` of ``b`` bytes
waits its route's latency and then moves as one flow of the bandwidth pool over
``s``'s memory port (the read), the route's links and ``d``'s memory port (the write)
-- the resources DMAs use, so a collective and a peer DMA, or two groups, crossing one
link share it. When every transfer of a reducing step has arrived, every receiver
reduces the ``j`` chunks it got into its own: ``j * b / elt`` element operations at
the vector rate (``timing.vector_overhead_cycles + ceil(E / vector_lanes) *
timing.vector_elementwise_factor`` cycles) while ``(j + 2) * b`` bytes cross its
memory port (read the arrived chunks and its operand, write the result); the step
ends when the slowest receiver is done. ``timing.collective_reduce_on_vector = false``
drops that charge.

One implementation serves two callers: the machine (:mod:`nova.sim.engines_collective`,
which adds the instructions' rendezvous and completion) and
:mod:`nova.sim.collective_time` (collectives priced without a program, on an event
queue of their own), so both give the same times for the same collectives.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from .collectives import CollectivePlanner, Plan, receivers
from .interconnect import Interconnect
from .target import Target
from .timing import BandwidthPool, CostModel
from .trace import TraceRecorder

Schedule = Callable[[float, Callable[[Any], None], Any], None]


class CollectiveRun:
    """One collective in flight; ``done(run)`` is called when its last step ends."""

    __slots__ = ("plan", "ports", "elt", "step", "pending", "start", "name", "done", "tag")

    def __init__(self, plan: Plan, ports: tuple[str, str], elt: int, name: str,
                 done: Callable[["CollectiveRun"], None], tag: Any = None) -> None:
        self.plan, self.ports, self.elt, self.name, self.done, self.tag = plan, ports, elt, name, done, tag
        self.step = -1
        self.pending = 0
        self.start = 0.0


def reduce_alone_ns(target: Target, cost: CostModel, bandwidth: Callable[[str], float],
                    chunks: int, nbytes: float, elt: int, port: str) -> float:
    """A receiver's reduction of ``chunks`` arrived chunks of ``nbytes``, alone (the
    planner's price of it): the vector time or the bytes through the port, the longer."""
    if not target.timing["collective_reduce_on_vector"]:
        return 0.0
    v = cost.reduce_elements(chunks * nbytes / elt)
    return max(v, (chunks + 2) * nbytes / bandwidth(port))


def planner_for(target: Target, net: Interconnect, bandwidth: Callable[[str], float],
                cost: CostModel) -> CollectivePlanner:
    """The planner of ``target``: candidates priced with ``bandwidth`` and the
    receivers' reductions, ``timing.collective_algorithm`` forcing one."""
    return CollectivePlanner(net, bandwidth, functools.partial(reduce_alone_ns, target, cost, bandwidth),
                             target.timing["collective_algorithm"])


class CollectiveFlows:
    """Runs planned collectives' steps as flows of ``pool`` on the event queue behind
    ``schedule``; the current time is ``pool.now`` (the event loop sets it)."""

    def __init__(self, target: Target, net: Interconnect, pool: BandwidthPool, schedule: Schedule,
                 cost: CostModel, cycle: float, trace: TraceRecorder | None = None) -> None:
        self.target, self.net, self.pool, self.schedule = target, net, pool, schedule
        self.cost, self.cycle, self.trace = cost, cycle, trace
        self._reduce = target.timing["collective_reduce_on_vector"]

    def start(self, plan: Plan, ports: tuple[str, str], elt: int, name: str,
              done: Callable[[CollectiveRun], None], tag: Any = None) -> CollectiveRun:
        """Starts ``plan`` now; a plan without steps (one chip, a barrier) lasts its
        priced duration, at least one cycle."""
        run = CollectiveRun(plan, ports, elt, name, done, tag)
        run.start = self.pool.now
        if not plan.steps:
            self.schedule(run.start + max(plan.duration_ns, self.cycle), self._finish, run)
        else:
            self._step(run)
        return run

    @staticmethod
    def _finish(run: CollectiveRun) -> None:
        run.done(run)

    def _step(self, run: CollectiveRun) -> None:
        run.step += 1
        if run.step == len(run.plan.steps):
            run.done(run)
            return
        transfers = [t for t in run.plan.steps[run.step] if t[0] != t[1] and t[2] > 0]
        if not transfers:
            self._step(run)
            return
        run.pending = len(transfers)
        src_port, dst_port = run.ports
        now = self.pool.now
        for s, d, b in transfers:
            route = self.net.route(s, d)
            res = (f"c{s}.{src_port}",) + route.links + (f"c{d}.{dst_port}",)
            self.schedule(now + route.latency_ns, self._flow, (run, b, res))

    def _flow(self, arg: tuple[CollectiveRun, float, tuple[str, ...]]) -> None:
        run, b, res = arg
        t0 = self.pool.now

        def arrived() -> None:
            if self.trace is not None:
                for link in res[1:-1]:
                    self.trace.link(link, f"{run.name} ({run.plan.algorithm})", t0, self.pool.now - t0, b)
            run.pending -= 1
            if run.pending == 0:
                self._arrived(run)

        self.pool.start(t0, b, res, arrived)

    def _arrived(self, run: CollectiveRun) -> None:
        """Every transfer of the step is in: reduce at the receivers, then the next step."""
        if not run.plan.reduces[run.step] or not self._reduce:
            self._step(run)
            return
        recv = receivers(run.plan.steps[run.step])
        run.pending = 2 * len(recv)  # per receiver: its vector time and its memory traffic
        port = run.ports[1]
        now = self.pool.now

        def one(_: Any = None) -> None:
            run.pending -= 1
            if run.pending == 0:
                self._step(run)

        for d, (j, b) in recv.items():
            self.schedule(now + self.cost.reduce_elements(j * b / run.elt), one, None)
            self.pool.start(now, (j + 2) * b, (f"c{d}.{port}",), one)
