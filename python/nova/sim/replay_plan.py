"""The data effects of a decoupled functional run (:mod:`nova.sim.decoupled`),
prepared once: a schedule of (function, prebuilt views) in start order.

The start order and every operand address are the same on every run of a
program (they depend on neither data nor time), and a resident simulator's
memories keep their buffers, so the schedule is built on the first decoupled
run and replayed by later ones without resolving a single address. It is kept
on chip 0's memory and rebuilt when the streams, the order or any memory
buffer changed. Each effect does what the instruction's semantics in
``Machine`` do to memory, with the same numpy operations on the same views
or, for f32 ufuncs, the same operation computed into the destination (so
results are bit-identical); instructions without a prebuilt form (other dtypes,
sorts, asserts, scans, ...) call those semantics themselves. K loops of matmuls
are fused by :mod:`nova.sim.replay_fuse` unless ``NOVA_SIM_FUSE=0``.

Transposing DMA copies from HBM bytes that no instruction of the run writes
(weights: k-major weight strips, ~3.5 GB/s in numpy) keep, from a schedule's
second run on, a contiguous copy of what they wrote; later runs copy that
(~4x faster on GPT-2 small: memory bandwidth) for as long as the host has not written over the source
(``Memory.written``: every host write is checked at the start of a run; host
writes go through ``Memory.write_bytes``). At most :data:`CACHE_BYTES` (and an
eighth of the host memory limit) of them are kept per schedule.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from nova.binary import opcodes as oc
from .engines_dma import copy_tile
from .memory import decode_values, encode_values, host_memory_limit
from .numerics import BINARY, UNARY, erf_into, reduce_axis, scalar_of

if TYPE_CHECKING:
    from .engines import Chip, Dec, Machine
    from .memory import TileAccess


class _Op:
    """A dispatched instruction as the instruction semantics read it."""

    __slots__ = ("d", "ra", "rb", "rc", "rdst", "t", "start")

    def __init__(self, d: "Dec", ra: int, rb: int, rc: int, rdst: int) -> None:
        self.d, self.ra, self.rb, self.rc, self.rdst = d, ra, rb, rc, rdst
        self.t = self.start = 0.0


#: Binary kinds that compare (bool results: assigned, not computed into f32).
_COMPARISONS = frozenset(range(39, 45))

#: The unary kind erf (GELU's), computed into the destination (numerics.erf_into).
_ERF = 9

#: Bytes of cached transposed copies a schedule keeps at most.
CACHE_BYTES = 1 << 30


class _Cached:
    """A transposing copy's result, kept for as long as its source is unchanged:
    the source's chip and HBM byte range, the copy (None: not yet made), and
    whether to make it (from the schedule's second run on)."""

    __slots__ = ("chip", "lo", "hi", "value", "enabled")

    def __init__(self, chip: int, lo: int, hi: int) -> None:
        self.chip, self.lo, self.hi = chip, lo, hi
        self.value: np.ndarray | None = None
        self.enabled = False


class Schedule:
    """Effects in start order: ``fns[k](*args[k])``; ``where[k]`` = (chip, Dec)."""

    __slots__ = ("streams", "order", "buffers", "fuse", "fns", "args", "where", "cached", "runs")

    def __init__(self, streams: tuple, order: np.ndarray, buffers: tuple, fuse: bool) -> None:
        self.streams, self.order, self.buffers, self.fuse = streams, order, buffers, fuse
        self.fns: list[Callable[..., Any]] = []
        self.args: list[tuple] = []
        self.where: list[tuple["Chip", "Dec"]] = []
        self.cached: list[_Cached] = []
        self.runs = 0

    def start(self, m: "Machine") -> None:
        """Before a replay: drops the cached copies whose source the host wrote over
        and, from the second run on, lets the others be made."""
        for ch in m.chips:
            hbm = ch.mem.spaces[oc.HBM]
            if hbm.written:
                for e in self.cached:
                    if e.chip == ch.id and any(lo < e.hi and e.lo < hi for lo, hi in hbm.written):
                        e.value = None
                hbm.written.clear()
        self.runs += 1
        if self.runs == 2:
            for e in self.cached:
                e.enabled = True


def _buffers(m: "Machine") -> tuple:
    return tuple(b for ch in m.chips for space in ch.mem.spaces for b in space.bufs)


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def schedule(m: "Machine", order: np.ndarray) -> Schedule:
    """The schedule of ``m``'s run in ``order`` (rows (chip, step)), cached."""
    from nova.knobs import knobs

    fuse = knobs().sim_fuse
    mem0 = m.chips[0].mem
    streams = tuple(ch.stream for ch in m.chips)
    s = mem0.replay
    if s is not None and s.fuse == fuse and _same(s.streams, streams) and _same(s.buffers, _buffers(m)) \
            and np.array_equal(s.order, order):
        return s
    mem0.replay = None
    for ch in m.chips:
        ch.mem.spaces[oc.HBM].written.clear()
    rows = order.tolist()
    # Every access's buffer first (an allocation may merge buffers), then the views.
    for c, i in rows:
        ch = m.chips[c]
        st = ch.steps[i]
        d = st[2]
        for t, addr in _tiles(d, st):
            ch.mem.spaces[t.space].ensure(addr, t.extent, d.label)
    s = Schedule(streams, order.copy(), _buffers(m), fuse)
    written = _hbm_writes(m, rows)
    keys: dict[tuple, _Cached] = {}
    budget = [min(CACHE_BYTES, host_memory_limit() // 8)]  # beside the memories themselves

    def cached(ch: "Chip", d: "Dec", addr: int) -> _Cached | None:
        """The cache entry of a transposing copy from constant HBM bytes, or None."""
        ta = d.ta
        lo, hi = addr, addr + ta.extent
        if ta.space != oc.HBM or any(a < hi and lo < b for a, b in written[ch.id]):
            return None
        key = (ch.id, addr, ta.desc, d.td.desc)
        e = keys.get(key)
        if e is None:
            if budget[0] < d.td.nbytes:
                return None
            budget[0] -= d.td.nbytes
            e = keys[key] = _Cached(ch.id, lo, hi)
            s.cached.append(e)
        return e

    for c, i in rows:
        ch = m.chips[c]
        st = ch.steps[i]
        d = st[2]
        fn, args = _effect(m, ch, d, st, cached)
        if fn is None:
            continue
        s.fns.append(fn)
        s.args.append(args)
        s.where.append((ch, d))
    if fuse:
        from .replay_fuse import fuse_k_chains  # it reads this module's effects

        fuse_k_chains(s)
    _direct_matmuls(s)
    mem0.replay = s
    return s


def _tiles(d: "Dec", st: tuple) -> list[tuple["TileAccess", int]]:
    """The tiles an instruction accesses, with their addresses (registers of the step)."""
    out = []
    for t, reg in ((d.ta, 3), (d.tb, 4), (d.tc, 5), (d.td, 6)):
        if t is not None:
            out.append((t, st[reg]))
    return out


# Effects ---------------------------------------------------------------------------

def _matmul_acc(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> None:
    acc += a @ b


def _matmul_set(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> None:
    acc[...] = a @ b


def _direct_matmuls(s: Schedule) -> None:
    """Matmuls that set a 2-D accumulator of their result's shape write into it
    (``np.matmul(a, b, out=acc)``: the same BLAS call, without the temporary and
    its copy; numpy computes via a temporary itself if the operands overlap)."""
    fns, args = s.fns, s.args
    for k, f in enumerate(fns):
        if f is _matmul_set:
            a, b, acc = args[k]
            if a.ndim == 2 and b.ndim == 2 and acc.shape == (a.shape[0], b.shape[1]) and \
                    a.dtype == b.dtype == acc.dtype == np.float32:
                fns[k] = np.matmul
                args[k] = (a, b, acc)


def _unary(fn: Callable, x: np.ndarray, dst: np.ndarray) -> None:
    dst[...] = fn(x)


def _binary(fn: Callable, x: np.ndarray, y: Any, dst: np.ndarray) -> None:
    dst[...] = fn(x, y)


def _ufunc1(fn: np.ufunc, x: np.ndarray, dst: np.ndarray) -> None:
    fn(x, out=dst)


def _ufunc2(fn: np.ufunc, x: np.ndarray, y: Any, dst: np.ndarray) -> None:
    fn(x, y, out=dst)


def _fused_f32(f0: np.ufunc, f1: np.ufunc, x: np.ndarray, a: Any, b: Any, dst: np.ndarray) -> None:
    """VFUSED on f32 tiles: the intermediate needs no rounding; the second stage
    computes into the destination."""
    f1(f0(x, a), b, out=dst)


def _select(ctype: int, c: np.ndarray, x: np.ndarray, z: np.ndarray, dst: np.ndarray) -> None:
    dst[...] = np.where(decode_values(ctype, c) != 0, x, z)


def _binary_encoded(fn: Callable, x: np.ndarray, y: Any, dst: np.ndarray, dtype: int) -> None:
    dst[...] = encode_values(dtype, fn(x, y))


def _transpose(x: np.ndarray, perm: tuple[int, ...], dst: np.ndarray) -> None:
    dst[...] = x.transpose(perm)


def _hbm_writes(m: "Machine", rows: list) -> list[list[tuple[int, int]]]:
    """Per chip, the HBM byte ranges the run's instructions write (merged)."""
    spans: list[list[tuple[int, int]]] = [[] for _ in m.chips]
    for c, i in rows:
        st = m.chips[c].steps[i]
        d = st[2]
        for t, reg in ((d.tc, 5), (d.td, 6)):  # the written slots (vsort writes c too)
            if t is not None and t.space == oc.HBM and (reg == 6 or d.op == oc.VSORT):
                spans[c].append((st[reg], st[reg] + t.extent))
    out = []
    for chip in spans:
        merged: list[list[int]] = []
        for lo, hi in sorted(chip):
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        out.append([(lo, hi) for lo, hi in merged])
    return out


def _copy_cached(e: _Cached, dst: np.ndarray, src: np.ndarray, axis: int) -> None:
    """A transposing copy, from its cached result when there is one."""
    if e.value is not None:
        dst[...] = e.value
        return
    copy_tile(dst, src, axis)
    if e.enabled:
        e.value = dst.copy()


def _effect(m: "Machine", ch: "Chip", d: "Dec", st: tuple,
            cached: Callable[["Chip", "Dec", int], _Cached | None]) -> tuple[Callable | None, tuple]:
    op = d.op
    if op == oc.NOP:
        return None, ()
    mem = ch.mem
    ra, rb, rc, rdst = st[3], st[4], st[5], st[6]
    if op == oc.DMA_COPY:  # local (peer DMA never runs decoupled)
        dst, src = mem.view(d.td, rdst), mem.view(d.ta, ra)
        if d.perm_axis >= 0 and not np.may_share_memory(dst, src):
            e = cached(ch, d, ra)
            if e is not None:
                return _copy_cached, (e, dst, src, d.perm_axis)
            return copy_tile, (dst, src, d.perm_axis)
        return dst.__setitem__, (Ellipsis, src)  # copy_tile's whole-tile case
    f32 = all(t is None or t.dtype == oc.F32 for t in (d.ta, d.tb, d.tc, d.td))
    if op == oc.MATMUL and f32:
        fn = _matmul_acc if d.ins.flags & oc.F_ACCUMULATE else _matmul_set
        return fn, (mem.view(d.ta, ra), mem.view(d.tb, rb), mem.view(d.td, rdst))
    if f32 and op == oc.VFUSED:
        a, b = (mem.view(t, r) if t is not None else imm
                for t, r, imm in ((d.tb, rb, d.imms[0]), (d.tc, rc, d.imms[1])))
        return _fused_f32, (BINARY[d.ins.kind], BINARY[d.ins.imm2], mem.view(d.ta, ra), a, b,
                            mem.view(d.td, rdst))
    if f32 and op in (oc.VUNARY, oc.VBINARY, oc.VSCALAR, oc.VFILL, oc.VCOPY, oc.VTRANSPOSE):
        # As the vector semantics compute them for f32 tiles (reads are views,
        # writes assign the result; conversions f32 -> f32 are the identity).
        kind, dst = d.ins.kind, mem.view(d.td, rdst)
        # f32 -> f32 ufuncs write into the destination (out=: numpy computes as
        # if into a temporary when operands overlap; the same values, one copy less).
        if op == oc.VCOPY or op == oc.VUNARY and kind == 0:
            return dst.__setitem__, (Ellipsis, mem.view(d.ta, ra))
        if op == oc.VUNARY:
            x = mem.view(d.ta, ra)
            if kind == _ERF and x.shape == dst.shape:
                return erf_into, (x, dst)
            f = UNARY[kind]
            return (_ufunc1 if isinstance(f, np.ufunc) else _unary), (f, mem.view(d.ta, ra), dst)
        if op in (oc.VBINARY, oc.VSCALAR):
            f = BINARY[kind]
            y = mem.view(d.tb, rb) if op == oc.VBINARY else \
                d.scalar if d.scalar is not None else scalar_of(rb, oc.F32, True)
            ufunc = isinstance(f, np.ufunc) and kind not in _COMPARISONS
            return (_ufunc2 if ufunc else _binary), (f, mem.view(d.ta, ra), y, dst)
        if op == oc.VFILL:
            return dst.__setitem__, (Ellipsis, d.scalar if d.scalar is not None else scalar_of(ra, oc.F32, True))
        return _transpose, (mem.view(d.ta, ra), d.perm, dst)
    if op == oc.MATMUL:
        return _matmul_any, (ch, d, ra, rb, rdst)
    td = d.td
    if op == oc.VSELECT and all(t.dtype == oc.F32 for t in (d.tb, d.tc, td)):
        return _select, (d.ta.dtype, mem.view(d.ta, ra), mem.view(d.tb, rb), mem.view(d.tc, rc), mem.view(td, rdst))
    if op == oc.VREDUCE and d.ta.dtype == oc.F32 and td.dtype == oc.F32:
        return _unary, (partial(reduce_axis, kind=d.ins.kind, axis=d.ins.imm0), mem.view(d.ta, ra), mem.view(td, rdst))
    if op == oc.VSCALAR and d.ta.dtype == oc.F32 and td.dtype != oc.BF16:
        # A comparison into an i1 (or integer) tile: written as Memory.write encodes it.
        s = d.scalar if d.scalar is not None else scalar_of(rb, oc.F32, True)
        return _binary_encoded, (BINARY[d.ins.kind], mem.view(d.ta, ra), s, mem.view(td, rdst), td.dtype)
    # Everything else runs the machine's own semantics (they only touch memory).
    return m._exec[op], (ch.queues[d.qkey], _Op(d, ra, rb, rc, rdst))


def _matmul_any(ch: "Chip", d: "Dec", ra: int, rb: int, rdst: int) -> None:
    """``Machine._x_matmul``'s data effect, for any dtypes."""
    mem, what = ch.mem, d.label
    td = d.td
    c = mem.read(d.ta, ra, what) @ mem.read(d.tb, rb, what)
    if td.dtype == oc.F32:
        acc = mem.view(td, rdst, what)
        if d.ins.flags & oc.F_ACCUMULATE:
            acc += c
        else:
            acc[...] = c
    else:
        if d.ins.flags & oc.F_ACCUMULATE:
            c += mem.read(td, rdst, what)
        mem.write(td, rdst, c, what)
