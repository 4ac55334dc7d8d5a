"""The sequencer of every chip (docs/isa.md 1.1): fetches in program order (one
``timing.sequencer_cycles`` step per instruction), runs scalar code itself and
dispatches the rest into the engine queues. It runs ahead of global time through
scalar code and synchronises only at semaphore instructions, a full queue and halt.

A program's first run interprets (:meth:`Sequencer._run_seq`) and records the
dynamic stream (:mod:`nova.sim.stream`); later runs replay it
(:meth:`Sequencer._run_stream`) with the same time arithmetic.
:class:`Sequencer` is mixed into :class:`nova.sim.engines.Machine`.
"""

from __future__ import annotations

from nova.binary import opcodes as oc
from . import stream as sx
from .errors import ProgramError, ScalarFaultError
from .machine import U32_MAX, Chip, Op
from .scalar import SaluError, salu, wrap
from .stream import snapshot, state_at
from .watchdog import over_instructions, over_time


class Sequencer:
    """The chips' sequencers (a mixin of ``Machine``)."""

    # Sequencer ---------------------------------------------------------------------------
    def _resume(self, ch: Chip) -> None:
        ch.block = None
        if ch.steps is not None:
            self._run_stream(ch)
        else:
            self._run_seq(ch)

    def _run_stream(self, ch: Chip) -> None:
        """``_run_seq`` over the chip's precomputed stream (nova.sim.stream): the same
        time arithmetic, blocking and events, without interpreting scalar code."""
        now = self.now
        t = ch.t if ch.t > now else now
        steps, i, at_step, cyc, queues = ch.steps, ch.si, ch.at_step, self.cycle, ch.queues
        depth, t_max = self.queue_depth, self._t_max
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
                        # A back-edge in the prefix may be past the time budget: the
                        # interpreter runs on from the prefix and raises where it would.
                        ch.t = t0
                        self._to_interpreter(ch, i, False, n, k)
                        self._run_seq(ch)
                        return
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
            elif kind == sx.WAIT:
                if t > now:
                    ch.block = "time"
                    self.schedule(t, self._resume, ch)
                    break
                sems = ch.sems
                waits = st[2].waits
                if any(sems[s] <= 0 for s in waits):
                    ch.block = "sem"
                    break
                for s in waits:
                    sems[s] -= 1
                n += 1
                t += cyc
            elif kind == sx.SIGNAL:
                if t > now:
                    ch.block = "time"
                    self.schedule(t, self._resume, ch)
                    break
                sems = ch.sems
                d = st[2]
                for s in d.signals:
                    if sems[s] >= U32_MAX:
                        raise ScalarFaultError(self._where(ch, d, f"semaphore s{s} overflows"))
                    sems[s] += 1
                    ch.sem_time[s] = t
                n += 1
                t += cyc
                ch.si, ch.at_step, ch.t = i + 1, False, t
                i, at_step = i + 1, False
                self._sems_changed(ch)
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
            else:  # CUT: the interpreter runs on from here
                f = st[2]
                ch.pc, ch.regs, ch.loops = f.pc, list(f.regs), list(f.loops)
                ch.scalar_count += n
                ch.executed += n + k
                ch.steps = None
                ch.t = t
                self._run_seq(ch)
                return
            i += 1
            at_step = False
        ch.si, ch.at_step, ch.t = i, at_step, t
        ch.scalar_count += n
        ch.executed += n + k
        if ch.executed > self.budget.max_instructions:  # straight-line code past the budget
            self._sync_state()
            raise over_instructions(ch, ch.executed, self.budget)

    def _to_interpreter(self, ch: Chip, i: int, after: bool, n: int, k: int) -> None:
        """Hands the chip's sequencer over to ``_run_seq`` at step ``i`` of its stream
        (for the rest of this run): its pc, registers and loop stack from the stream."""
        s = state_at(ch.id, ch.code, ch.debug, self.budget, i, after)
        ch.pc, ch.regs, ch.loops = s.pc, s.regs, s.loops
        ch.scalar_count += n
        ch.executed += n + k
        ch.steps = None

    def _sync_state(self) -> None:
        """Before an error message that reads sequencer state (pc, loops, registers):
        every chip on a stream gets it from the stream."""
        for ch in self.chips:
            if ch.steps is not None:
                s = (ch.stream.final if ch.halted else
                     state_at(ch.id, ch.code, ch.debug, self.budget, ch.si, ch.at_step))
                ch.pc, ch.regs, ch.loops = s.pc, list(s.regs), list(s.loops)

    def _run_seq(self, ch: Chip) -> None:
        now = self.now
        t = ch.t if ch.t > now else now
        pc, code, regs, cyc, queues = ch.pc, ch.code, ch.regs, self.cycle, ch.queues
        n = k = 0  # scalar instructions, dispatches
        rec = None if ch.rec_done else ch.rec  # recording the stream (nova.sim.stream)
        mark, carry, back = 0, ch.rec_carry, ch.rec_back
        left, t_max = self.budget.max_instructions - ch.executed, self.budget.max_time_ns
        try:
            while True:
                d = code[pc]
                op = d.op
                if d.qkey >= 0:
                    q = queues[d.qkey]
                    if len(q.pending) >= self.queue_depth:
                        ch.block = q
                        break
                    ins = d.ins
                    o = Op(d, regs[ins.ra], regs[ins.rb], regs[ins.rc], regs[ins.rdst], t)
                    if rec is not None:
                        rec.append((n - mark + carry, sx.DISPATCH, d, o.ra, o.rb, o.rc, o.rdst, back))
                        mark, carry, back = n, 0, False
                    q.pending.append(o)
                    if q.running is None and len(q.pending) == 1 and not q.wake:
                        q.wake = True
                        self.schedule(t, self._wake, q)
                    t += cyc
                    pc += 1
                    k += 1
                    continue
                ins = d.ins
                n += 1
                if op == oc.SALU:
                    try:
                        r = salu(ins.kind, regs[ins.ra], regs[ins.rb])
                    except SaluError as e:
                        raise e.cls(self._where(ch, d, e.message)) from None
                    regs[ins.rd] = r
                    pc += 1
                elif op == oc.LI:
                    regs[ins.rd] = ins.imm0
                    pc += 1
                elif op == oc.LOOP:
                    fl = ins.flags
                    lb = regs[ins.ra] if fl & oc.F_LB_REG else ins.imm0
                    ub = regs[ins.rb] if fl & oc.F_UB_REG else ins.imm1
                    st = regs[ins.rc] if fl & oc.F_STEP_REG else ins.imm2
                    if st <= 0:
                        raise ScalarFaultError(self._where(ch, d, f"loop step {st} is not positive"))
                    if lb >= ub:
                        pc = ins.target + 1
                    else:
                        if len(ch.loops) >= oc.MAX_LOOP_DEPTH:
                            raise ScalarFaultError(self._where(ch, d, "loop stack overflow (more than 8 nested loops)"))
                        regs[ins.rd] = lb
                        ch.loops.append((pc, ins.rd, ub, st))
                        pc += 1
                elif op == oc.ENDLOOP:
                    if not ch.loops or ch.loops[-1][0] != ins.target:
                        raise ProgramError(self._where(ch, d, "endloop does not match the innermost loop"))
                    lpc, rd, ub, st = ch.loops[-1]
                    v = wrap(regs[rd] + st)
                    regs[rd] = v
                    if v < ub:
                        pc = lpc + 1
                        back = True
                        if n + k > left or t > t_max:  # the watchdog, at each back-edge
                            ch.executed += n + k
                            raise (over_instructions(ch, ch.executed, self.budget) if n + k > left
                                   else over_time(self, t, self.budget, ch))
                    else:
                        ch.loops.pop()
                        pc += 1
                elif op == oc.IF:
                    pc = pc + 1 if regs[ins.ra] != 0 else ins.target + 1
                elif op == oc.ELSE:
                    pc = ins.target + 1
                elif op == oc.ENDIF or op == oc.NOP:
                    pc += 1
                elif op == oc.CHIP_ID:
                    regs[ins.rd] = ch.id
                    pc += 1
                elif op == oc.SEM_WAIT or op == oc.SEM_SIGNAL:
                    if t > now:
                        ch.block = "time"
                        self.schedule(t, self._resume, ch)
                        n -= 1
                        break
                    sems = ch.sems
                    if op == oc.SEM_WAIT:
                        if any(sems[s] <= 0 for s in d.waits):
                            ch.block = "sem"
                            n -= 1
                            break
                        for s in d.waits:
                            sems[s] -= 1
                            if self.trace is not None and ch.sem_fifo[s]:
                                ch.sem_fifo[s].popleft()
                        if rec is not None:
                            rec.append((n - 1 - mark + carry, sx.WAIT, d, 0, 0, 0, 0, back))
                            mark, carry, back = n, 0, False
                        pc += 1
                    else:
                        for s in d.signals:
                            if sems[s] >= U32_MAX:
                                raise ScalarFaultError(self._where(ch, d, f"semaphore s{s} overflows"))
                            sems[s] += 1
                            ch.sem_time[s] = t
                            if self.trace is not None:
                                ch.sem_fifo[s].append(-1)
                        if rec is not None:
                            rec.append((n - 1 - mark + carry, sx.SIGNAL, d, 0, 0, 0, 0, back))
                            mark, carry, back = n, 0, False
                        pc += 1
                        t += cyc
                        ch.pc, ch.t = pc, t
                        self._sems_changed(ch)
                        continue
                elif op == oc.HALT:
                    if rec is not None:
                        rec.append((n - 1 - mark + carry, sx.HALT, d, 0, 0, 0, 0, back))
                        mark, carry, back = n, 0, False
                    ch.halted = True
                    ch.t_end = max(ch.t_end, t + cyc)
                    t += cyc
                    break
                else:
                    raise ProgramError(self._where(ch, d, f"{d.name} cannot run on the sequencer"))
                t += cyc
        except IndexError:
            if pc >= len(code):
                raise ProgramError(f"chip {ch.id}: execution fell off the end of the code "
                                   f"(instruction {pc}; code must end with halt)") from None
            raise
        ch.pc, ch.t = pc, t
        ch.scalar_count += n
        ch.executed += n + k
        if rec is not None:
            ch.rec_carry, ch.rec_back = n - mark + carry, back
            if len(rec) >= sx.MAX_STEPS and not ch.halted:  # long enough: the rest is interpreted
                rec.append((ch.rec_carry, sx.CUT, snapshot(ch.id, code, ch.debug, pc, regs, ch.loops),
                            0, 0, 0, 0, back))
                ch.rec_done = True
        if ch.executed > self.budget.max_instructions:  # straight-line code past the budget
            raise over_instructions(ch, ch.executed, self.budget)
