"""Collective timing inside the shared-bandwidth model (docs/isa.md 2.5).

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

:class:`CollectiveUnit` is mixed into :class:`nova.sim.engines.Machine`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nova.binary import opcodes as oc
from .collectives import Plan, receivers

if TYPE_CHECKING:
    from .engines import Op, Queue

_PORT = {oc.HBM: "hbm", oc.SRAM: "sram"}


class _Run:
    """One collective in flight."""

    __slots__ = ("plan", "parts", "ports", "elt", "step", "pending", "start", "name")

    def __init__(self, plan: Plan, parts: list, ports: tuple[str, str], elt: int, name: str) -> None:
        self.plan, self.parts, self.ports, self.elt, self.name = plan, parts, ports, elt, name
        self.step = -1
        self.pending = 0
        self.start = 0.0


class CollectiveUnit:
    """Runs planned collectives as flows (a mixin of ``Machine``)."""

    def reduce_alone_ns(self, chunks: int, nbytes: float, elt: int, port: str) -> float:
        """A receiver's reduction of ``chunks`` arrived chunks of ``nbytes``, alone."""
        if not self.target.timing["collective_reduce_on_vector"]:
            return 0.0
        v = self.cost.reduce_elements(chunks * nbytes / elt)
        return max(v, (chunks + 2) * nbytes / self._bandwidth(port))

    def _collective_timing(self, members: tuple[int, ...], parts: list[tuple["Queue", "Op"]]) -> None:
        d0 = parts[0][1].d
        nbytes = d0.ta.nbytes if d0.ta is not None else 0
        ports = (_PORT[d0.ta.space], _PORT[d0.td.space]) if d0.ta is not None else ("hbm", "hbm")
        elt = d0.ta.desc.elt_bytes if d0.ta is not None else 4
        plan = self.planner.plan(d0.op, members, float(nbytes), ports, elt)
        run = _Run(plan, parts, ports, elt, d0.name)
        run.start = self.now
        if not plan.steps:  # one chip, or a barrier: latency only
            self.schedule(self.now + max(plan.duration_ns, self.cycle), self._collective_done, run)
            return
        self._collective_step(run)

    def _collective_step(self, run: _Run) -> None:
        run.step += 1
        if run.step == len(run.plan.steps):
            self._collective_done(run)
            return
        transfers = [t for t in run.plan.steps[run.step] if t[0] != t[1] and t[2] > 0]
        if not transfers:
            self._collective_step(run)
            return
        run.pending = len(transfers)
        src_port, dst_port = run.ports
        for s, d, b in transfers:
            route = self.net.route(s, d)
            res = (f"c{s}.{src_port}",) + route.links + (f"c{d}.{dst_port}",)
            self.schedule(self.now + route.latency_ns, self._collective_flow, (run, b, res))

    def _collective_flow(self, arg: tuple[_Run, float, tuple[str, ...]]) -> None:
        run, b, res = arg
        t0 = self.now

        def arrived() -> None:
            if self.trace is not None:
                for link in res[1:-1]:
                    self.trace.link(link, f"{run.name} ({run.plan.algorithm})", t0, self.now - t0, b)
            run.pending -= 1
            if run.pending == 0:
                self._collective_arrived(run)

        self.pool.start(self.now, b, res, arrived)

    def _collective_arrived(self, run: _Run) -> None:
        """Every transfer of the step is in: reduce at the receivers, then the next step."""
        if not run.plan.reduces[run.step] or not self.target.timing["collective_reduce_on_vector"]:
            self._collective_step(run)
            return
        recv = receivers(run.plan.steps[run.step])
        run.pending = 2 * len(recv)  # per receiver: its vector time and its memory traffic
        port = run.ports[1]

        def one(_: Any = None) -> None:
            run.pending -= 1
            if run.pending == 0:
                self._collective_step(run)

        for d, (j, b) in recv.items():
            self.schedule(self.now + self.cost.reduce_elements(j * b / run.elt), one, None)
            self.pool.start(self.now, (j + 2) * b, (f"c{d}.{port}",), one)

    def _collective_done(self, run: _Run) -> None:
        dur = max(self.now - run.start, self.cycle)
        self.collectives.append((run.name, run.plan.algorithm, dur))
        end = run.start + dur
        for q, _ in run.parts:
            self.schedule(end, self._complete, q)
