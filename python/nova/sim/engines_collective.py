"""The collective engine's instructions (docs/isa.md 2.5): send, recv, and the
collectives' rendezvous, data movement and timing.

A collective starts when the last chip of its group issued it; the planner
(:class:`nova.sim.collectives.CollectivePlanner`) picks its algorithm and
:class:`nova.sim.collective_flows.CollectiveFlows` runs its steps as flows of the
shared-bandwidth pool (with the receivers' reductions); every chip's instruction
completes when the last step ends, at least one cycle after the start.

:class:`CollectiveUnit` is mixed into :class:`nova.sim.engines.Machine`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from collections import deque

from nova.binary import opcodes as oc
from . import collectives as coll
from .collective_flows import CollectiveRun
from .errors import CollectiveMismatchError, ProgramError, ScalarFaultError
from .machine import _RW

if TYPE_CHECKING:
    from .machine import Chip, Dec, Op, Queue

_PORT = {oc.HBM: "hbm", oc.SRAM: "sram"}


class CollectiveUnit:
    """Runs the collective engine's instructions (a mixin of ``Machine``)."""

    def _collective_timing(self, members: tuple[int, ...], parts: list[tuple["Queue", "Op"]]) -> None:
        d0 = parts[0][1].d
        nbytes = d0.ta.nbytes if d0.ta is not None else 0
        ports = (_PORT[d0.ta.space], _PORT[d0.td.space]) if d0.ta is not None else ("hbm", "hbm")
        elt = d0.ta.desc.elt_bytes if d0.ta is not None else 4
        plan = self.planner.plan(d0.op, members, float(nbytes), ports, elt)
        self.flows.start(plan, ports, elt, d0.name, self._collective_done, parts)

    def _collective_done(self, run: CollectiveRun) -> None:
        dur = max(self.now - run.start, self.cycle)
        self.collectives.append((run.name, run.plan.algorithm, dur))
        end = run.start + dur
        for q, _ in run.tag:
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
            self._complete(q)
            # The send's traced instance: the matching recv waited on it.
            self.mailbox.setdefault(key, deque()).append((self.now, data, o, q.last))
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
        _, data, so, sent = self.mailbox[key].popleft()
        if sent >= 0:  # traced: the critical path crosses to the sender here
            o.deps = (*o.deps, sent)
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
