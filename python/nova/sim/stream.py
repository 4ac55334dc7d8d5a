"""The sequencer's dynamic instruction stream, recorded once per program and chip.

No instruction loads a register from memory, so the sequencer's control flow and
every register value it dispatches depend on the program alone (and the chip id),
never on data or time. The interpreter (``Machine._run_seq``) records, in order,
each point where the sequencer meets the rest of the machine: a dispatch (with its
register operands), ``sem_wait``, ``sem_signal`` and ``halt``. Each step carries the
number of scalar instructions before it (each costs one sequencer cycle) and whether
those include a taken loop back-edge (where the watchdog checks the time budget).
:func:`walk_stream` computes the same steps without running (plus the fault the
scalar code raises, if any).

:meth:`nova.sim.sequencer.Sequencer._run_stream` replays the steps with the same float
operations in the same order as the interpreter (``_run_seq``), so simulated times
are bit-identical; a run that needs the interpreter's full state (a time budget hit at
a back-edge, a deadlock report) gets it from :func:`state_at`. Streams are cached by
code identity: a program run again on the same simulator replays its steps without
interpreting anything.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable

from nova.binary import opcodes as oc
from .errors import ProgramError, ScalarFaultError
from .scalar import SaluError, salu, wrap
from .watchdog import Budget, over_instructions

if TYPE_CHECKING:
    from .machine import Dec
    from .program import ChipCode


#: Step kinds: (scalars before, kind, Dec / error factory / state, ra, rb, rc, rdst,
#: back-edge before). CUT ends a stream that reached its limit: the interpreter runs
#: on from the state it holds.
DISPATCH, WAIT, SIGNAL, HALT, RAISE, CUT = range(6)

#: A stream holds at most about this many steps per chip (~200 bytes a step); a
#: longer run is interpreted from there on.
MAX_STEPS = 1_000_000
#: The cache keeps streams of at most this many steps in all (oldest dropped first).
MAX_CACHED_STEPS = 4_000_000

Step = tuple[int, int, Any, int, int, int, int, bool]




class _State:
    """The scalar state of a chip at one point (what error messages and the
    interpreter read: id, code, debug, pc, regs, loops)."""

    def __init__(self, cid: int, code: list["Dec"], debug: dict[int, str]) -> None:
        self.id, self.code, self.debug = cid, code, debug
        self.pc = 0
        self.regs = [0] * oc.NUM_REGISTERS
        self.loops: list[tuple[int, int, int, int]] = []

    def copy(self) -> "_State":
        s = _State(self.id, self.code, self.debug)
        s.pc, s.regs, s.loops = self.pc, list(self.regs), list(self.loops)
        return s


def _where(st: _State, d: "Dec", msg: str) -> str:
    loc = st.debug.get(d.pc)
    return f"chip {st.id}: instruction {d.pc} ({d.name}{' at ' + loc if loc else ''}): {msg}"


def _walk(cid: int, code: list["Dec"], debug: dict[int, str], budget: Budget, limit: int,
          stop: tuple[int, bool] | None = None, final: list[_State] | None = None,
          layers: dict[int, int] | None = None, tags: list[int] | None = None
          ) -> list[Step] | _State | None:
    """Interprets the scalar code (as ``Machine._run_seq`` does, without time).

    Returns the steps, ending in a CUT step past ``limit`` dynamic instructions; the
    state at ``halt`` is appended to ``final``. With ``stop = (i, after)`` returns the state at
    step ``i`` instead: before its scalar prefix, or (``after``) at its own instruction.
    With ``layers`` (the pc of each loop over layers: the number of its first
    iteration's layer) appends to ``tags``, per step, the layer its innermost
    such loop is in (-1 outside them; :mod:`nova.sim.layers`)."""
    final = [] if final is None else final
    tag, outer = -1, []  # the current layer, those of enclosing layer loops
    s = _State(cid, code, debug)
    regs, loops = s.regs, s.loops
    steps: list[Step] = []
    append = steps.append
    pc = n = executed = 0
    back = False
    size = len(code)
    max_instr = budget.max_instructions

    def fault(error: Callable[[], BaseException]) -> list[Step]:
        append((n, RAISE, error, 0, 0, 0, 0, back))
        return steps

    def cut() -> list[Step]:
        s.pc = pc
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


#: Streams of recently run programs, by (ChipCode identity, chip, dma engines, budget);
#: an entry goes when its code is garbage collected (a program that is not run again
#: keeps nothing alive) or the cache holds too many steps.
_STREAMS: "OrderedDict[tuple[Any, ...], tuple[weakref.ref, Stream]]" = OrderedDict()


def _key(code: "ChipCode", cid: int, dma_engines: int, budget: Budget) -> tuple[Any, ...]:
    return (id(code), cid, dma_engines, budget.max_instructions, budget.max_time_ns)


def cached_stream(code: "ChipCode", cid: int, dma_engines: int, budget: Budget) -> Stream | None:
    """The stream an earlier run of chip ``cid`` on ``code`` recorded, or None."""
    key = _key(code, cid, dma_engines, budget)
    hit = _STREAMS.get(key)
    if hit is not None and hit[0]() is code:
        _STREAMS.move_to_end(key)
        return hit[1]
    return None


def store_stream(code: "ChipCode", cid: int, dma_engines: int, budget: Budget, stream: Stream) -> None:
    """Keeps the stream a run recorded (``Machine._run_seq``), for the next runs."""
    key = _key(code, cid, dma_engines, budget)

    def gone(_: object, key: tuple[Any, ...] = key) -> None:
        entry = _STREAMS.get(key)
        if entry is not None and entry[0]() is None:
            del _STREAMS[key]

    _STREAMS[key] = (weakref.ref(code, gone), stream)
    while len(_STREAMS) > 1 and (len(_STREAMS) > 64 or sum(
            len(v[1].steps) for v in _STREAMS.values()) > MAX_CACHED_STEPS):
        _STREAMS.popitem(last=False)


def walk_stream(code: "ChipCode", decoded: list["Dec"], cid: int, budget: Budget) -> Stream:
    """The stream of chip ``cid`` on ``code`` computed without running it (tests compare
    it with what a run records)."""
    final: list[_State] = []
    steps = _walk(cid, decoded, code.debug, budget, MAX_STEPS, final=final)
    assert isinstance(steps, list)
    return Stream(steps, final[0] if final else None)


def snapshot(cid: int, decoded: list["Dec"], debug: dict[int, str], pc: int, regs: list[int],
             loops: list[tuple[int, int, int, int]]) -> _State:
    s = _State(cid, decoded, debug)
    s.pc, s.regs, s.loops = pc, list(regs), list(loops)
    return s


def state_at(cid: int, decoded: list["Dec"], debug: dict[int, str], budget: Budget, i: int,
             after: bool) -> _State:
    """The scalar state (pc, regs, loops) of the chip at step ``i`` of its stream: before
    the step's scalar prefix, or (``after``) at the step's own instruction."""
    s = _walk(cid, decoded, debug, budget, 1 << 62, (i, after))
    assert isinstance(s, _State)
    return s


#: Tiles each prechecked opcode reads (by slot and its address operand) and writes, in
#: timing-only mode (as the ``_x_*`` methods check and count them).
_SLOTS: dict[int, tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]] = {
    oc.MATMUL: ((("ta", 3), ("tb", 4)), (("td", 6),)),
    oc.DMA_COPY: ((("ta", 3),), (("td", 6),)),
    oc.VUNARY: ((("ta", 3),), (("td", 6),)), oc.VBINARY: ((("ta", 3), ("tb", 4)), (("td", 6),)),
    oc.VSCALAR: ((("ta", 3),), (("td", 6),)), oc.VSELECT: ((("ta", 3), ("tb", 4), ("tc", 5)), (("td", 6),)),
    oc.VREDUCE: ((("ta", 3),), (("td", 6),)), oc.VTRANSPOSE: ((("ta", 3),), (("td", 6),)),
    oc.VFILL: ((), (("td", 6),)), oc.VCOPY: ((("ta", 3),), (("td", 6),)), oc.VIOTA: ((), (("td", 6),)),
    oc.VASSERT: ((("ta", 3),), ()), oc.VSCAN: ((("ta", 3),), (("td", 6),)),
    oc.VSORT: ((("ta", 3),), (("td", 6), ("tc", 5))),
}
_RW = (("hbm_read", "hbm_write"), ("sram_read", "sram_write"), ("acc_read", "acc_write"))


def precheck(stream: Stream, capacity: tuple[int, int, int]) -> dict[str, float] | None:
    """Timing-only mode: the bounds checks of every matmul, vector instruction and local
    ``dma_copy`` of the stream, done once. Returns the bytes they move by memory (what
    their per-instruction checks would add up), or None if one is out of bounds (then
    every instruction is checked when it runs, and faults where it would)."""
    if capacity in stream.checks:
        return stream.checks[capacity]
    if stream.steps and stream.steps[-1][1] == CUT:  # the interpreter checks what follows
        stream.checks[capacity] = None
        return None
    total = dict.fromkeys(("hbm_read", "hbm_write", "sram_read", "sram_write", "acc_read", "acc_write"), 0)
    ok = True
    for st in stream.steps:
        if st[1] != DISPATCH:
            continue
        d = st[2]
        slots = _SLOTS.get(d.op)
        if slots is None or d.op == oc.DMA_COPY and d.ins.flags & oc.F_PEER:
            continue
        for w, group in enumerate(slots):
            for name, reg in group:
                t = getattr(d, name)
                addr = st[reg]
                if addr < 0 or addr + t.extent > capacity[t.space]:
                    ok = False
                total[_RW[t.space][w]] += t.nbytes
        if d.op == oc.MATMUL and d.ins.flags & oc.F_ACCUMULATE:
            total[_RW[d.td.space][0]] += d.td.nbytes
        if not ok:
            break
    result = {k: float(v) for k, v in total.items()} if ok else None
    stream.checks[capacity] = result
    return result
