"""The end-of-run check of a simulated run: every chip finished (halted, queues
drained) and every send received; else the deadlock report, naming what each blocked
sequencer and queue head waits for (:class:`DeadlockError`), or the collectives that
do not match across chips (:class:`CollectiveMismatchError`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nova.binary import opcodes as oc
from .errors import CollectiveMismatchError, DeadlockError, SimulationError
from .machine import Q_COLLECTIVE, Queue

if TYPE_CHECKING:
    from .engines import Machine


def check_end(m: "Machine") -> None:
    """Raises unless every chip of ``m`` finished and every send was received."""
    if not all(ch.finished for ch in m.chips):
        m._sync_state()
    if all(ch.finished for ch in m.chips):
        left = [(k, v) for k, v in m.mailbox.items() if v]
        if left:
            (src, dst, chn), msgs = left[0]
            raise SimulationError(f"send from chip {src} (instruction {msgs[0][2].d.pc}) to chip {dst} "
                                  f"on channel {chn} was never received")
        return
    lines = []
    for ch in m.chips:
        if ch.finished:
            continue
        if not ch.halted:
            d = ch.code[ch.pc]
            if ch.block == "sem":
                vals = ", ".join(f"s{s}={ch.sems[s]}" for s in d.waits)
                lines.append(f"chip {ch.id}: sequencer at instruction {d.pc} (sem_wait) waits for {vals}")
            elif isinstance(ch.block, Queue):
                lines.append(f"chip {ch.id}: sequencer at instruction {d.pc} ({d.name}) stalls on the "
                             f"full {ch.block.name} queue")
            else:
                lines.append(f"chip {ch.id}: sequencer blocked at instruction {d.pc} ({d.name})")
        for q in ch.queues:
            if not q.pending:
                continue
            o = q.pending[0]
            d = o.d
            if q.running is None:
                vals = ", ".join(f"s{s}={ch.sems[s]}" for s in d.waits)
                lines.append(f"chip {ch.id}: {q.name} queue head instruction {d.pc} ({d.name}) waits "
                             f"for semaphores {vals}")
            elif d.op == oc.RECV:
                lines.append(f"chip {ch.id}: {q.name} queue head instruction {d.pc} (recv) waits for a "
                             f"send from chip {o.rc} on channel {d.ins.imm1}")
            else:
                lines.append(f"chip {ch.id}: {q.name} queue head {m.describe(d)} waits for the "
                             f"other chips of its group")
    if m.rendezvous:
        msgs = []
        for (members, n), rv in m.rendezvous.items():
            arrived = ", ".join(f"chip {c} issued {m.describe(o.d)}" for c, (_, o) in rv.items())
            missing = [c for c in members if c not in rv]
            what = []
            for c in missing:
                other = m.chips[c]
                head = other.queues[Q_COLLECTIVE].pending
                if head and head[0].d.op in oc.COLLECTIVE_OPS and head[0] is other.queues[Q_COLLECTIVE].running:
                    what.append(f"chip {c} is at {m.describe(head[0].d)}")
                elif other.finished:
                    what.append(f"chip {c} finished without issuing it")
                else:
                    what.append(f"chip {c} has not issued it")
            msgs.append(f"collective #{n} of group {list(members)}: {arrived}; " + "; ".join(what))
        raise CollectiveMismatchError("collectives do not match across chips (deadlock):\n  "
                                      + "\n  ".join(msgs + lines))
    raise DeadlockError("deadlock: every unfinished engine is blocked forever:\n  " + "\n  ".join(lines))
