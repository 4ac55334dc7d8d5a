"""The sequencer's dynamic instruction stream, and the one interpreter of scalar code.

No instruction loads a register from memory, so the sequencer's control flow and
every register value it dispatches depend on the program alone (and the chip id),
never on data or time. :func:`walk_stream` interprets the scalar code of a chip
(``salu``, ``li``, loops, branches, ``chip_id``) without running anything and
lists, in order, each point where the sequencer meets the rest of the machine: a
dispatch (with its register operands), ``sem_wait``, ``sem_signal`` and ``halt``,
or the fault the scalar code raises. Each step carries the number of scalar
instructions before it (each costs one sequencer cycle) and whether those include
a taken loop back-edge (where the watchdog checks the time budget).

:mod:`nova.sim.sequencer` runs the steps on the machine (time, queues,
semaphores); a stream longer than :data:`MAX_STEPS` ends in a CUT step and
:func:`continue_stream` walks the next part from the state it holds. What needs
the sequencer's scalar state between steps (a time budget hit at a back-edge, a
deadlock report) gets it from :func:`state_at` and :func:`back_edge_in_prefix`,
which walk again. Streams are cached (:mod:`nova.sim.stream_cache`), so a program
run again replays its steps without interpreting anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from nova.binary import opcodes as oc
from .errors import ProgramError, ScalarFaultError
from .scalar import SaluError, salu, wrap
from .watchdog import Budget, over_instructions

if TYPE_CHECKING:
    from .machine import Dec
    from .program import ChipCode


#: Step kinds: (scalars before, kind, Dec / error factory / state, ra, rb, rc, rdst,
#: back-edge before). CUT ends a stream that reached its limit: :func:`continue_stream`
#: walks on from the state it holds.
DISPATCH, WAIT, SIGNAL, HALT, RAISE, CUT = range(6)

#: A stream is walked at most this many dynamic instructions at a time (~200 bytes a
#: step): a longer run goes on in further parts (:func:`continue_stream`).
MAX_STEPS = 1_000_000

Step = tuple[int, int, Any, int, int, int, int, bool]


class _State:
    """The scalar state of a chip at one point (what error messages and the
    watchdog read: id, code, debug, pc, regs, loops; and the dynamic instructions
    executed before it, where a walk goes on from it)."""

    def __init__(self, cid: int, code: list["Dec"], debug: dict[int, str]) -> None:
        self.id, self.code, self.debug = cid, code, debug
        self.pc = 0
        self.regs = [0] * oc.NUM_REGISTERS
        self.loops: list[tuple[int, int, int, int]] = []
        self.executed = 0

    def copy(self) -> "_State":
        s = _State(self.id, self.code, self.debug)
        s.pc, s.regs, s.loops, s.executed = self.pc, list(self.regs), list(self.loops), self.executed
        return s


def _where(st: _State, d: "Dec", msg: str) -> str:
    loc = st.debug.get(d.pc)
    return f"chip {st.id}: instruction {d.pc} ({d.name}{' at ' + loc if loc else ''}): {msg}"


def _walk(cid: int, code: list["Dec"], debug: dict[int, str], budget: Budget, limit: int,
          stop: tuple[int, bool] | None = None, final: list[_State] | None = None,
          layers: dict[int, int] | None = None, tags: list[int] | None = None,
          start: _State | None = None, scan: int | None = None
          ) -> list[Step] | _State | tuple[_State, int] | None:
    """Interprets the scalar code from ``start`` (a CUT step's state; None: the
    program's start), without time.

    Returns the steps, ending in a CUT step past ``limit`` dynamic instructions (counted
    from the program's start); the state at ``halt`` is appended to ``final``. With
    ``stop = (i, after)`` returns the state at step ``i`` instead: before its scalar
    prefix, or (``after``) at its own instruction; with ``scan`` too, the state at the
    first taken back-edge of step ``i``'s prefix with at least ``scan`` of the prefix's
    scalars before it, and their number (the state at the step's instruction if none).
    With ``layers`` (the pc of each loop over layers: the number of its first
    iteration's layer) appends to ``tags``, per step, the layer its innermost
    such loop is in (-1 outside them; :mod:`nova.sim.layers`)."""
    final = [] if final is None else final
    tag, outer = -1, []  # the current layer, those of enclosing layer loops
    s = _State(cid, code, debug) if start is None else start.copy()
    regs, loops = s.regs, s.loops
    steps: list[Step] = []
    append = steps.append
    pc, executed, n = s.pc, s.executed, 0
    back = False
    size = len(code)
    max_instr = budget.max_instructions

    def fault(error: Callable[[], BaseException]) -> list[Step]:
        append((n, RAISE, error, 0, 0, 0, 0, back))
        return steps

    def cut() -> list[Step]:
        s.pc, s.executed = pc, executed
        append((n, CUT, s.copy(), 0, 0, 0, 0, back))
        return steps

    while True:
        if stop is not None and len(steps) == stop[0] and (not stop[1] and n == 0):
            s.pc = pc
            return s
        if pc >= size:
            at = pc
            return fault(lambda: ProgramError(f"chip {cid}: execution fell off the end of the code "
                                              f"(instruction {at}; code must end with halt)"))
        d = code[pc]
        op = d.op
        if d.qkey >= 0 or op in (oc.SEM_WAIT, oc.SEM_SIGNAL, oc.HALT):
            if stop is not None and len(steps) == stop[0]:
                s.pc = pc
                return s
            executed += 1
            if tags is not None:
                tags.append(tag)
            if d.qkey >= 0:
                ins = d.ins
                append((n, DISPATCH, d, regs[ins.ra], regs[ins.rb], regs[ins.rc], regs[ins.rdst], back))
            else:
                append((n, WAIT if op == oc.SEM_WAIT else SIGNAL if op == oc.SEM_SIGNAL else HALT,
                        d, 0, 0, 0, 0, back))
                if op == oc.HALT:
                    s.pc = pc
                    final.append(s)
                    return steps
            n, back = 0, False
            pc += 1
            if executed >= limit:
                return cut()
            continue
        ins = d.ins
        n += 1
        executed += 1
        if op == oc.SALU:
            try:
                r = salu(ins.kind, regs[ins.ra], regs[ins.rb])
            except SaluError as e:
                msg, cls = _where(s, d, e.message), e.cls
                n -= 1
                return fault(lambda: cls(msg))
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
                msg = _where(s, d, f"loop step {st} is not positive")
                n -= 1
                return fault(lambda: ScalarFaultError(msg))
            if lb >= ub:
                pc = ins.target + 1
            else:
                if len(loops) >= oc.MAX_LOOP_DEPTH:
                    msg = _where(s, d, "loop stack overflow (more than 8 nested loops)")
                    n -= 1
                    return fault(lambda: ScalarFaultError(msg))
                regs[ins.rd] = lb
                loops.append((pc, ins.rd, ub, st))
                if layers is not None and pc in layers:
                    outer.append(tag)
                    tag = layers[pc]
                pc += 1
        elif op == oc.ENDLOOP:
            if not loops or loops[-1][0] != ins.target:
                msg = _where(s, d, "endloop does not match the innermost loop")
                n -= 1
                return fault(lambda: ProgramError(msg))
            lpc, rd, ub, st = loops[-1]
            v = wrap(regs[rd] + st)
            regs[rd] = v
            if v < ub:
                pc = lpc + 1
                if executed > max_instr:  # the watchdog's instruction budget, at this back-edge
                    snap, count = s.copy(), executed
                    n -= 1
                    return fault(lambda: over_instructions(snap, count, budget))
                back = True
                if scan is not None and len(steps) == stop[0] and n > scan:
                    s.pc = pc
                    return s, n - 1
                if layers is not None and lpc in layers:
                    tag += 1
            else:
                loops.pop()
                if layers is not None and lpc in layers:
                    tag = outer.pop()
                pc += 1
        elif op == oc.IF:
            pc = pc + 1 if regs[ins.ra] != 0 else ins.target + 1
        elif op == oc.ELSE:
            pc = ins.target + 1
        elif op == oc.ENDIF or op == oc.NOP:
            pc += 1
        elif op == oc.CHIP_ID:
            regs[ins.rd] = cid
            pc += 1
        else:
            msg = _where(s, d, f"{d.name} cannot run on the sequencer")
            n -= 1
            return fault(lambda: ProgramError(msg))
        if executed >= limit:
            return cut()


class Stream:
    """A chip's steps and its scalar state at ``halt`` (None if it never halts)."""

    __slots__ = ("steps", "final", "checks", "fast")

    def __init__(self, steps: list[Step], final: _State | None) -> None:
        self.steps, self.final = steps, final
        self.checks: dict[tuple[int, int, int], dict[str, float] | None] = {}  # precheck()
        self.fast: dict[tuple[int, int], tuple[Any, Any]] = {}  # nova.sim.fast_timing, by chip


def walk_stream(code: "ChipCode", decoded: list["Dec"], cid: int, budget: Budget) -> Stream:
    """The stream of chip ``cid`` on ``code`` (its first :data:`MAX_STEPS` dynamic
    instructions), computed without running it."""
    final: list[_State] = []
    steps = _walk(cid, decoded, code.debug, budget, MAX_STEPS, final=final)
    assert isinstance(steps, list)
    return Stream(steps, final[0] if final else None)


def continue_stream(cut: _State, budget: Budget) -> Stream:
    """The next part of a stream that ended in a CUT step holding ``cut``."""
    final: list[_State] = []
    steps = _walk(cut.id, cut.code, cut.debug, budget, cut.executed + MAX_STEPS, final=final, start=cut)
    assert isinstance(steps, list)
    return Stream(steps, final[0] if final else None)


def state_at(cid: int, decoded: list["Dec"], debug: dict[int, str], budget: Budget, i: int,
             after: bool, start: _State | None = None) -> _State:
    """The scalar state (pc, regs, loops) of the chip at step ``i`` of the stream (part)
    walked from ``start``: before the step's scalar prefix, or (``after``) at the step's
    own instruction."""
    s = _walk(cid, decoded, debug, budget, 1 << 62, (i, after), start=start)
    assert isinstance(s, _State)
    return s


def back_edge_in_prefix(cid: int, decoded: list["Dec"], debug: dict[int, str], budget: Budget,
                        i: int, first: int, end: int, start: _State | None = None
                        ) -> tuple[_State, int] | None:
    """The scalar state at the first taken loop back-edge among scalars ``first`` to
    ``end - 1`` of step ``i``'s prefix (its ``endloop`` done), and its index in the
    prefix; None if there is none (the watchdog's time check at a back-edge,
    :mod:`nova.sim.sequencer`). A CUT step's prefix ends at ``end``: the walk here
    is not cut and would run on into the next part's."""
    r = _walk(cid, decoded, debug, budget, 1 << 62, (i, True), start=start, scan=first)
    return r if isinstance(r, tuple) and r[1] < end else None


