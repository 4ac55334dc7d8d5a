"""Functional runs with the times taken from the compiled event loop.

Simulated time never depends on data (no register is loaded from memory; the
costs of matmuls, vector instructions and local DMA copies are static), so a
functional run need not run its data effects inside the Python event loop. The
compiled loop (:func:`nova.sim.fast_timing.run_ordered`) computes every time,
busy time and count of the report, bit-identical to the Python loop's, and the
order in which the instructions start; this module then runs the instructions'
data effects in that order, which is the order the Python loop runs them in
(an effect happens when its instruction starts), so memories end bit-identical
too, whatever the program's synchronisation.

It applies where the compiled loop does (a traced run, collectives, send/recv,
peer DMA, budgets and deadlocks fall back to the Python loop) and further needs
every chip's stream prechecked (all accesses in bounds: the memory traffic is
then the precheck's count) and free of ``dma_gather`` / ``dma_scatter`` (their
time depends on the index values). A fault in a data effect (a failed
``vassert``, a conversion fault) raises the error the Python loop raises, at
the same instruction: the first in start order. ``NOVA_SIM_FAST=0`` turns it off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import fast_timing
from nova.binary import opcodes as oc
from .numerics import ValueFault
from .replay_plan import schedule
from . import stream as sx
from .precheck import precheck

if TYPE_CHECKING:
    from .engines import Machine

#: Opcodes whose time depends on the data (indexed DMA: one setup per run of positions).
_DATA_TIMED = (oc.DMA_GATHER, oc.DMA_SCATTER)


def eligible(m: "Machine") -> bool:
    """Whether ``m`` (a fresh functional machine) can run decoupled; prechecks
    every chip's stream (marks it prechecked, as a timing-only run does)."""
    if not m.functional or m.trace is not None or not fast_timing.available():
        return False
    tg = m.target
    caps = (tg.capacity(oc.HBM), tg.capacity(oc.SRAM), tg.capacity(oc.ACC))
    for ch in m.chips:
        if ch.steps is None or ch.stream.final is None or ch.si != 0:
            return False
        timed = ch.stream.fast.get("data-timed")
        if timed is None:
            timed = ch.stream.fast["data-timed"] = any(
                st[1] == sx.DISPATCH and st[2].op in _DATA_TIMED for st in ch.steps)
        if timed:
            return False
    pre = [precheck(ch.stream, caps) for ch in m.chips]
    if any(p is None for p in pre):
        return False
    for ch, p in zip(m.chips, pre):
        ch.pre_bytes = p
    return True


def run(m: "Machine") -> bool:
    """Runs ``m`` (a fresh functional machine) decoupled: times from the compiled
    loop, then the data effects in start order. False when it does not apply
    (nothing of ``m`` was changed then; the Python loop runs)."""
    if not m.functional:
        return False
    if not eligible(m):
        for ch in m.chips:
            ch.pre_bytes = None
        _forget(m)
        return False
    for ch in m.chips:
        ch.prechecked = True
    order = fast_timing.run_ordered(m)
    if order is None:
        for ch in m.chips:
            ch.prechecked, ch.pre_bytes = False, None
        _forget(m)
        return False
    replay(m, order)
    m.decoupled = True
    return True


def _forget(m: "Machine") -> None:
    """The Python loop runs on these memories: their schedule (and its cached
    copies, which assume only the host writes what they copy) is dropped."""
    if m.chips and m.chips[0].mem is not None:
        m.chips[0].mem.replay = None


def replay(m: "Machine", order: np.ndarray) -> None:
    """The data effects of the dispatches ``order`` names (rows ``(chip, step)``), in
    order, from the prepared schedule (:mod:`nova.sim.replay_plan`)."""
    chips = m.chips
    s = schedule(m, order)
    s.start(m)
    counted = [ch.mem_bytes for ch in chips]
    # The traffic is the precheck's: semantics run as they are count into scratch.
    for ch in chips:
        ch.mem_bytes = dict.fromkeys(ch.mem_bytes, 0.0)
    k = 0
    try:
        # One errstate for the whole replay (the vector semantics ignore float
        # errors; matmuls and copies raise none).
        with np.errstate(all="ignore"):
            for k, (fn, args) in enumerate(zip(s.fns, s.args)):
                fn(*args)
    except ValueFault as e:
        ch, d = s.where[k]
        raise m._fault(ch, d, str(e)) from None
    finally:
        for ch, b in zip(chips, counted):
            ch.mem_bytes = b
