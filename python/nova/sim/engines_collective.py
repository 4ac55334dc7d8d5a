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

:class:`CollectiveUnit` is mixed into :class:`nova.sim.engines.Machine`; it also runs the
instructions (send, recv, the collectives' rendezvous and data movement).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from collections import deque

from nova.binary import opcodes as oc
from . import collectives as coll
from .collectives import Plan, receivers
from .errors import CollectiveMismatchError, ProgramError, ScalarFaultError
from .machine import _RW

if TYPE_CHECKING:
    from .machine import Chip, Dec, Op, Queue

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

    def _peer(self, ch: Chip, d: Dec, peer: int) -> int:
        if not 0 <= peer < len(self.chips):
            raise ScalarFaultError(self._where(ch, d, f"peer chip {peer} is outside 0..{len(self.chips) - 1}"))
        return peer

    # Point-to-point ---------------------------------------------------------------------------
    def _x_send(self, q: Queue, o: Op) -> None:
        d, ch = o.d, q.chip
        peer = self._peer(ch, d, o.rc)
        data = None
        if self.functional:
            ch.mem_bytes[_RW[d.ta.space][0]] += d.ta.nbytes
            data = ch.mem.read_raw(d.ta, o.ra, f"instruction {d.pc} (send)")
        else:
            self._check(ch, d.ta, o.ra, d, False)
        key = (ch.id, peer, d.ins.imm1)
        route = self.net.route(ch.id, peer)

        def delivered() -> None:
            self.mailbox.setdefault(key, deque()).append((self.now, data, o))
            self._complete(q)
            w = self.recv_wait.pop(key, None)
            if w is not None:
                self._recv_now(*w, key)

        self.schedule(self.now + route.latency_ns, lambda _: self.pool.start(self.now, d.ta.nbytes, route.links, delivered), None)
        return None

    def _x_recv(self, q: Queue, o: Op) -> None:
        d, ch = o.d, q.chip
        peer = self._peer(ch, d, o.rc)
        key = (peer, ch.id, d.ins.imm1)
        if self.mailbox.get(key):
            self._recv_now(q, o, key)
        else:
            self.recv_wait[key] = (q, o)
        return None

    def _recv_now(self, q: Queue, o: Op, key: tuple[int, int, int]) -> None:
        _, data, so = self.mailbox[key].popleft()
        d, ch = o.d, q.chip
        sd = so.d
        if sd.ta.shape != d.td.shape or sd.ta.dtype != d.td.dtype:
            raise CollectiveMismatchError(
                f"recv on chip {ch.id} instruction {d.pc} expects {oc.DTYPE_NAMES[d.td.dtype]}{list(d.td.shape)} "
                f"from chip {key[0]} channel {key[2]}, but the matching send (instruction {sd.pc}) sends "
                f"{oc.DTYPE_NAMES[sd.ta.dtype]}{list(sd.ta.shape)}")
        if self.functional:
            ch.mem_bytes[_RW[d.td.space][1]] += d.td.nbytes
            ch.mem.write_raw(d.td, o.rdst, data, f"instruction {d.pc} (recv)")
        else:
            self._check(ch, d.td, o.rdst, d, True)
        self.schedule(self.now + self.cost.recv, self._complete, q)

    # Collectives ------------------------------------------------------------------------------
    def _members(self, ch: Chip, d: Dec) -> tuple[int, ...]:
        for g in ch.groups[d.ins.group]:
            if ch.id in g:
                return g
        raise ProgramError(self._where(ch, d, f"chip {ch.id} is in no group of replica-group entry "
                                              f"{d.ins.group} {[list(g) for g in ch.groups[d.ins.group]]}"))

    @staticmethod
    def _signature(d: Dec) -> tuple[Any, ...]:
        ins = d.ins
        ta, td = d.ta, d.td
        return (ins.opcode, ins.kind if ins.opcode in (oc.ALL_REDUCE, oc.REDUCE_SCATTER) else 0,
                None if ta is None else (ta.dtype, ta.shape), None if td is None else (td.dtype, td.shape),
                ins.imm0 if ins.opcode != oc.ALL_REDUCE else 0, ins.imm1 if ins.opcode == oc.ALL_TO_ALL else 0)

    @staticmethod
    def describe(d: Dec) -> str:
        ins = d.ins
        s = f"instruction {d.pc} ({d.name}"
        if ins.opcode in (oc.ALL_REDUCE, oc.REDUCE_SCATTER):
            s += " " + oc.REDUCE_NAMES[ins.kind] if ins.kind < 4 else f" kind {ins.kind}"
        if d.ta is not None:
            s += f" {oc.DTYPE_NAMES[d.ta.dtype]}{list(d.ta.shape)}"
        if d.td is not None and ins.opcode != oc.ALL_REDUCE:
            s += f" -> {oc.DTYPE_NAMES[d.td.dtype]}{list(d.td.shape)}"
        if ins.opcode in (oc.ALL_GATHER, oc.REDUCE_SCATTER):
            s += f" dim {ins.imm0}"
        if ins.opcode == oc.ALL_TO_ALL:
            s += f" split_dim {ins.imm0} concat_dim {ins.imm1}"
        return s + ")"

    def _x_collective(self, q: Queue, o: Op) -> None:
        d, ch = o.d, q.chip
        members = self._members(ch, d)
        n = ch.coll_seq.get(members, 0)
        ch.coll_seq[members] = n + 1
        key = (members, n)
        rv = self.rendezvous.setdefault(key, {})
        sig = self._signature(d)
        for c, (_, other) in rv.items():
            if self._signature(other.d) != sig:
                raise CollectiveMismatchError(
                    f"collective #{n} of group {list(members)} does not match across chips: chip {c} "
                    f"issued {self.describe(other.d)}, chip {ch.id} issued {self.describe(d)}")
            break
        rv[ch.id] = (q, o)
        if len(rv) < len(members):
            return None
        del self.rendezvous[key]
        self._run_collective(members, [rv[c] for c in members])
        return None

    def _run_collective(self, members: tuple[int, ...], parts: list[tuple[Queue, Op]]) -> None:
        d0 = parts[0][1].d
        op, kind, imm0, imm1 = d0.op, d0.ins.kind, d0.ins.imm0, d0.ins.imm1
        chips = [self.chips[c] for c in members]
        if op != oc.BARRIER:
            if self.functional:
                xs = [self._read(ch, o.d.ta, o.ra, o.d) for ch, (_, o) in zip(chips, parts)]
                if op == oc.ALL_REDUCE:
                    ys = coll.all_reduce(xs, kind)
                elif op == oc.ALL_GATHER:
                    ys = coll.all_gather(xs, imm0)
                elif op == oc.REDUCE_SCATTER:
                    ys = coll.reduce_scatter(xs, kind, imm0)
                else:
                    ys = coll.all_to_all(xs, imm0, imm1)
                for ch, (_, o), y in zip(chips, parts, ys):
                    self._write(ch, o.d.td, o.rdst, y, o.d)
            else:
                for ch, (_, o) in zip(chips, parts):
                    self._check(ch, o.d.ta, o.ra, o.d, False)
                    self._check(ch, o.d.td, o.rdst, o.d, True)
        self._collective_timing(members, parts)
