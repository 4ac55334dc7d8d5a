"""Element-type rules of docs/isa.md 2.4-2.6 that the simulator checks before it runs
an instruction (the compiler's `nova_isa` verifiers enforce the same rules; a binary
that breaks one is malformed, not a run-time fault).

:func:`type_error` returns a message stating the broken rule, or ``None``.
"""

from __future__ import annotations

from typing import Any

from nova.binary import opcodes as oc


def _name(dt: int) -> str:
    return oc.DTYPE_NAMES[dt]


def _same_class(a: int, b: int) -> bool:
    """Float dtypes mix (the result is rounded to the output's), others must be equal."""
    return a == b or (a in oc.FLOAT_DTYPES and b in oc.FLOAT_DTYPES)


def _elementwise(kind: int, ins: list[Any], out: Any) -> str | None:
    name = oc.UNARY_KINDS.get(kind) or oc.BINARY_KINDS.get(kind)
    dts = [t.dtype for t in ins]
    dt = dts[0]
    if kind == 0:  # copy converts
        return None
    if any(not _same_class(dt, other) for other in dts[1:]):
        return f"{name} operands must have one element type, got {', '.join(map(_name, dts))}"
    if kind in oc.FLOAT_ONLY_KINDS and dt not in oc.FLOAT_DTYPES:
        return f"{name} takes float tiles, got {_name(dt)}"
    if kind in oc.INTEGER_ONLY_KINDS and dt in oc.FLOAT_DTYPES:
        return f"{name} takes integer or i1 tiles, got {_name(dt)}"
    if dt == oc.I1 and kind not in oc.I1_KINDS:
        return f"{name} is not defined on i1 tiles"
    if kind in oc.COMPARISONS:
        if out.dtype != oc.I1 and not _same_class(out.dtype, dt):
            return f"{name} of {_name(dt)} tiles writes i1 or {_name(dt)}, got {_name(out.dtype)}"
    elif not _same_class(out.dtype, dt):
        return f"{name} of {_name(dt)} tiles cannot write a {_name(out.dtype)} tile"
    return None


def _fused(ins: list[Any], out: Any) -> str | None:
    """VFUSED: float tiles; X, A and B of one element type (T is rounded to it), Y any
    float type (the immediates are f64)."""
    dts = [t.dtype for t in ins if t is not None] + [out.dtype]
    if any(dt not in oc.FLOAT_DTYPES for dt in dts):
        return f"vfused takes float tiles, got {', '.join(map(_name, dts))}"
    if len(set(dts[:-1])) > 1:
        return f"vfused operands must have one element type, got {', '.join(map(_name, dts[:-1]))}"
    return None


def _reduction(what: str, kind: int, x: Any, y: Any, allowed: frozenset[int]) -> str | None:
    if kind not in allowed:
        return f"{what} kind {kind} is not one of {', '.join(oc.REDUCE_NAMES[k] for k in sorted(allowed))}"
    name = oc.REDUCE_NAMES[kind]
    if kind == oc.R_AVG and x.dtype not in oc.FLOAT_DTYPES:
        return f"{what} avg takes float tiles, got {_name(x.dtype)}"
    if x.dtype == oc.I1 and kind not in (oc.R_MAX, oc.R_MIN, oc.R_ARGMAX, oc.R_ARGMIN):
        return f"{what} {name} is not defined on i1 tiles"
    if kind in (oc.R_ARGMAX, oc.R_ARGMIN):
        if y.dtype not in oc.INDEX_DTYPES:
            return f"{what} {name} writes an i64 or i32 tile, got {_name(y.dtype)}"
    elif not _same_class(x.dtype, y.dtype):
        return f"{what} {name} of a {_name(x.dtype)} tile cannot write a {_name(y.dtype)} tile"
    return None


def type_error(op: int, kind: int, ta: Any, tb: Any, tc: Any, td: Any) -> str | None:
    """The broken element-type rule of one instruction (tiles of slots a..d, or None)."""
    if op == oc.VUNARY:
        return _elementwise(kind, [ta], td)
    if op == oc.VBINARY:
        return _elementwise(kind, [ta, tb], td)
    if op == oc.VSCALAR:
        return _elementwise(kind, [ta], td)
    if op == oc.VFUSED:
        return _fused([ta, tb, tc], td)
    if op == oc.VSELECT:
        if not (_same_class(tb.dtype, td.dtype) and _same_class(tc.dtype, td.dtype)):
            return (f"vselect values and result must have one element type, got "
                    f"{_name(tb.dtype)}, {_name(tc.dtype)} -> {_name(td.dtype)}")
        return None
    if op == oc.VREDUCE:
        return _reduction("vreduce", kind, ta, td, frozenset(range(len(oc.REDUCE_NAMES))))
    if op == oc.VSCAN:
        return _reduction("vscan", kind, ta, td, oc.SCAN_KINDS)
    if op in (oc.ALL_REDUCE, oc.REDUCE_SCATTER):
        return _reduction(oc.NAMES[op], kind, ta, td, oc.COLLECTIVE_KINDS)
    if op == oc.VTRANSPOSE and not _same_class(ta.dtype, td.dtype):
        return f"vtranspose of a {_name(ta.dtype)} tile cannot write a {_name(td.dtype)} tile"
    if op == oc.VIOTA and td.dtype == oc.I1:
        return "viota writes a numeric tile, got i1"
    if op == oc.VSORT:
        if tc.dtype not in oc.INDEX_DTYPES:
            return f"vsort indices must be an i64 or i32 tile, got {_name(tc.dtype)}"
        if not _same_class(ta.dtype, td.dtype):
            return f"vsort values of a {_name(ta.dtype)} tile cannot be a {_name(td.dtype)} tile"
        if not ta.shape == tc.shape == td.shape:
            return (f"vsort input, values and indices must have one shape, got {list(ta.shape)}, "
                    f"{list(td.shape)}, {list(tc.shape)}")
        return None
    if op == oc.MATMUL:
        for t, what in ((ta, "lhs"), (tb, "rhs"), (td, "accumulator")):
            if t.dtype not in oc.FLOAT_DTYPES:
                return f"matmul takes float tiles only, {what} is {_name(t.dtype)}"
        return None
    if op in (oc.DMA_GATHER, oc.DMA_SCATTER):
        name = oc.NAMES[op]
        moved = td if op == oc.DMA_GATHER else ta
        if tb.dtype not in oc.INDEX_DTYPES:
            return f"{name} indices must be an i64 or i32 tile, got {_name(tb.dtype)}"
        if tb.space != oc.SRAM:
            return f"{name} indices must live in sram, got {oc.SPACE_NAMES[tb.space]}"
        if tb.shape != moved.shape:
            return (f"{name} indices {list(tb.shape)} must have the shape of the "
                    f"{'gathered' if op == oc.DMA_GATHER else 'scattered'} tile {list(moved.shape)}")
        if ta.dtype != td.dtype:
            return f"{name} source and destination must have one element type, got {_name(ta.dtype)} -> {_name(td.dtype)}"
        for t, what in ((ta, "source"), (td, "destination")):
            if t.space not in (oc.HBM, oc.SRAM):
                return f"{name} {what} must live in hbm or sram, got {oc.SPACE_NAMES[t.space]}"
        return None
    return None
