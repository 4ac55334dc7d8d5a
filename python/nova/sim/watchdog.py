"""The simulator's watchdog: every run has a budget of dynamic instructions (per chip)
and of simulated time, so that a loop that never ends (or one of 10^12 trips) stops
with an error naming the loop instead of running forever.

The defaults are far above any real model run (a GPT-2 small forward is ~10^5
instructions per chip and a few ms simulated): 10^9 instructions per chip and 10
simulated seconds. ``Simulator(..., max_instructions=, max_time_s=)`` or the knobs
``NOVA_SIM_MAX_INSTRUCTIONS`` / ``NOVA_SIM_MAX_TIME_S`` change them.

The sequencer checks the budgets at each taken loop back-edge (the only backward
jump of the ISA, so every unbounded run passes there) and its instruction count
whenever it yields; the event loop checks the simulated time of each event. A run
stops at most one loop body (or one straight-line stretch) past its budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import BudgetExceededError

if TYPE_CHECKING:
    from .engines import Chip, Machine

DEFAULT_MAX_INSTRUCTIONS = 10**9
DEFAULT_MAX_TIME_S = 10.0


@dataclass(frozen=True)
class Budget:
    """max_instructions: dynamic instructions per chip (scalar and dispatched);
    max_time_s: simulated seconds of the whole run."""

    max_instructions: int = DEFAULT_MAX_INSTRUCTIONS
    max_time_s: float = DEFAULT_MAX_TIME_S

    def __post_init__(self) -> None:
        n, s = self.max_instructions, self.max_time_s
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"max_instructions must be a positive integer, got {n!r}")
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s < math.inf:
            raise ValueError(f"max_time_s must be a positive number of seconds, got {s!r}")

    @property
    def max_time_ns(self) -> float:
        return self.max_time_s * 1e9

    @classmethod
    def from_settings(cls, max_instructions: int | None = None,
                      max_time_s: float | None = None) -> "Budget":
        """Given values, else the knobs, else the defaults."""
        from nova.knobs import knobs

        k = knobs()
        n = max_instructions if max_instructions is not None else k.sim_max_instructions
        s = max_time_s if max_time_s is not None else k.sim_max_time_s
        return cls(DEFAULT_MAX_INSTRUCTIONS if n is None else n,
                   DEFAULT_MAX_TIME_S if s is None else s)


_HOW = {"instructions": "Simulator(..., max_instructions=N) or NOVA_SIM_MAX_INSTRUCTIONS=N",
        "time": "Simulator(..., max_time_s=S) or NOVA_SIM_MAX_TIME_S=S"}


def _loop_of(ch: "Chip") -> tuple[int | None, str | None, str]:
    """The innermost running loop of ``ch``: its pc, source line and a description
    (the loop instruction's DEBUG entry, else the first one in its body)."""
    if not ch.loops:
        d = ch.code[min(ch.pc, len(ch.code) - 1)]
        loc = ch.debug.get(d.pc)
        return d.pc, loc, f"instruction {d.pc} ({d.name}{' at ' + loc if loc else ''})"
    lpc, rd, ub, st = ch.loops[-1]
    end = ch.code[lpc].ins.target
    loc = ch.debug.get(lpc) or next((ch.debug[p] for p in range(lpc + 1, end + 1)
                                     if p in ch.debug), None)
    depth = f", nested {len(ch.loops)} deep" if len(ch.loops) > 1 else ""
    text = (f"the loop at instruction {lpc}{' (' + loc + ')' if loc else ''} "
            f"(r{rd} = {ch.regs[rd]}, bound {ub}, step {st}{depth})")
    return lpc, loc, text


def over_instructions(ch: "Chip", executed: int, budget: Budget) -> BudgetExceededError:
    pc, loc, loop = _loop_of(ch)
    return BudgetExceededError(
        f"chip {ch.id}: the run exceeded its budget of {budget.max_instructions} instructions "
        f"per chip ({executed} executed) in {loop}; raise it with {_HOW['instructions']}",
        "instructions", budget.max_instructions, ch.id, pc, loc)


def over_time(machine: "Machine", now_ns: float, budget: Budget,
              ch: "Chip | None" = None) -> BudgetExceededError:
    """``ch`` is the chip whose sequencer went past the budget, or None for the
    event loop: then the first unfinished chip inside a loop is named."""
    if ch is None:
        busy = [c for c in machine.chips if not c.finished]
        ch = next((c for c in busy if c.loops), busy[0] if busy else machine.chips[0])
    pc, loc, loop = _loop_of(ch)
    return BudgetExceededError(
        f"chip {ch.id}: the run exceeded its budget of {budget.max_time_s:g} simulated seconds "
        f"(at {now_ns / 1e9:.6g} s) in {loop}; raise it with {_HOW['time']}",
        "time", budget.max_time_s, ch.id, pc, loc)

