"""Timing-only runs on the compiled event loop (``nova.sim._fast_timing``,
ext/FastTiming.cpp).

A timing-only run computes no numbers, so all that is left is the event loop of
:class:`nova.sim.engines.Machine` — about 2.5 us of Python per event. The
compiled loop performs the same float operations in the same order (and breaks
ties the same way: events by (time, sequence number), flows re-rated in
insertion order), so simulated times, engine busy times, per-instruction
attribution and event counts are bit-identical to the Python loop's. The static
costs it needs (vector costs, matmul stream times, DMA ports and bursts) come
from the Python cost model itself, prepared once per program, chip and target.

It takes the runs it models exactly: every chip replaying a complete, prechecked
sequencer stream of matmuls, vector instructions, local ``dma_copy``,
``dma_gather`` / ``dma_scatter`` (priced as timing-only runs price them: one run
per index row) and nops. Anything else — collectives, send/recv, peer DMA, a
traced run, a fault, a budget or a deadlock — makes :func:`run` return False, and the Python
loop runs (and raises or reports) as it always did. ``NOVA_SIM_FAST=0`` turns
the compiled loop off (the tests compare the two).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nova.binary import opcodes as oc
from . import stream as sx

if TYPE_CHECKING:
    from .engines import Chip, Dec, Machine

try:
    from . import _fast_timing as _native
except ImportError:  # a source checkout without the built extension
    _native = None

#: Columns of a decoded-instruction row (ext/FastTiming.cpp: ``Dec``).
MAX_RESOURCES = 4
DEC_COLUMNS = 7 + 2 * MAX_RESOURCES
NOP_CLASS, MATMUL_CLASS, VECTOR_CLASS, DMA_CLASS = range(4)
_I64_MAX = (1 << 63) - 1


def available() -> bool:
    """Whether the compiled loop is built and not turned off (``NOVA_SIM_FAST=0``)."""
    from nova.knobs import knobs

    return _native is not None and knobs().sim_fast


class _Unsupported(Exception):
    """An instruction the compiled loop does not model."""


def run(m: "Machine") -> bool:
    """Runs ``m`` (a fresh timing-only machine) on the compiled loop and writes
    the results back into it; False when the Python loop must run instead
    (nothing of ``m`` was changed then)."""
    if m.functional:
        return False
    return _run(m, False) is not None


def run_ordered(m: "Machine") -> "np.ndarray | None":
    """A fresh functional machine's times on the compiled loop (written back into
    it as :func:`run` does, but not its memory traffic) and the order in which
    its instructions start, as rows ``(chip, stream step)``: the order the Python
    loop runs their data effects in (:mod:`nova.sim.decoupled` replays them).
    None when the compiled loop does not model the run (nothing was changed)."""
    if not m.functional:
        return None
    return _run(m, True)


def _run(m: "Machine", ordered: bool) -> "np.ndarray | bool | None":
    if not available() or m.trace is not None:
        return None
    chips = m.chips
    if not all(ch.steps is not None and (ch.prechecked or ordered) and ch.si == 0
               and ch.stream.final is not None and ch.steps and ch.steps[-1][1] == sx.HALT
               for ch in chips):
        return None
    prepared = [_prepared(m, ch) for ch in chips]
    if any(p is None for p in prepared):
        return None
    args, names, bandwidths = _numbered(m, prepared)
    # Chips with loops over layers: each step's layer (nova.sim.layers), for busy
    # time per (instruction, layer); an extension built before that declines.
    layered = [ch.layers is not None for ch in chips]
    if any(layered):
        if not all(ch.layers.steps.shape[0] == len(ch.steps) for ch in chips if ch.layers is not None):
            return None
        args = [a + (ch.layers.steps,) if ch.layers is not None else a for a, ch in zip(args, chips)]
    cost = m.cost
    config = (m.cycle, m._t_max, cost.nop, cost.weight_load, cost.fill_drain, m.queue_depth,
              min(m.budget.max_instructions, _I64_MAX), bool(cost.overlap))
    if ordered:
        try:
            result = _native.run(config, bandwidths, args, True)
        except TypeError:  # an extension built before it reported the start order
            return None
    else:
        try:
            result = _native.run(config, bandwidths, args)
        except TypeError:  # an extension built before it took step layers
            return None
    if result is None:
        return None
    if any(layered) and not all(len(c) == 11 for c, lay in zip(result[4], layered) if lay):
        return None  # an extension that ignores step layers
    _write_back(m, result[:5], names, prepared)
    if ordered:
        return np.frombuffer(result[5], dtype=np.int64).reshape(-1, 2)
    for ch, p in zip(chips, prepared):
        for k, v in p[4].items():
            ch.mem_bytes[k] += v
    return True


def _numbered(m: "Machine", prepared: list) -> tuple[list, list[str], np.ndarray]:
    """The chips' arguments of the compiled loop, with the rows' resource ids numbered
    across chips, the resource names and their bandwidths; cached on chip 0's
    stream for the same prepared streams and target (the loop only reads them)."""
    chips = m.chips
    cache = chips[0].stream.fast
    shape = tuple((len(ch.code), len(ch.queues)) for ch in chips)
    hit = cache.get("numbered")
    if hit is not None and hit[0] is m.target and hit[1] == shape and len(hit[2]) == len(prepared) \
            and all(a is b for a, b in zip(hit[2], prepared)):
        return hit[3]
    resources: dict[str, int] = {}
    args = []
    for ch, (steps, decs, masks, res_names, _) in zip(chips, prepared):
        decs = decs.copy()
        # The rows hold the program's resource ids; the run numbers them across chips.
        for j in range(MAX_RESOURCES):
            col = decs[:, 7 + j]
            used = col >= 0
            col[used] = [resources.setdefault(res_names[int(r)], len(resources)) for r in col[used]]
        args.append((steps, decs, masks, len(ch.code), len(ch.queues)))
    names = list(resources)
    bandwidths = np.array([m._bandwidth(r) for r in names], dtype=np.float64)
    out = (args, names, bandwidths)
    cache["numbered"] = (m.target, shape, tuple(prepared), out)
    return out


def _write_back(m: "Machine", result: tuple, names: list[str], prepared: list) -> None:
    now, events, busy, moved, chips = result
    m.now = m.pool.now = now
    m.events = events
    m.pool.busy = {names[r]: v for r, v in busy}
    m.pool.bytes = {names[r]: v for r, v in moved}
    for ch, p, out in zip(m.chips, prepared, chips):
        t, t_end, scalars, executed, queues, sems, sem_time, mx, pc_busy, pc_count = out[:10]
        ch.t, ch.t_end, ch.halted, ch.block = t, t_end, True, None
        ch.si, ch.at_step = len(ch.steps), False
        ch.scalar_count += scalars
        ch.executed += executed
        ch.sems, ch.sem_time = sems, sem_time
        if mx is not None:
            ch.mx_state = mx
        for q, (b, n) in zip(ch.queues, queues):
            q.busy += b
            q.count += n
        ch.pc_busy = np.frombuffer(pc_busy, dtype=np.float64).tolist()
        ch.pc_count = np.frombuffer(pc_count, dtype=np.int64).tolist()
        if len(out) > 10:  # busy ns per (decoded row, layer)
            rows = p[1][:, 2].astype(np.int64)
            per = np.frombuffer(out[10], dtype=np.float64).reshape(len(rows), -1)
            for r, k in zip(*np.nonzero(per)):
                ch.layer_busy[(int(rows[r]), int(k))] = float(per[r, k])


def _prepared(m: "Machine", ch: "Chip") -> tuple | None:
    """The chip's stream as arrays (cached on the stream per target and chip):
    steps ``[scalars before, kind, decoded row, back-edge]``, decoded rows, their
    semaphore masks, and the resource names the rows' ids stand for; None if the
    stream holds an instruction the compiled loop does not model."""
    cache = ch.stream.fast
    key = (ch.id, len(ch.queues))
    hit = cache.get(key)
    if hit is not None and hit[0] is m.target:
        return hit[1]
    functional, prechecked = m.functional, ch.prechecked
    # The vector costs are probed as a prechecked timing-only run computes them
    # (touching no memory), also for a functional machine.
    m.functional, ch.prechecked = False, True
    try:
        prepared = _arrays(m, ch)
    except _Unsupported:
        prepared = None
    finally:
        m.functional, ch.prechecked = functional, prechecked
    cache[key] = (m.target, prepared)
    return prepared


def _arrays(m: "Machine", ch: "Chip") -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], dict[str, float]]:
    # Column-wise (zip) and with numpy: a GPT-2 forward has ~10^5 steps per chip.
    scalars, kinds, decoded, _, _, _, _, backs = zip(*ch.steps)
    pcs = np.fromiter((d.pc for d in decoded), dtype=np.int64, count=len(decoded))
    unique, first = np.unique(pcs, return_index=True)
    row_of = np.empty(len(ch.code), dtype=np.int64)
    row_of[unique] = np.arange(len(unique))
    steps = np.stack([np.array(scalars, dtype=np.int64), np.array(kinds, dtype=np.int64), row_of[pcs],
                      np.array(backs, dtype=np.int64)], axis=1)
    names: dict[str, int] = {}
    decs, masks, indexed = [], [], []
    for j in first.tolist():
        st = ch.steps[j]
        d = st[2]
        decs.append(_row(m, ch, d, st, names))
        masks.append((_mask(d.waits), _mask(d.signals)))
        if d.op in (oc.DMA_GATHER, oc.DMA_SCATTER):
            indexed.append(d.pc)
    moved = _indexed_bytes(m, ch, pcs, indexed)
    return (np.ascontiguousarray(steps), np.array(decs, dtype=np.float64).reshape(-1, DEC_COLUMNS),
            np.array(masks, dtype=np.uint64).reshape(-1, 2), list(names), moved)


def _indexed_bytes(m: "Machine", ch: "Chip", pcs: np.ndarray, indexed: list[int]) -> dict[str, float]:
    """The bounds checks and byte counts of every indexed DMA of the stream, as the
    timing-only ``_x_dma_gather`` / ``_x_dma_scatter`` do them when they run (the
    stream's precheck leaves them out); unsupported if one is out of bounds (then
    the Python loop runs and faults where it would)."""
    moved = dict.fromkeys(("hbm_read", "hbm_write", "sram_read", "sram_write", "acc_read", "acc_write"), 0)
    if not indexed:
        return moved
    rw = (("hbm_read", "hbm_write"), ("sram_read", "sram_write"), ("acc_read", "acc_write"))
    cap = m.target.capacity
    for i in np.flatnonzero(np.isin(pcs, indexed)).tolist():
        st = ch.steps[i]
        d = st[2]
        for t, addr, write in ((d.ta, st[3], False), (d.tb, st[4], False), (d.td, st[6], True)):
            if addr < 0 or addr + t.extent > cap(t.space):
                raise _Unsupported
            moved[rw[t.space][int(write)]] += t.nbytes
        if d.op == oc.DMA_GATHER:
            moved[rw[d.ta.space][0]] += d.td.nbytes - d.ta.nbytes
        else:
            moved[rw[d.td.space][1]] += d.ta.nbytes - d.td.nbytes
            if d.ins.flags & oc.F_ACCUMULATE:
                moved[rw[d.td.space][0]] += d.ta.nbytes
    return moved


def _mask(sems: tuple[int, ...]) -> int:
    v = 0
    for s in sems:
        v |= 1 << s
    return v


def _row(m: "Machine", ch: "Chip", d: "Dec", st: tuple, names: dict[str, int]) -> list[float]:
    """One decoded instruction's static timing: queue, class, pc, cost (vector
    cost or matmul stream time), DMA setup, bytes and ports with their burst
    weights — from the Python cost model, so both loops price it alike."""
    row = [float(d.qkey), 0.0, float(d.pc), 0.0, 0.0, 0.0, 0.0] + [-1.0] * MAX_RESOURCES + [0.0] * MAX_RESOURCES
    if st[1] != sx.DISPATCH:
        return row
    op = d.op
    if op == oc.NOP:
        row[1] = NOP_CLASS
    elif op == oc.MATMUL:
        row[1] = MATMUL_CLASS
        row[3] = m.cost.matmul_stream(d.ta.shape[0], d.tb.shape[1], d.ta.dtype)
    elif op in oc.VECTOR_OPS:
        row[1] = VECTOR_CLASS
        # The timing-only semantics return the cost and touch nothing (prechecked).
        row[3] = m._exec[op](ch.queues[d.qkey], _Probe(d))
    elif op in (oc.DMA_COPY, oc.DMA_GATHER, oc.DMA_SCATTER) and not d.ins.flags & oc.F_PEER:
        row[1] = DMA_CLASS
        if op == oc.DMA_COPY:
            res, w = m._dma_ends(ch.id, d.ta, ch.id, d.td)
            setup, nbytes = m.cost.dma_setup, d.ta.nbytes
        else:  # as _indexed_flow prices it, with the timing-only run count
            res, w = m._dma_ends(ch.id, d.ta, ch.id, d.td, strided=False)
            setup = m.cost.dma_setup + m._unknown_runs(d.tb) * m.cost.dma_run_setup
            nbytes = d.td.nbytes if op == oc.DMA_GATHER else \
                d.ta.nbytes * (2 if d.ins.flags & oc.F_ACCUMULATE else 1)
        if len(res) > MAX_RESOURCES:
            raise _Unsupported
        row[4], row[5], row[6] = setup, float(nbytes), float(len(res))
        for j, (r, x) in enumerate(zip(res, w)):
            row[7 + j] = names.setdefault(r, len(names))
            row[7 + MAX_RESOURCES + j] = x
    else:
        raise _Unsupported
    return row


class _Probe:
    """A stand-in dispatched instruction for reading a vector instruction's cost."""

    __slots__ = ("d", "ra", "rb", "rc", "rdst", "t")

    def __init__(self, d: "Dec") -> None:
        self.d, self.ra, self.rb, self.rc, self.rdst, self.t = d, 0, 0, 0, 0, 0.0
