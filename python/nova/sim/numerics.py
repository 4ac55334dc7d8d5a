"""Element types and the elementwise / reduction math of the vector unit, on numpy.

Float tiles compute in float32; bf16 is the top 16 bits of a float32 (rounded to
nearest even on the way in), f16 is numpy's float16. Integer tiles (i64, i32, i8)
compute in their own type with two's-complement wrap-around, i1 tiles as bool
(docs/isa.md 2.6). A fault found in the values (a zero integer divisor, a shift or a
conversion out of range) raises :class:`ValueFault`; the engine adds the chip,
instruction and source location.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from nova.errors import NovaRuntimeError

from nova.binary import opcodes as oc


class ValueFault(NovaRuntimeError):
    """A run-time fault found in an instruction's values (no location yet)."""


#: The numpy type a tile's values are computed in, per tile dtype.
COMPUTE = (np.dtype(np.float32), np.dtype(np.float32), np.dtype(np.float32), np.dtype(np.int64),
           np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.bool_))
_UNSIGNED = {np.dtype(np.int64): np.uint64, np.dtype(np.int32): np.uint32, np.dtype(np.int8): np.uint8}


def bf16_bits_to_f32(u16: np.ndarray) -> np.ndarray:
    return (u16.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Rounds float32 to bf16 (nearest even), NaN stays NaN; returns the uint16 bits."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        rounded = np.where(nan, np.uint16(0x7FC0), rounded)
    return rounded


def round_to(x: np.ndarray, dtype: int) -> np.ndarray:
    """Rounds float32 values to ``dtype`` and back to float32 (the value a write stores)."""
    if dtype == oc.F32:
        return np.asarray(x, dtype=np.float32)
    if dtype == oc.BF16:
        return bf16_bits_to_f32(f32_to_bf16_bits(np.asarray(x, dtype=np.float32)))
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 refined by one Newton step on erf: |err| < 1e-7.
    # In place: the float64 operations of
    # s * (1 - ((((1.061405429 t - 1.453152027) t + 1.421413741) t - 0.284496736) t
    #           + 0.254829592) t exp(-a a)),  t = 1 / (1 + 0.3275911 a),
    # in that order (bit-identical to the expression), with fewer temporaries.
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    t = np.multiply(a, 0.3275911)
    t += 1.0
    np.divide(1.0, t, out=t)
    y = np.multiply(t, 1.061405429)
    y -= 1.453152027
    y *= t
    y += 1.421413741
    y *= t
    y -= 0.284496736
    y *= t
    y += 0.254829592
    y *= t
    e = np.negative(a)
    e *= a
    np.exp(e, out=e)
    y *= e
    np.subtract(1.0, y, out=y)
    y *= np.sign(x)
    return y.astype(np.float32)


#: Float64 scratch of :func:`erf_into`, per shape (a few tile shapes per program).
_ERF_SCRATCH: dict[tuple[int, ...], tuple[np.ndarray, ...]] = {}


def erf_into(x: np.ndarray, dst: np.ndarray) -> None:
    """``dst[...] = _erf(x)`` for an ``x`` of ``dst``'s shape: the same float64
    operations in the same order (bit-identical), in reused scratch buffers and
    with no float32 temporary (the assignment to ``dst`` rounds as ``astype`` does)."""
    sh = x.shape
    sc = _ERF_SCRATCH.get(sh)
    if sc is None:
        if len(_ERF_SCRATCH) >= 16:
            _ERF_SCRATCH.clear()
        sc = _ERF_SCRATCH[sh] = (np.empty(sh), np.empty(sh), np.empty(sh), np.empty(sh))
    x64, a, t, y = sc
    x64[...] = x
    np.abs(x64, out=a)
    np.multiply(a, 0.3275911, out=t)
    t += 1.0
    np.divide(1.0, t, out=t)
    np.multiply(t, 1.061405429, out=y)
    y -= 1.453152027
    y *= t
    y += 1.421413741
    y *= t
    y -= 0.284496736
    y *= t
    y += 0.254829592
    y *= t
    np.negative(a, out=t)
    t *= a
    np.exp(t, out=t)
    y *= t
    np.subtract(1.0, y, out=y)
    np.sign(x64, out=a)
    y *= a
    dst[...] = y


_one = np.float32(1.0)
_zero = np.float32(0.0)

#: Unary kinds on float32 values.
UNARY: dict[int, Callable[[np.ndarray], np.ndarray]] = {
    0: lambda x: x,
    1: np.negative,
    2: np.abs,
    3: np.exp,
    4: np.log,
    5: np.sqrt,
    6: lambda x: _one / np.sqrt(x),
    7: lambda x: _one / x,
    8: np.tanh,
    9: _erf,
    10: lambda x: _one / (_one + np.exp(-x)),
    11: lambda x: np.maximum(x, _zero),
    12: np.floor,
    13: np.ceil,
    14: np.rint,  # half to even
    15: np.trunc,
    16: np.sin,
    17: np.cos,
    18: np.log1p,
}

#: Binary kinds on float32 values (comparisons give bool).
BINARY: dict[int, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    32: np.add, 33: np.subtract, 34: np.multiply, 35: np.divide, 36: np.maximum,
    37: np.minimum, 38: np.power,
    39: np.equal, 40: np.not_equal, 41: np.less, 42: np.less_equal, 43: np.greater,
    44: np.greater_equal,
    45: np.fmod,  # C fmod: the sign of the dividend
    46: lambda x, z: np.floor(np.divide(x, z)),
}


# ---------------------------------------------------------------------------------
# Integer and i1 semantics.

def _nonzero_divisor(z: np.ndarray) -> None:
    if (np.asarray(z) == 0).any():
        raise ValueFault("integer division by zero")


def _int_div(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """C division: truncates toward zero (the minimum / -1 wraps to the minimum)."""
    _nonzero_divisor(z)
    q = np.floor_divide(x, z)
    adjust = (np.remainder(x, z) != 0) & ((x < 0) != (z < 0))
    return q + adjust.astype(q.dtype)


def _int_rem(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    _nonzero_divisor(z)
    return np.fmod(x, z)


def _int_floordiv(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    _nonzero_divisor(z)
    return np.floor_divide(x, z)


def _shift(kind: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def fn(x: np.ndarray, z: np.ndarray) -> np.ndarray:
        x, z = np.asarray(x), np.asarray(z)
        bits = 1 if x.dtype == np.bool_ else 8 * x.dtype.itemsize
        zi = z.astype(np.int64)
        bad = (zi < 0) | (zi >= bits)
        if bad.any():
            raise ValueFault(f"shift amount {int(zi[bad].flat[0])} is outside [0, {bits})")
        if x.dtype == np.bool_:
            return np.broadcast_arrays(x, z)[0].copy()  # shifts by 0 only
        u = _UNSIGNED[x.dtype]
        if kind == 50:
            return np.left_shift(x.astype(u), zi.astype(u)).astype(x.dtype)
        if kind == 51:
            return np.right_shift(x, zi.astype(x.dtype))  # arithmetic on signed types
        return np.right_shift(x.astype(u), zi.astype(u)).astype(x.dtype)
    return fn


#: Unary and binary kinds on integer (and i1) values; float-only kinds are absent.
INT_UNARY: dict[int, Callable[[np.ndarray], np.ndarray]] = {
    0: lambda x: x, 1: np.negative, 2: np.abs, 19: np.invert,
}
INT_BINARY: dict[int, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    32: np.add, 33: np.subtract, 34: np.multiply, 35: _int_div, 36: np.maximum, 37: np.minimum,
    39: np.equal, 40: np.not_equal, 41: np.less, 42: np.less_equal, 43: np.greater,
    44: np.greater_equal, 45: _int_rem, 46: _int_floordiv, 47: np.bitwise_and, 48: np.bitwise_or,
    49: np.bitwise_xor, 50: _shift(50), 51: _shift(51), 52: _shift(52),
}


def unary_fn(kind: int, dtype: int) -> Callable[[np.ndarray], np.ndarray]:
    """The function of unary ``kind`` on values of tile dtype ``dtype``."""
    return UNARY[kind] if dtype in oc.FLOAT_DTYPES else INT_UNARY[kind]


def binary_fn(kind: int, dtype: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    return BINARY[kind] if dtype in oc.FLOAT_DTYPES else INT_BINARY[kind]


def fused_fn(kind0: int, kind1: int, dtype: int, a: np.ndarray | None,
             b: np.ndarray | None) -> Callable[..., np.ndarray]:
    """VFUSED: ``T = kind0(X, A)`` rounded to ``dtype``, X's float type, then
    ``kind1(T, B)`` (the write rounds it to Y's), as VBINARY / VSCALAR twice through a
    tile of X's type computes it. ``a`` / ``b``: an immediate, or None when that operand
    is a tile, passed after X in the order A, B."""
    f0, f1 = BINARY[kind0], BINARY[kind1]

    def fn(x: np.ndarray, *tiles: np.ndarray) -> np.ndarray:
        rest = iter(tiles)
        av = next(rest) if a is None else a
        bv = next(rest) if b is None else b
        return f1(round_to(f0(x, av), dtype), bv)

    return fn


# ---------------------------------------------------------------------------------
# Conversions (vcopy, copy, register scalars).

def _int_to_bf16_value(x: np.ndarray) -> np.ndarray:
    """Integers rounded once, to nearest even, to bf16 (as float32 values); going
    through float32 first would round twice above 2^24."""
    u = np.asarray(x).astype(np.float64).view(np.uint64)
    u = (u + ((u >> np.uint64(45)) & np.uint64(1)) + np.uint64((1 << 44) - 1)) & ~np.uint64((1 << 45) - 1)
    return u.view(np.float64).astype(np.float32)


def convert(x: np.ndarray, src: int, dst: int) -> np.ndarray:
    """Values of tile dtype ``src`` converted to the compute type of ``dst``
    (docs/isa.md 2.6): int -> int wraps or sign-extends, int -> float rounds to nearest
    even, float -> int truncates toward zero (NaN or out of range: INT_MIN, as torch's
    CPU casts give),
    any -> i1 is ``x != 0``, i1 -> any is 0 / 1."""
    x = np.asarray(x)
    if dst == oc.I1:
        return x != 0
    src_float = src in oc.FLOAT_DTYPES
    if dst in oc.FLOAT_DTYPES:
        if src_float:
            return x
        if dst == oc.BF16:
            return _int_to_bf16_value(x)
        if dst == oc.F16:
            return x.astype(np.float64).astype(np.float16).astype(np.float32)
        return x.astype(np.float32)
    out = COMPUTE[dst]
    if not src_float:
        return x.astype(out)
    t = np.trunc(x.astype(np.float64))
    # torch's CPU kernels convert through C casts (x86 cvtt*): a NaN or an out-of-range
    # value becomes the "integer indefinite" INT_MIN of a 32- or 64-bit conversion, and a
    # narrower type takes the low bits of the 32-bit one (0). Programs rely on it: T5's
    # position buckets cast log(0) = -inf and discard the result with torch.where.
    wide = max(8 * out.itemsize, 32)
    bad = np.isnan(t) | (t < -2.0 ** (wide - 1)) | (t >= 2.0 ** (wide - 1))
    t = np.where(bad, -2.0 ** (wide - 1), t)
    if wide == 8 * out.itemsize:
        return t.astype(out)
    return t.astype(np.int64).astype(out)  # wraps, as the C cast of the 32-bit value does


def scalar_of(value: int | float, dst: int, from_int: bool) -> np.ndarray:
    """A scalar (an i64 register or immediate when ``from_int``, else an f64 immediate)
    in the compute type of tile dtype ``dst``: f64 immediates round to f32 (and to
    the tile's float type on the write), i64 values convert as :func:`convert`."""
    if not from_int:
        if dst in oc.FLOAT_DTYPES:
            return np.float32(value)
        return convert(np.array(value, np.float64), oc.F32, dst)
    return convert(np.array(value, np.int64), oc.I64, dst)


# ---------------------------------------------------------------------------------
# Reductions, scans, sorting.

def reduce_axis(x: np.ndarray, kind: int, axis: int) -> np.ndarray:
    """``vreduce`` along ``axis`` (keepdims). Float tiles sum in float32, integer
    tiles in their own type (wrapping); argmax/argmin give the first position of the
    maximum / minimum, a NaN counting as both (as torch)."""
    acc = np.float32 if x.dtype == np.float32 else x.dtype
    if kind == oc.R_SUM:
        return np.sum(x, axis=axis, keepdims=True, dtype=acc)
    if kind == oc.R_MAX:
        return np.max(x, axis=axis, keepdims=True)
    if kind == oc.R_MIN:
        return np.min(x, axis=axis, keepdims=True)
    if kind == oc.R_AVG:
        return np.mean(x, axis=axis, keepdims=True, dtype=np.float32)
    if kind == oc.R_PROD:
        return np.prod(x, axis=axis, keepdims=True, dtype=acc)
    if kind == oc.R_ARGMAX:
        return np.argmax(x, axis=axis, keepdims=True)
    if kind == oc.R_ARGMIN:
        return np.argmin(x, axis=axis, keepdims=True)
    raise ValueError(f"unknown reduction kind {kind}")


def scan_axis(x: np.ndarray, kind: int, axis: int) -> np.ndarray:
    """``vscan``: the inclusive prefix sum / max / min / product along ``axis``."""
    acc = np.float32 if x.dtype == np.float32 else x.dtype
    if kind == oc.R_SUM:
        return np.cumsum(x, axis=axis, dtype=acc)
    if kind == oc.R_MAX:
        return np.maximum.accumulate(x, axis=axis)
    if kind == oc.R_MIN:
        return np.minimum.accumulate(x, axis=axis)
    if kind == oc.R_PROD:
        return np.cumprod(x, axis=axis, dtype=acc)
    raise ValueError(f"scan kind {kind} is not sum, max, min or prod")


def sort_axis(x: np.ndarray, axis: int, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    """``vsort``: a stable sort along ``axis`` (NaN sorts as the largest value, as torch);
    returns the sorted values and their positions in ``x`` (int64)."""
    x = np.asarray(x)
    if not descending:
        idx = np.argsort(x, axis=axis, kind="stable")
    elif x.dtype == np.float32:
        nan = np.isnan(x)
        # lexsort sorts by the last key first: NaN first, then by decreasing value.
        idx = np.lexsort((np.where(nan, _zero, -x), ~nan), axis=axis)
    else:
        idx = np.argsort(np.invert(x), axis=axis, kind="stable")  # ~x decreases, no overflow
    return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)


def reduce_stack(xs: list[np.ndarray], kind: int) -> np.ndarray:
    """Reduces a list of equally shaped arrays elementwise (collectives): float32 for
    float tiles, the integer type (wrapping) for integer tiles."""
    dt = np.float32 if np.asarray(xs[0]).dtype == np.float32 else np.asarray(xs[0]).dtype
    acc = np.array(xs[0], dtype=dt, copy=True)
    op = {oc.R_SUM: np.add, oc.R_AVG: np.add, oc.R_MAX: np.maximum, oc.R_MIN: np.minimum}.get(kind)
    if op is None:
        raise ValueError(f"unknown reduction kind {kind}")
    with np.errstate(over="ignore"):
        for x in xs[1:]:
            op(acc, x, out=acc)
    if kind == oc.R_AVG:
        acc /= np.float32(len(xs))
    return acc
