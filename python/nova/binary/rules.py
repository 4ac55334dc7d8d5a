"""The per-instruction operand rules of docs/isa.md section 2 (what the `nova_isa`
verifiers call "verified"), checked by the loader on every word of a code section.

:func:`check_rules` checks shapes, memory spaces, element types, broadcast rules,
matmul limits and collective shapes against the program's tile and group tables,
so that an instruction the simulator runs always has operands of the shapes its
numpy implementation expects. The element-type rules are shared with the
simulator (:mod:`nova.binary.type_rules`). Register values are the business of
:mod:`nova.binary.bounds`.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from nova.binary.type_rules import type_error  # the element-type rules (docs/isa.md 2.4-2.6)
from nova.binary.isa import (
    NO_TILE, Flag, MemorySpace, Opcode, ReplicaGroups, Tile,
)

__all__ = ["check_rules", "rule_broken"]

_HBM, _SRAM, _ACC = MemorySpace.HBM, MemorySpace.SRAM, MemorySpace.ACC
_DMA_SPACES = (_HBM, _SRAM)
_VECTOR_SPACES = (_SRAM, _ACC)
_ELEMENTWISE = (Opcode.VUNARY, Opcode.VBINARY, Opcode.VSCALAR, Opcode.VSELECT)
_COLLECTIVE = (Opcode.ALL_REDUCE, Opcode.ALL_GATHER, Opcode.REDUCE_SCATTER,
               Opcode.ALL_TO_ALL, Opcode.SEND, Opcode.RECV)
#: The opcodes that read or write tiles: the ones this module has rules for.
TILE_OPS = frozenset(_ELEMENTWISE + _COLLECTIVE + (
    Opcode.DMA_COPY, Opcode.DMA_GATHER, Opcode.DMA_SCATTER, Opcode.MATMUL,
    Opcode.VREDUCE, Opcode.VTRANSPOSE, Opcode.VFILL, Opcode.VCOPY, Opcode.VIOTA,
    Opcode.VASSERT, Opcode.VSCAN, Opcode.VSORT, Opcode.VFUSED))
_TILE_MASK = np.zeros(256, bool)
_TILE_MASK[list(TILE_OPS)] = True
#: Word fields a rule may depend on (besides the tiles' descriptors).
_KEY = ("opcode", "kind", "flags", "tile_a", "tile_b", "tile_c", "tile_d", "group",
        "imm0", "imm1")


def _space(t: Tile) -> str:
    return t.space.name.lower()


def _repeats(t: Tile) -> bool:
    """An output must not repeat an element: stride 0 on a dimension of size > 1."""
    return any(n > 1 and s == 0 for n, s in zip(t.shape, t.strides))


def _in(t: Tile, what: str, spaces: Sequence[MemorySpace]) -> str | None:
    if t.space not in spaces:
        names = " or ".join(s.name.lower() for s in spaces)
        return f"{what} must live in {names}, got {_space(t)}"
    return None


def _output(t: Tile, what: str, spaces: Sequence[MemorySpace]) -> str | None:
    if _repeats(t):
        return f"{what} {t} repeats elements (stride 0 on a dimension of size > 1)"
    return _in(t, what, spaces)


def _broadcasts(x: Tile, y: Tile, what: str) -> str | None:
    """docs/isa.md 2.4: the input has the output's rank, each size equal or 1."""
    if x.rank != y.rank or any(a != b and a != 1 for a, b in zip(x.shape, y.shape)):
        return (f"{what} shape {list(x.shape)} does not broadcast to the output "
                f"shape {list(y.shape)} (same rank, each size equal or 1)")
    return None


def _with_dim(shape: tuple[int, ...], dim: int, size: int) -> list[int]:
    out = list(shape)
    out[dim] = size
    return out


def _first(*problems: str | None) -> str | None:
    return next((p for p in problems if p), None)


def _dma(op: Opcode, flags: int, a: Tile, b: Tile | None, d: Tile) -> str | None:
    name = op.name
    problem = _first(_in(a, f"{name} source", _DMA_SPACES),
                     _in(d, f"{name} destination", _DMA_SPACES))
    if problem:
        return problem
    if op == Opcode.DMA_COPY:
        if a.shape != d.shape or a.dtype != d.dtype:
            return (f"DMA_COPY source {a} and destination {d} must have one shape "
                    f"and element type")
        if flags & Flag.PEER and d.space != _HBM:
            return "DMA_COPY to a peer must write hbm"
        return _output(d, "DMA_COPY destination", _DMA_SPACES)
    moved = d if op == Opcode.DMA_GATHER else a
    if b.space != _SRAM:
        return f"{name} indices must live in sram, got {_space(b)}"
    if b.shape != moved.shape:
        return (f"{name} indices {list(b.shape)} must have the shape of the "
                f"{'gathered' if op == Opcode.DMA_GATHER else 'scattered'} tile "
                f"{list(moved.shape)}")
    if op == Opcode.DMA_GATHER:
        return _output(d, "DMA_GATHER destination", _DMA_SPACES)
    return None


def _matmul(a: Tile, b: Tile, d: Tile, target: Mapping[str, object]) -> str | None:
    if not a.rank == b.rank == d.rank == 2:
        return f"MATMUL operands must have rank 2, got {a.rank}, {b.rank} and {d.rank}"
    (m, k), (k2, n), (m2, n2) = a.shape, b.shape, d.shape
    if k != k2 or m != m2 or n != n2:
        return (f"MATMUL shapes lhs {list(a.shape)}, rhs {list(b.shape)}, acc "
                f"{list(d.shape)} are not [M, K], [K, N], [M, N]")
    problem = _first(_in(a, "MATMUL lhs", (_SRAM,)), _in(b, "MATMUL rhs", (_SRAM,)),
                     _output(d, "MATMUL accumulator", (_ACC,)))
    if problem:
        return problem
    if a.dtype != b.dtype:
        return "MATMUL lhs and rhs must have one element type"
    if d.dtype.name != "F32":
        return f"MATMUL accumulator must be f32, got {d.dtype.name.lower()}"
    if k > target["matrix_rows"] or n > target["matrix_cols"]:
        return (f"MATMUL K = {k}, N = {n} exceed the matrix unit "
                f"({target['matrix_rows']} x {target['matrix_cols']})")
    return None


def _collective(op: Opcode, a: Tile | None, d: Tile | None, imm0: int, imm1: int,
                p: int) -> str | None:
    name = op.name
    if a is not None and (problem := _in(a, f"{name} input", _DMA_SPACES)):
        return problem
    if d is not None and (problem := _output(d, f"{name} output", _DMA_SPACES)):
        return problem
    if a is None or d is None:
        return None
    if a.dtype != d.dtype:
        return f"{name} input and output must have one element type"
    if a.rank != d.rank:
        return f"{name} input {list(a.shape)} and output {list(d.shape)} differ in rank"
    if op == Opcode.ALL_REDUCE:
        want = list(a.shape)
    elif op == Opcode.ALL_GATHER:
        want = _with_dim(a.shape, imm0, a.shape[imm0] * p)
    elif op == Opcode.REDUCE_SCATTER:
        if a.shape[imm0] % p:
            return f"REDUCE_SCATTER dim {imm0} of size {a.shape[imm0]} is not divisible by {p}"
        want = _with_dim(a.shape, imm0, a.shape[imm0] // p)
    else:  # ALL_TO_ALL
        if a.shape[imm0] % p:
            return f"ALL_TO_ALL split_dim {imm0} of size {a.shape[imm0]} is not divisible by {p}"
        want = _with_dim(a.shape, imm0, a.shape[imm0] // p)
        want[imm1] *= p
    if list(d.shape) != want:
        return (f"{name} output shape {list(d.shape)} should be {want} for input "
                f"{list(a.shape)} and groups of {p}")
    return None


def _full_rate(t: Tile | None, y: Tile) -> bool:
    """A tile operand the vector engine streams at the full rate: its last dimension is
    the output's and > 1 (a per-row [.., 1] or a broadcast [1, 1] tile, or an immediate,
    is a scalar operand)."""
    return t is not None and t.shape[-1] == y.shape[-1] > 1


def _fused(x: Tile, a: Tile | None, b: Tile | None, y: Tile) -> str | None:
    """docs/isa.md 2.4 VFUSED: X has Y's shape, A and B broadcast to it, and the
    engine reads at most two operands at the full rate."""
    if x.shape != y.shape:
        return f"VFUSED input x {list(x.shape)} must have the output's shape {list(y.shape)}"
    problem = _first(*(_broadcasts(t, y, f"VFUSED input {what}")
                       for t, what in ((a, "a"), (b, "b")) if t is not None))
    if problem:
        return problem
    if all(_full_rate(t, y) for t in (x, a, b)):
        return (f"VFUSED reads x, a and b at the full rate (last dimension {y.shape[-1]}); "
                f"at most two may be, the others a per-row [.., 1] or [1, 1] tile or an immediate")
    return None


def _vector(op: Opcode, kind: int, imm0: int, a: Tile | None, b: Tile | None,
            c: Tile | None, d: Tile | None) -> str | None:
    name = op.name
    for t, what in ((a, "input a"), (b, "input b"), (c, "input c")):
        if t is not None and (problem := _in(t, f"{name} {what}", _VECTOR_SPACES)):
            return problem
    if d is not None and (problem := _output(d, f"{name} output", _VECTOR_SPACES)):
        return problem
    if op == Opcode.VSORT and (problem := _output(c, "VSORT indices", _VECTOR_SPACES)):
        return problem
    if op == Opcode.VFUSED:
        return _fused(a, b, c, d)
    if op in _ELEMENTWISE:
        ins = [t for t in (a, b, c) if t is not None]
        return _first(*(_broadcasts(t, d, f"{name} input") for t in ins))
    if op == Opcode.VCOPY or op == Opcode.VSCAN:
        if a.shape != d.shape:
            return f"{name} input {list(a.shape)} and output {list(d.shape)} differ in shape"
    elif op == Opcode.VREDUCE:
        want = _with_dim(a.shape, imm0, 1)
        if list(d.shape) != want:
            return f"VREDUCE output shape {list(d.shape)} should be {want}"
    elif op == Opcode.VTRANSPOSE:
        perm = [(imm0 >> (8 * k)) & 0xFF for k in range(a.rank)]
        want = [a.shape[p] for p in perm]
        if list(d.shape) != want:
            return f"VTRANSPOSE output shape {list(d.shape)} should be {want} (perm {perm})"
    return None


def rule_broken(op: Opcode, kind: int, flags: int, tiles: Sequence[Tile | None],
                group: ReplicaGroups | None, imm0: int, imm1: int,
                target: Mapping[str, object]) -> str | None:
    """The docs/isa.md section 2 rule one instruction breaks, or None. ``tiles`` are
    its slots a..d (None where unused); kinds, axes and indices are already in
    range (nova.binary.code checks those first)."""
    a, b, c, d = tiles
    if op in (Opcode.DMA_COPY, Opcode.DMA_GATHER, Opcode.DMA_SCATTER):
        problem = _dma(op, flags, a, b, d)
    elif op == Opcode.MATMUL:
        problem = _matmul(a, b, d, target)
    elif op in _COLLECTIVE:
        p = len(group[0]) if group else 1
        problem = _collective(op, a, d, imm0, imm1, p)
    else:
        problem = _vector(op, kind, imm0, a, b, c, d)
    # Every slot an opcode uses holds a tile (code.py checks the indices first).
    return problem or type_error(int(op), kind, a, b, c, d)


def check_rules(w: np.ndarray, tiles: Sequence[Tile], groups: Sequence[ReplicaGroups],
                target: Mapping[str, object], fail: Callable[[int, str], Exception]) -> None:
    """Checks every tile-using word of ``w``; ``fail(index, rule)`` builds the error.
    Words that agree on every field a rule reads are checked once."""
    rows = np.nonzero(_TILE_MASK[w["opcode"]])[0]
    if not len(rows):
        return
    first: dict[tuple, int] = {}
    for i, key in zip(rows.tolist(), zip(*(w[f][rows].tolist() for f in _KEY))):
        first.setdefault(key, i)
    for i in sorted(first.values()):
        ins = w[i]
        op = Opcode(int(ins["opcode"]))
        slots = [int(ins[s]) for s in ("tile_a", "tile_b", "tile_c", "tile_d")]
        ts = [None if s == NO_TILE else tiles[s] for s in slots]
        group = groups[int(ins["group"])] if op in _COLLECTIVE and op not in (
            Opcode.SEND, Opcode.RECV) else None
        problem = rule_broken(op, int(ins["kind"]), int(ins["flags"]), ts, group,
                              int(ins["imm0"]), int(ins["imm1"]), target)
        if problem:
            raise fail(i, problem)
