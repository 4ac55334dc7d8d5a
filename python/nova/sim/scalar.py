"""The scalar ALU of docs/isa.md (``salu``, register stepping): 64-bit
two's-complement integers, for the sequencer's interpreter of scalar code
(:mod:`nova.sim.stream`)."""

from __future__ import annotations

from nova.errors import NovaRuntimeError

from .errors import ProgramError, ScalarFaultError

M64 = (1 << 64) - 1
S63 = 1 << 63


def wrap(x: int) -> int:
    """``x`` wrapped to a signed 64-bit value."""
    x &= M64
    return x - (1 << 64) if x & S63 else x


class SaluError(NovaRuntimeError):
    """A salu that faults; the caller adds where (``cls(where + message)``)."""

    def __init__(self, cls: type[Exception], message: str) -> None:
        super().__init__(message)
        self.cls, self.message = cls, message


def salu(kind: int, a: int, b: int) -> int:
    """One ``salu`` of kind add, sub, mul, div, rem (C: truncating), min, max,
    eq, ne, lt, le (docs/isa.md 2.1)."""
    if kind == 0:
        return wrap(a + b)
    if kind == 1:
        return wrap(a - b)
    if kind == 2:
        return wrap(a * b)
    if kind in (3, 4):
        if b == 0:
            raise SaluError(ScalarFaultError, "division by zero in salu " + ("div" if kind == 3 else "rem"))
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        return wrap(q) if kind == 3 else wrap(a - q * b)
    if kind == 5:
        return min(a, b)
    if kind == 6:
        return max(a, b)
    if kind == 7:
        return int(a == b)
    if kind == 8:
        return int(a != b)
    if kind == 9:
        return int(a < b)
    if kind == 10:
        return int(a <= b)
    raise SaluError(ProgramError, f"unknown salu kind {kind}")
