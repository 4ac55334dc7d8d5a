"""DMA-engine instructions (docs/isa.md 2.2, 2.6): ``dma_copy`` and the indexed DMAs
``dma_gather`` / ``dma_scatter``.

:class:`DmaUnit` is mixed into :class:`nova.sim.engines.Machine`. A DMA waits its setup
time (``timing.dma_setup_cycles``, plus the link latency to a peer, plus
``timing.dma_run_setup_cycles`` per run of an indexed DMA) and then moves its bytes as a
flow of the shared-bandwidth pool over the source memory's port (read), the links to a
peer and the destination memory's port (write), so DMAs on different queues, peer DMAs
and collectives share memory and link bandwidth while they overlap. A strided tile's
contiguous runs are rounded up to whole bursts at its memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nova.binary import opcodes as oc
from .memory import decode_values, encode_values

if TYPE_CHECKING:
    from .machine import Chip, Dec, Op, Queue
    from .memory import TileAccess

_RW = (("hbm_read", "hbm_write"), ("sram_read", "sram_write"), ("acc_read", "acc_write"))


def count_runs(p: np.ndarray) -> int:
    """Maximal runs of row-major consecutive elements whose positions are consecutive."""
    return 1 + int(np.count_nonzero(np.diff(p) != 1)) if p.size else 0


def _inner_axis(strides: tuple[int, ...], shape: tuple[int, ...]) -> int:
    """The axis with the smallest nonzero stride among those longer than 1 (-1: none)."""
    best, axis = 0, -1
    for k, (n, s) in enumerate(zip(shape, strides)):
        if n > 1 and s and (axis < 0 or abs(s) < best):
            best, axis = abs(s), k
    return axis


def transpose_axis(src: "TileAccess", dst: "TileAccess") -> int:
    """For a copy whose two sides' contiguous axes differ (a weight strip loaded k-major),
    the destination's contiguous axis, along which :func:`copy_tile` chunks; else -1."""
    if src.shape != dst.shape:
        return -1
    p, q = _inner_axis(dst.bstrides, dst.shape), _inner_axis(src.bstrides, src.shape)
    return p if p >= 0 and q >= 0 and p != q and src.shape[q] >= 64 else -1


def copy_tile(dst: np.ndarray, src: np.ndarray, axis: int) -> None:
    """``dst[...] = src``. A transposing copy (``axis`` from :func:`transpose_axis`) goes
    in chunks of 64 bytes (a cache line) along ``axis``: each chunk then reads whole
    cache lines of the source, where numpy alone walks the source a line per element
    (on GPT-2's weight strips: 1.1x on an idle machine, 2-3x when other processes
    share the cache). Overlapping views are copied whole (numpy copies them through a
    temporary)."""
    if axis < 0 or np.may_share_memory(dst, src):
        dst[...] = src
        return
    step = max(1, 64 // dst.itemsize)
    index: list = [slice(None)] * dst.ndim
    for i in range(0, dst.shape[axis], step):
        index[axis] = slice(i, i + step)
        sl = tuple(index)
        dst[sl] = src[sl]


class DmaUnit:
    """The DMA engines' instruction semantics (a mixin of ``Machine``)."""

    def _x_dma(self, q: "Queue", o: "Op") -> None:
        d, ch = o.d, q.chip
        ta, td = d.ta, d.td
        peer = self._peer(ch, d, o.rc) if d.ins.flags & oc.F_PEER else ch.id
        dst = self.chips[peer]
        what = d.label
        if self.functional:
            ch.mem_bytes[_RW[ta.space][0]] += ta.nbytes
            dst.mem_bytes[_RW[td.space][1]] += td.nbytes
            copy_tile(dst.mem.view(td, o.rdst, what), ch.mem.view(ta, o.ra, what), d.perm_axis)
        elif not (ch.prechecked and not d.ins.flags & oc.F_PEER):
            self._check(ch, ta, o.ra, d, False)
            self._check(dst, td, o.rdst, d, True)
        # The ports, bursts and route of this copy are static: cached on the decoded
        # instruction per target and (chip, peer) (SPMD chips share decoded code).
        c = d.vcost
        if c is None or c[0] is not self.target:
            c = d.vcost = (self.target, {})
        ends = c[1].get((ch.id, peer))
        if ends is None:
            setup = self.cost.dma_setup
            res, w = self._dma_ends(ch.id, ta, peer, td)
            if peer != ch.id:
                route = self.net.route(ch.id, peer)
                res, w, setup = res + route.links, w + (1.0,) * len(route.links), setup + route.latency_ns
            ends = c[1][(ch.id, peer)] = (setup, res, w)
        setup, res, w = ends
        self.schedule(self.now + setup, self._dma_flow, (q, ta.nbytes, res, w))
        return None

    def _dma_ends(self, src: int, ta: "TileAccess", dst: int, td: "TileAccess",
                  strided: bool = True) -> tuple[tuple[str, ...], tuple[float, ...]]:
        """The memory ports a copy uses, with the bytes each moves per payload byte: the
        read at the source and the write at the destination (both on one port when they
        are the same memory), each run rounded up to whole bursts (docs/isa.md 2.2)."""
        ports: dict[str, float] = {}
        for chip, t in ((src, ta), (dst, td)):
            port = f"c{chip}.{'sram' if t.space == oc.SRAM else 'hbm'}"
            f = self._burst(t) if strided else 1.0
            ports[port] = ports.get(port, 0.0) + f
        return tuple(ports), tuple(ports.values())

    def _burst(self, t: "TileAccess") -> float:
        key = (t.space, t.shape, t.desc.strides, t.desc.elt_bytes)
        cache = self.__dict__.setdefault("_burst_cache", {})
        f = cache.get(key)
        if f is None:
            f = cache[key] = self.cost.burst_factor(*key)
        return f

    def _dma_flow(self, arg: tuple["Queue", int, tuple[str, ...], tuple[float, ...]]) -> None:
        q, nbytes, res, w = arg
        self.pool.start(self.now, nbytes, res, lambda: self._complete(q), w)

    # Indexed DMA ------------------------------------------------------------------------
    def _positions(self, ch: "Chip", d: "Dec", o: "Op", table: "TileAccess", what: str) -> np.ndarray:
        """The index tile's positions (row-major over the moved tile), bounds-checked
        against the elements of ``table`` (the gather source / scatter destination)."""
        p = self._read(ch, d.tb, o.rb, d).astype(np.int64).reshape(-1)
        bad = (p < 0) | (p >= table.size)
        if bad.any():
            e = int(np.argmax(bad))
            at = [int(i) for i in np.unravel_index(e, d.tb.shape)]
            raise self._fault(ch, d, f"index {int(p[e])} at position {at} is outside [0, {table.size}) "
                                     f"(the {table.size} elements of the {what} tile)")
        return p

    @staticmethod
    def _offsets(t: "TileAccess", p: np.ndarray) -> np.ndarray:
        """Element offsets (through the descriptor's strides) of row-major positions ``p``."""
        coords = np.unravel_index(p, t.shape)
        off = np.zeros(p.shape, np.int64)
        for c, s in zip(coords, t.desc.strides):
            off += c * s
        return off

    def _indexed_flow(self, q: "Queue", o: "Op", runs: int, nbytes: int) -> None:
        d, ch = o.d, q.chip
        # Runs are priced by dma_run_setup_cycles each; the moved bytes by the ports' bandwidth.
        setup = self.cost.dma_setup + runs * self.cost.dma_run_setup
        res, w = self._dma_ends(ch.id, d.ta, ch.id, d.td, strided=False)
        self.schedule(self.now + setup, self._dma_flow, (q, nbytes, res, w))

    def _unknown_runs(self, t: "TileAccess") -> int:
        """Timing-only runs have no index values: assume whole rows (the last dimension)
        are contiguous, the common case of an embedding lookup."""
        return t.size // t.shape[-1]

    def _x_dma_gather(self, q: "Queue", o: "Op") -> None:
        d, ch = o.d, q.chip
        ta, tb, td = d.ta, d.tb, d.td  # source table, indices, destination
        if self.functional:
            p = self._positions(ch, d, o, ta, "source")
            values = ch.mem.flat(ta, o.ra, d.label)[self._offsets(ta, p)]
            ch.mem.write_raw(td, o.rdst, values.reshape(td.shape), d.label)
            ch.mem_bytes[_RW[ta.space][0]] += td.nbytes
            ch.mem_bytes[_RW[td.space][1]] += td.nbytes
            runs = count_runs(p)
        else:
            for t, a, w in ((ta, o.ra, False), (tb, o.rb, False), (td, o.rdst, True)):
                self._check(ch, t, a, d, w)
            # Count the bytes as the functional run does: the gathered ones, not the table.
            ch.mem_bytes[_RW[ta.space][0]] += td.nbytes - ta.nbytes
            runs = self._unknown_runs(tb)
        self._indexed_flow(q, o, runs, td.nbytes)
        return None

    def _x_dma_scatter(self, q: "Queue", o: "Op") -> None:
        d, ch = o.d, q.chip
        ta, tb, td = d.ta, d.tb, d.td  # source, indices, destination table
        accumulate = bool(d.ins.flags & oc.F_ACCUMULATE)
        if self.functional:
            p = self._positions(ch, d, o, td, "destination")
            src = ch.mem.read_raw(ta, o.ra, d.label).reshape(-1)
            dst = ch.mem.flat(td, o.rdst, d.label)
            if accumulate:
                # DST.flat[p] += SRC[e] in row-major order of e (np.add.at), in the
                # compute type, rounded to the destination's type once per position.
                pos, inverse = np.unique(p, return_inverse=True)
                off = self._offsets(td, pos)
                acc = np.array(decode_values(td.dtype, dst[off]), copy=True)
                np.add.at(acc, inverse.reshape(-1), decode_values(ta.dtype, src))
                dst[off] = encode_values(td.dtype, acc)
                ch.mem_bytes[_RW[td.space][0]] += ta.nbytes
            else:
                # A later e wins: keep the last occurrence of every position.
                pos, first = np.unique(p[::-1], return_index=True)
                dst[self._offsets(td, pos)] = src[p.size - 1 - first]
            ch.mem_bytes[_RW[ta.space][0]] += ta.nbytes
            ch.mem_bytes[_RW[td.space][1]] += ta.nbytes
            runs = count_runs(p)
        else:
            for t, a, w in ((ta, o.ra, False), (tb, o.rb, False), (td, o.rdst, True)):
                self._check(ch, t, a, d, w)
            # Count the bytes as the functional run does: the scattered ones, not the table.
            ch.mem_bytes[_RW[td.space][1]] += ta.nbytes - td.nbytes
            if accumulate:
                ch.mem_bytes[_RW[td.space][0]] += ta.nbytes
            runs = self._unknown_runs(tb)
        self._indexed_flow(q, o, runs, ta.nbytes * (2 if accumulate else 1))
        return None
