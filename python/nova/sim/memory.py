"""Per-chip memories (HBM, SRAM, accumulator) as lazily grown numpy byte buffers.

A memory space holds a few buffers over the address ranges actually touched,
never beyond the target's capacity: an access past it is a
:class:`MemoryFaultError`. Tiles are read and written as strided numpy views on a
buffer (no per-element Python loops).

Host memory: the memories of a run live in this process, so before a functional
run :func:`check_host_memory` estimates what it will allocate (every chip's
buffers plus the copies of the outputs) and refuses, with a
:class:`HostMemoryError`, a run beyond the host limit (:func:`host_memory_limit`:
the knob ``NOVA_SIM_HOST_MEMORY``, default half the machine's physical memory);
a buffer that would grow past the limit during the run is refused the same way.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING, Sequence

import numpy as np

from nova.binary import opcodes as oc
from .errors import HostMemoryError, MemoryFaultError
from .numerics import bf16_bits_to_f32, f32_to_bf16_bits
from .program import TileDesc

if TYPE_CHECKING:
    from .program import Program

#: Storage type of each tile dtype (bf16 as its raw bits, i1 as one byte 0 / 1).
_STORAGE = (np.dtype("<f4"), np.dtype("<u2"), np.dtype("<f2"), np.dtype("<i8"), np.dtype("<i4"),
            np.dtype("i1"), np.dtype("u1"))


def decode_values(dtype: int, raw: np.ndarray) -> np.ndarray:
    """Storage (as :attr:`TileAccess.storage`) to compute values; f32 and integer
    storage is returned as is."""
    if dtype == oc.F32 or dtype in oc.INT_DTYPES:
        return raw
    if dtype == oc.BF16:
        return bf16_bits_to_f32(raw)
    if dtype == oc.I1:
        return raw != 0
    return raw.astype(np.float32)


def encode_values(dtype: int, values: np.ndarray) -> np.ndarray:
    """Compute values to storage: rounds float32 to bf16 / f16, wraps integers."""
    if dtype == oc.BF16:
        return f32_to_bf16_bits(np.asarray(values, dtype=np.float32))
    if dtype == oc.I1:
        return (np.asarray(values) != 0).astype(np.uint8)
    if dtype in oc.INT_DTYPES:
        return np.asarray(values).astype(_STORAGE[dtype], copy=False)
    return values


class TileAccess:
    """A descriptor prepared for fast access: numpy shape, byte strides, extent."""

    __slots__ = ("desc", "space", "dtype", "shape", "bstrides", "extent", "nbytes", "storage", "size")

    def __init__(self, desc: TileDesc) -> None:
        self.desc = desc
        self.space = desc.space
        self.dtype = desc.dtype
        self.shape = desc.shape
        eb = desc.elt_bytes
        self.bstrides = tuple(s * eb for s in desc.strides)
        self.extent = desc.extent
        self.nbytes = desc.nbytes
        self.size = desc.nbytes // eb
        self.storage = _STORAGE[desc.dtype]


#: Two reserved ranges closer than this share one buffer (fewer, larger chunks).
_MERGE_GAP = 1 << 20


class Memory:
    """One memory space of one chip, allocated sparsely: a few numpy byte buffers
    ("chunks", sorted and disjoint) over the address ranges actually touched, so
    that a far but legal address costs a small chunk of its own, not a buffer from
    address 0. A tile's bytes always lie inside one chunk (chunks merge when an
    access spans several)."""

    __slots__ = ("name", "capacity", "chip", "bases", "bufs", "limit", "written")

    def __init__(self, name: str, capacity: int, chip: int, initial: int = 0,
                 limit: int | None = None) -> None:
        self.name = name
        self.capacity = capacity
        self.chip = chip
        self.bases: list[int] = []
        self.bufs: list[np.ndarray] = []
        self.limit = limit if limit is not None else host_memory_limit()
        # Byte ranges the host wrote (write_bytes) since nova.sim.replay_plan last
        # looked: its cached copies of constant data are checked against them.
        self.written: list[tuple[int, int]] = []
        if initial:
            self.ensure(0, initial)

    def ensure(self, addr: int, nbytes: int, what: str = "") -> tuple[np.ndarray, int]:
        """The chunk holding bytes [addr, addr + nbytes) and the offset of ``addr``
        in it, allocating or merging chunks as needed."""
        end = addr + nbytes
        if addr < 0 or end > self.capacity:
            raise MemoryFaultError(
                f"chip {self.chip}: {what + ': ' if what else ''}access to {self.name} bytes "
                f"[{addr}, {end}) is outside its capacity of {self.capacity} bytes")
        k = bisect_right(self.bases, addr) - 1
        if k >= 0:
            base, buf = self.bases[k], self.bufs[k]
            if end <= base + buf.size:
                return buf, addr - base
        return self._grow(addr, end, what)

    def _grow(self, addr: int, end: int, what: str) -> tuple[np.ndarray, int]:
        # Chunks the new range touches (or nearly touches) are merged into one,
        # grown by doubling like a vector so that a growing region copies O(1) per byte.
        lo, hi = addr, end
        first = bisect_right(self.bases, addr - _MERGE_GAP) - 1
        first = max(first, 0)
        merged = []
        for k in range(first, len(self.bases)):
            base, size = self.bases[k], self.bufs[k].size
            if base > hi + _MERGE_GAP:
                break
            if base + size + _MERGE_GAP >= lo:
                merged.append(k)
                lo, hi = min(lo, base), max(hi, base + size)
        if merged:
            old = sum(self.bufs[k].size for k in merged)
            hi = max(hi, min(lo + 2 * old, self.capacity))
        nxt = merged[-1] + 1 if merged else bisect_right(self.bases, addr)
        if nxt < len(self.bases):
            hi = min(hi, self.bases[nxt])  # never overlap the next chunk
        hi = max(hi, end, min(lo + 4096, self.capacity if nxt >= len(self.bases)
                              else self.bases[nxt]))
        total = self.allocated - sum(self.bufs[k].size for k in merged) + (hi - lo)
        if total > self.limit:
            raise HostMemoryError(
                f"chip {self.chip}: {what + ': ' if what else ''}simulating {self.name} bytes "
                f"[{addr}, {end}) needs {total} bytes of host memory for this memory space, "
                f"beyond the host limit of {self.limit} bytes; {LIMIT_HINT}")
        buf = np.zeros(hi - lo, dtype=np.uint8)
        for k in merged:
            base, old_buf = self.bases[k], self.bufs[k]
            buf[base - lo: base - lo + old_buf.size] = old_buf
        for k in reversed(merged):
            del self.bases[k], self.bufs[k]
        at = bisect_right(self.bases, lo)
        self.bases.insert(at, lo)
        self.bufs.insert(at, buf)
        return buf, addr - lo

    def reserve(self, ranges: Sequence[tuple[int, int]], slack_to: int | None = None) -> None:
        """Allocates chunks for ``ranges`` (address, bytes) up front (the program's
        inputs, outputs and constants), each cluster of nearby ranges with as much
        room again after it for intermediates, but not beyond ``slack_to`` (the
        highest byte the code can touch, when known)."""
        for lo, hi in _clusters(ranges):
            room = min(hi + (hi - lo), self.capacity)
            if slack_to is not None:
                room = min(room, max(hi, slack_to))
            self.ensure(lo, room - lo)

    def write_bytes(self, addr: int, data: bytes | np.ndarray) -> None:
        b = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) \
            else np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        buf, off = self.ensure(addr, b.size)
        buf[off: off + b.size] = b
        if len(self.written) < 1024:
            self.written.append((addr, addr + b.size))
        else:  # never looked at: anything may have changed
            self.written[:] = [(0, self.capacity)]

    def read_bytes(self, addr: int, n: int) -> np.ndarray:
        buf, off = self.ensure(addr, n)
        return buf[off: off + n].copy()

    @property
    def allocated(self) -> int:
        return sum(int(b.size) for b in self.bufs)


def _clusters(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """[lo, hi) spans of the nonempty (address, bytes) ranges, nearby ones merged."""
    out: list[list[int]] = []
    for addr, n in sorted((a, n) for a, n in ranges if n > 0):
        if out and addr <= out[-1][1] + _MERGE_GAP:
            out[-1][1] = max(out[-1][1], addr + n)
        else:
            out.append([addr, addr + n])
    return [(lo, hi) for lo, hi in out]


class ChipMemory:
    """HBM, SRAM and accumulator of one chip, with tile reads and writes."""

    __slots__ = ("chip", "spaces", "replay")

    def __init__(self, chip: int, hbm_bytes: int, sram_bytes: int, acc_bytes: int,
                 limit: int | None = None) -> None:
        self.chip = chip
        self.replay = None  # nova.sim.replay_plan.Schedule of the last decoupled run, on chip 0
        limit = limit if limit is not None else host_memory_limit()
        self.spaces = (Memory("hbm", hbm_bytes, chip, limit=limit),
                       Memory("sram", sram_bytes, chip, limit=limit),
                       Memory("acc", acc_bytes, chip, limit=limit))

    def presize(self, program: "Program", onchip_limit: int) -> None:
        """Allocates what a run of ``program`` surely touches before it starts
        (zeroed pages cost nothing until touched; growing later copies): HBM
        around its inputs, outputs and constants, SRAM and the accumulator whole
        up to ``onchip_limit``."""
        hbm = self.spaces[0]
        hbm.reserve(_io_ranges(program), _high(program, 0))
        for space in self.spaces[1:]:
            space.ensure(0, min(space.capacity, onchip_limit))

    def view(self, t: TileAccess, addr: int, what: str = "") -> np.ndarray:
        """A strided view of the tile's storage (its dtype's storage type, bf16 as u16 bits, i1 as u8)."""
        buf, off = self.spaces[t.space].ensure(addr, t.extent, what)
        return np.ndarray(t.shape, dtype=t.storage, buffer=buf, offset=off, strides=t.bstrides)

    def read(self, t: TileAccess, addr: int, what: str = "") -> np.ndarray:
        """The tile's values in its compute type: float32 for float tiles, the integer
        type itself for integer tiles, bool for i1 (a view for f32 and integer tiles: do
        not write through it)."""
        return decode_values(t.dtype, self.view(t, addr, what))

    def read_raw(self, t: TileAccess, addr: int, what: str = "") -> np.ndarray:
        """A copy of the tile in its storage type (DMA: moves bits, no conversion)."""
        return self.view(t, addr, what).copy()

    def write(self, t: TileAccess, addr: int, values: np.ndarray, what: str = "") -> None:
        """Writes ``values`` (broadcast to the tile's shape) given in the tile's compute
        type: float32 rounded to a float dtype, integers wrapped to an integer dtype,
        nonzero as 1 for i1. Conversions that can fault (float -> int) are the caller's
        (:func:`nova.sim.numerics.convert`)."""
        v = self.view(t, addr, what)
        if t.dtype == oc.BF16:
            values = np.broadcast_to(np.asarray(values, dtype=np.float32), t.shape)
        v[...] = encode_values(t.dtype, values)

    def flat(self, t: TileAccess, addr: int, what: str = "") -> np.ndarray:
        """The tile's storage from its address to its extent as a 1-D element array:
        element ``(i0, ..)`` is at ``sum(i_k * strides[k])`` (indexed DMA)."""
        buf, off = self.spaces[t.space].ensure(addr, t.extent, what)
        return np.ndarray((t.extent // t.storage.itemsize,), dtype=t.storage, buffer=buf, offset=off)

    def write_raw(self, t: TileAccess, addr: int, raw: np.ndarray, what: str = "") -> None:
        v = self.view(t, addr, what)
        v[...] = raw


# ---------------------------------------------------------------------------------
# Host-memory guard

#: Share of the machine's physical memory a run may use by default.
DEFAULT_HOST_FRACTION = 0.5
LIMIT_HINT = ("raise the limit with NOVA_SIM_HOST_MEMORY=<bytes> (default: half the "
              "machine's physical memory), or run timing-only (Simulator(..., "
              "functional=False) / nova run --timing-only), which allocates no memories")


def physical_memory() -> int:
    """Bytes of physical memory of this machine (0 if unknown)."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def host_memory_limit() -> int:
    """Bytes of host memory a simulation may allocate: ``NOVA_SIM_HOST_MEMORY``, else
    half the physical memory (8 GiB if that is unknown)."""
    from nova.knobs import knobs

    limit = knobs().sim_host_memory
    if limit is not None:
        return limit
    return int(physical_memory() * DEFAULT_HOST_FRACTION) or 8 << 30


def _io_ranges(program: "Program") -> list[tuple[int, int]]:
    return ([(e.address, e.nbytes) for e in program.io]
            + [(k.address, len(k.data)) for k in program.constants])


def _high(program: "Program", space: int) -> int | None:
    """The highest byte of ``space`` the loader proved the code can touch, or None."""
    highs = [code.high for code in program.chips]
    return None if any(h is None for h in highs) else max(h[space] for h in highs)


def host_memory_estimate(program: "Program", onchip_limit: int) -> int:
    """Bytes a functional run of ``program`` allocates before it starts, plus what
    it surely touches (HBM up to the highest address its code can reach, when the
    loader proved one) and the two host copies of each output (read back, then
    decoded)."""
    tg = program.target
    clusters = _clusters(_io_ranges(program))
    high = _high(program, 0)
    hbm = 0
    for lo, hi in clusters:
        room = min(hi + (hi - lo), tg.hbm_bytes)
        hbm += (room if high is None else min(room, max(hi, high))) - lo
    if high is not None:  # intermediates above the I/O, allocated on demand
        hbm += max(0, high - max((hi for _, hi in clusters), default=0))
    per_chip = (hbm + min(tg.sram_bytes, onchip_limit) + min(tg.acc_bytes, onchip_limit)
                + 2 * sum(e.nbytes for e in program.io if e.role == "output"))
    return per_chip * tg.chips


def check_host_memory(program: "Program", onchip_limit: int, limit: int | None = None) -> None:
    """Raises :class:`HostMemoryError` if a functional run of ``program`` would need
    more host memory than ``limit`` (default :func:`host_memory_limit`)."""
    limit = host_memory_limit() if limit is None else limit
    need = host_memory_estimate(program, onchip_limit)
    if need > limit:
        tg = program.target
        outputs = sum(e.nbytes for e in program.io if e.role == "output")
        raise HostMemoryError(
            f"simulating this program needs about {need} bytes ({need / 2**30:.1f} GiB) of "
            f"host memory, beyond the host limit of {limit} bytes ({limit / 2**30:.1f} GiB): "
            f"{tg.chips} chip(s) of target '{tg.name}', each holding its HBM image (inputs, "
            f"outputs, constants and what the code touches) and SRAM, plus two host copies "
            f"of the {outputs} bytes of outputs; {LIMIT_HINT}")
