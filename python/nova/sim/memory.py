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

_STORAGE = (np.dtype("<f4"), np.dtype("<u2"), np.dtype("<f2"))


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
        """A strided view of the tile's storage (f32, u16 bf16 bits, or f16)."""
        mem = self.spaces[t.space]
        mem.ensure(addr, t.extent, what)
        return np.ndarray(t.shape, dtype=t.storage, buffer=mem.buf, offset=addr, strides=t.bstrides)

    def read(self, t: TileAccess, addr: int, what: str = "") -> np.ndarray:
        """The tile's values as float32 (a view for f32 tiles: do not write through it)."""
        v = self.view(t, addr, what)
        if t.dtype == oc.F32:
            return v
        if t.dtype == oc.BF16:
            return bf16_bits_to_f32(v)
        return v.astype(np.float32)

    def read_raw(self, t: TileAccess, addr: int, what: str = "") -> np.ndarray:
        """A copy of the tile in its storage type (DMA: moves bits, no conversion)."""
        return self.view(t, addr, what).copy()

    def write(self, t: TileAccess, addr: int, values: np.ndarray, what: str = "") -> None:
        """Writes float32 ``values`` (broadcast to the tile's shape), rounding to its dtype."""
        v = self.view(t, addr, what)
        if t.dtype == oc.BF16:
            values = np.broadcast_to(np.asarray(values, dtype=np.float32), t.shape)
            v[...] = f32_to_bf16_bits(values)
        else:
            v[...] = values

    def write_raw(self, t: TileAccess, addr: int, raw: np.ndarray, what: str = "") -> None:
        v = self.view(t, addr, what)
        v[...] = raw
