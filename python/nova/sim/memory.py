"""Per-chip memories (HBM, SRAM, accumulator) as lazily grown numpy byte buffers.

A buffer grows to the highest byte actually touched, never beyond the target's
capacity: an access past it is a :class:`MemoryFaultError`. Tiles are read and written
as strided numpy views on the byte buffer (no per-element Python loops).
"""

from __future__ import annotations

import numpy as np

from . import opcodes as oc
from .errors import MemoryFaultError
from .numerics import bf16_bits_to_f32, f32_to_bf16_bits
from .program import TileDesc

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


class Memory:
    """One memory space of one chip."""

    __slots__ = ("name", "capacity", "buf", "chip")

    def __init__(self, name: str, capacity: int, chip: int, initial: int = 0) -> None:
        self.name = name
        self.capacity = capacity
        self.chip = chip
        self.buf = np.zeros(0, dtype=np.uint8)
        if initial:
            self.ensure(0, initial)

    def ensure(self, addr: int, nbytes: int, what: str = "") -> None:
        end = addr + nbytes
        if addr < 0 or end > self.capacity:
            raise MemoryFaultError(
                f"chip {self.chip}: {what + ': ' if what else ''}access to {self.name} bytes "
                f"[{addr}, {end}) is outside its capacity of {self.capacity} bytes")
        if end > self.buf.size:
            new = min(self.capacity, max(end, 2 * self.buf.size, 4096))
            buf = np.zeros(new, dtype=np.uint8)
            buf[: self.buf.size] = self.buf
            self.buf = buf

    def write_bytes(self, addr: int, data: bytes | np.ndarray) -> None:
        b = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray, memoryview)) \
            else np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        self.ensure(addr, b.size)
        self.buf[addr: addr + b.size] = b

    def read_bytes(self, addr: int, n: int) -> np.ndarray:
        self.ensure(addr, n)
        return self.buf[addr: addr + n].copy()

    @property
    def allocated(self) -> int:
        return int(self.buf.size)


class ChipMemory:
    """HBM, SRAM and accumulator of one chip, with tile reads and writes."""

    __slots__ = ("chip", "spaces")

    def __init__(self, chip: int, hbm_bytes: int, sram_bytes: int, acc_bytes: int) -> None:
        self.chip = chip
        self.spaces = (Memory("hbm", hbm_bytes, chip), Memory("sram", sram_bytes, chip),
                       Memory("acc", acc_bytes, chip))

    def view(self, t: TileAccess, addr: int, what: str = "") -> np.ndarray:
        """A strided view of the tile's storage (its dtype's storage type, bf16 as u16 bits, i1 as u8)."""
        mem = self.spaces[t.space]
        mem.ensure(addr, t.extent, what)
        return np.ndarray(t.shape, dtype=t.storage, buffer=mem.buf, offset=addr, strides=t.bstrides)

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
        mem = self.spaces[t.space]
        mem.ensure(addr, t.extent, what)
        return np.ndarray((t.extent // t.storage.itemsize,), dtype=t.storage, buffer=mem.buf, offset=addr)

    def write_raw(self, t: TileAccess, addr: int, raw: np.ndarray, what: str = "") -> None:
        v = self.view(t, addr, what)
        v[...] = raw
