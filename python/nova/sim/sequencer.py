"""The sequencer of every chip (docs/isa.md 1.1): fetches in program order (one
``timing.sequencer_cycles`` step per instruction), runs scalar code itself and
dispatches the rest into the engine queues. It runs ahead of global time through
scalar code and synchronises only at semaphore instructions, a full queue and halt.

The scalar code is interpreted once, without time, into the chip's dynamic stream
(:mod:`nova.sim.stream`); here the sequencer runs that stream on the machine: each
step's scalar prefix costs its cycles, and its dispatch, semaphore operation or
halt meets the queues, the semaphores and global time. The compiled loop
(:mod:`nova.sim.fast_timing`) runs the same steps with the same float operations.
:class:`Sequencer` is mixed into :class:`nova.sim.engines.Machine`.
"""

from __future__ import annotations

from . import stream as sx
from .errors import ScalarFaultError
from .machine import U32_MAX, Chip, Op
from .watchdog import over_instructions, over_time


class Sequencer:
    """The chips' sequencers (a mixin of ``Machine``)."""

    def _resume(self, ch: Chip) -> None:
        """Runs chip ``ch``'s sequencer from step ``ch.si`` of its stream until it blocks
        (on a semaphore, a full queue or its own clock ahead of global time) or halts."""
        ch.block = None
        now = self.now
        t = ch.t if ch.t > now else now
        steps, i, at_step, cyc, queues = ch.steps, ch.si, ch.at_step, self.cycle, ch.queues
        depth, t_max, trace = self.queue_depth, self._t_max, self.trace
        n = k = 0  # scalar instructions, dispatches
        while True:
            st = steps[i]
            if not at_step:
                m = st[0]
                if m:
                    t0 = t
                    for _ in range(m):
                        t += cyc
                    if st[7] and t > t_max:
                        # The watchdog checks the time at each taken back-edge: one in
                        # the prefix may have been past the budget.
                        self._back_edge_past_time(ch, i, t0, n, k)
                    n += m
                at_step = True
            kind = st[1]
            if kind == sx.DISPATCH:
                d = st[2]
                q = queues[d.qkey]
                if len(q.pending) >= depth:
                    ch.block = q
                    break
                o = Op(d, st[3], st[4], st[5], st[6], t)
                q.pending.append(o)
                if q.running is None and len(q.pending) == 1 and not q.wake:
                    q.wake = True
                    self.schedule(t, self._wake, q)
                t += cyc
                k += 1
            elif kind == sx.WAIT or kind == sx.SIGNAL:
                if t > now:  # semaphores are read and written in global time
                    ch.block = "time"
                    self.schedule(t, self._resume, ch)
                    break
                sems = ch.sems
                d = st[2]
                if kind == sx.WAIT:
                    if any(sems[s] <= 0 for s in d.waits):
                        ch.block = "sem"
                        break
                    for s in d.waits:
                        sems[s] -= 1
                        if trace is not None and ch.sem_fifo[s]:
                            ch.sem_fifo[s].popleft()
                    n += 1
                    t += cyc
                else:
                    for s in d.signals:
                        if sems[s] >= U32_MAX:
                            raise ScalarFaultError(self._where(ch, d, f"semaphore s{s} overflows"))
                        sems[s] += 1
                        ch.sem_time[s] = t
                        if trace is not None:
                            ch.sem_fifo[s].append(-1)
                    n += 1
                    t += cyc
                    ch.si, ch.at_step, ch.t = i + 1, False, t
                    i, at_step = i + 1, False
                    self._sems_changed(ch)  # may start queues waiting on them
                    continue
            elif kind == sx.HALT:
                n += 1
                ch.halted = True
                ch.t_end = max(ch.t_end, t + cyc)
                t += cyc
                i += 1
                at_step = False
                break
            elif kind == sx.RAISE:
                ch.scalar_count += n
                ch.executed += n + k
                raise st[2]()
            else:  # CUT: the stream goes on from the state the step holds
                ch.cut = st[2]
                ch.stream = sx.continue_stream(ch.cut, self.budget)
                steps = ch.steps = ch.stream.steps
                i, at_step = 0, False
                continue
            i += 1
            at_step = False
        ch.si, ch.at_step, ch.t = i, at_step, t
        ch.scalar_count += n
        ch.executed += n + k
        if ch.executed > self.budget.max_instructions:  # straight-line code past the budget
            self._sync_state()
            raise over_instructions(ch, ch.executed, self.budget)

    def _back_edge_past_time(self, ch: Chip, i: int, t0: float, n: int, k: int) -> None:
        """Raises the watchdog's time error if a taken loop back-edge in the scalar
        prefix of step ``i`` (run from time ``t0``) was past the time budget: the first
        such back-edge, with the time the sequencer had there."""
        cyc, t_max, m = self.cycle, self._t_max, ch.steps[i][0]
        t, first = t0, 0  # the time before each scalar of the prefix, as the prefix adds it
        while first < m and not t > t_max:
            t += cyc
            first += 1
        if first == m:
            return
        hit = sx.back_edge_in_prefix(ch.id, ch.code, ch.debug, self.budget, i, first, m, ch.cut)
        if hit is None:
            return
        s, j = hit
        for _ in range(j - first):
            t += cyc
        ch.pc, ch.regs, ch.loops = s.pc, s.regs, s.loops
        ch.scalar_count += n
        ch.executed += n + j + 1 + k
        raise over_time(self, t, self.budget, ch)

    def _sync_state(self) -> None:
        """Before an error message that reads sequencer state (pc, loops, registers):
        every chip gets it from its stream."""
        for ch in self.chips:
            s = (ch.stream.final if ch.halted else
                 sx.state_at(ch.id, ch.code, ch.debug, self.budget, ch.si, ch.at_step, ch.cut))
            ch.pc, ch.regs, ch.loops = s.pc, list(s.regs), list(s.loops)
