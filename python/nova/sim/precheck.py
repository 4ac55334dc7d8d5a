"""Timing-only runs check the memory bounds of a stream's instructions once, before
running (:func:`precheck`), instead of at every instruction as it runs."""

from __future__ import annotations

from nova.binary import opcodes as oc
from .stream import CUT, DISPATCH, Stream

#: Tiles each prechecked opcode reads (by slot and its address operand) and writes, in
#: timing-only mode (as the ``_x_*`` methods check and count them); vfused's b and c
#: only when they hold a tile (else an immediate).
_SLOTS: dict[int, tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]] = {
    oc.MATMUL: ((("ta", 3), ("tb", 4)), (("td", 6),)),
    oc.DMA_COPY: ((("ta", 3),), (("td", 6),)),
    oc.VUNARY: ((("ta", 3),), (("td", 6),)), oc.VBINARY: ((("ta", 3), ("tb", 4)), (("td", 6),)),
    oc.VSCALAR: ((("ta", 3),), (("td", 6),)), oc.VSELECT: ((("ta", 3), ("tb", 4), ("tc", 5)), (("td", 6),)),
    oc.VREDUCE: ((("ta", 3),), (("td", 6),)), oc.VTRANSPOSE: ((("ta", 3),), (("td", 6),)),
    oc.VFILL: ((), (("td", 6),)), oc.VCOPY: ((("ta", 3),), (("td", 6),)), oc.VIOTA: ((), (("td", 6),)),
    oc.VASSERT: ((("ta", 3),), ()), oc.VSCAN: ((("ta", 3),), (("td", 6),)),
    oc.VSORT: ((("ta", 3),), (("td", 6), ("tc", 5))),
    oc.VFUSED: ((("ta", 3), ("tb", 4), ("tc", 5)), (("td", 6),)),
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
                if t is None:  # an immediate operand
                    continue
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
