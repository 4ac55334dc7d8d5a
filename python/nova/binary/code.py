"""Validation and decoding of code sections (docs/isa.md 3, docs/binary-format.md 7).

:func:`check_code` checks one program's instruction words against its tile and
group tables, :func:`decode_instructions` turns them into
:class:`~nova.binary.isa.Instruction` objects. The opcode tables below say, per
opcode, which fields it uses (the others must hold their default), which flags
and kinds it accepts.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from nova.binary.errors import BinaryFormatError
from nova.binary.isa import (
    ALLOWED_ENGINES, MAX_LOOP_DEPTH, NO_TILE, DType, ElementwiseKind, Engine, Flag,
    Instruction, Opcode, ReductionKind, ReplicaGroups, SaluKind, Tile,
)

__all__ = ["check_code", "check_control_flow", "decode_instructions", "describe_word",
           "instruction_error"]


def _fail(message: str) -> BinaryFormatError:
    return BinaryFormatError(message)


def describe_word(w: np.ndarray, i: int, tiles: Sequence[Tile] = ()) -> str:
    """Word ``i`` in docs/isa.md syntax, or its fields when it does not decode."""
    from nova.binary.disassembly import format_instruction

    try:
        return format_instruction(decode_instructions(w[i:i + 1])[0], 0, tiles)
    except (KeyError, ValueError, IndexError):
        fields = w[i].tolist()
        return "word " + " ".join(f"{n}={v}" for n, v in zip(w.dtype.names, fields)
                                  if v not in (0, NO_TILE))


def instruction_error(w: np.ndarray, where: str, i: int, rule: str,
                      tiles: Sequence[Tile] = ()) -> BinaryFormatError:
    """The loader's error for instruction ``i``: where, the index, the rule broken and
    the instruction's disassembly."""
    return _fail(f"code of {where}, instruction {i}: {rule} "
                 f"[{describe_word(w, i, tiles)}]")


# ----------------------------------------------------------------------------
# Opcode tables (docs/isa.md 3.2, 3.3)
# ----------------------------------------------------------------------------

_FIELDS = ("kind", "queue", "rd", "ra", "rb", "rc", "rdst", "tile_a", "tile_b",
           "tile_c", "tile_d", "group", "target", "wait", "signal", "imm0",
           "imm1", "imm2")
_SYNC = ("wait", "signal")
_USES: dict[Opcode, tuple[str, ...]] = {
    Opcode.NOP: _SYNC,
    Opcode.HALT: (),
    Opcode.LI: ("rd", "imm0"),
    Opcode.SALU: ("kind", "rd", "ra", "rb"),
    Opcode.CHIP_ID: ("rd",),
    Opcode.SEM_WAIT: ("wait",),
    Opcode.SEM_SIGNAL: ("signal",),
    Opcode.LOOP: ("rd", "ra", "rb", "rc", "target", "imm0", "imm1", "imm2"),
    Opcode.ENDLOOP: ("target",),
    Opcode.IF: ("ra", "target"),
    Opcode.ELSE: ("target",),
    Opcode.ENDIF: (),
    Opcode.DMA_COPY: ("queue", "ra", "tile_a", "rdst", "tile_d", "rc") + _SYNC,
    Opcode.DMA_GATHER: ("queue", "ra", "tile_a", "rb", "tile_b", "rdst", "tile_d") + _SYNC,
    Opcode.DMA_SCATTER: ("queue", "ra", "tile_a", "rb", "tile_b", "rdst", "tile_d") + _SYNC,
    Opcode.MATMUL: ("ra", "tile_a", "rb", "tile_b", "rdst", "tile_d") + _SYNC,
    Opcode.VUNARY: ("kind", "ra", "tile_a", "rdst", "tile_d") + _SYNC,
    Opcode.VBINARY: ("kind", "ra", "tile_a", "rb", "tile_b", "rdst", "tile_d") + _SYNC,
    Opcode.VSCALAR: ("kind", "ra", "tile_a", "rb", "rdst", "tile_d", "imm0") + _SYNC,
    Opcode.VSELECT: ("ra", "tile_a", "rb", "tile_b", "rc", "tile_c", "rdst",
                     "tile_d") + _SYNC,
    Opcode.VREDUCE: ("kind", "ra", "tile_a", "rdst", "tile_d", "imm0") + _SYNC,
    Opcode.VTRANSPOSE: ("ra", "tile_a", "rdst", "tile_d", "imm0") + _SYNC,
    Opcode.VFILL: ("ra", "rdst", "tile_d", "imm0") + _SYNC,
    Opcode.VCOPY: ("ra", "tile_a", "rdst", "tile_d") + _SYNC,
    Opcode.VIOTA: ("rdst", "tile_d", "imm0") + _SYNC,
    Opcode.VASSERT: ("ra", "tile_a") + _SYNC,
    Opcode.VSCAN: ("kind", "ra", "tile_a", "rdst", "tile_d", "imm0") + _SYNC,
    Opcode.VSORT: ("ra", "tile_a", "rc", "tile_c", "rdst", "tile_d", "imm0") + _SYNC,
    Opcode.VFUSED: ("kind", "ra", "tile_a", "rb", "tile_b", "rc", "tile_c", "rdst", "tile_d",
                    "imm0", "imm1", "imm2") + _SYNC,
    Opcode.ALL_REDUCE: ("kind", "ra", "tile_a", "rdst", "tile_d", "group") + _SYNC,
    Opcode.ALL_GATHER: ("ra", "tile_a", "rdst", "tile_d", "group", "imm0") + _SYNC,
    Opcode.REDUCE_SCATTER: ("kind", "ra", "tile_a", "rdst", "tile_d", "group",
                            "imm0") + _SYNC,
    Opcode.ALL_TO_ALL: ("ra", "tile_a", "rdst", "tile_d", "group", "imm0",
                        "imm1") + _SYNC,
    Opcode.SEND: ("ra", "tile_a", "rc", "imm1") + _SYNC,
    Opcode.RECV: ("rdst", "tile_d", "rc", "imm1") + _SYNC,
    Opcode.BARRIER: ("group",) + _SYNC,
}
_ALLOWED_FLAGS = {Opcode.LOOP: Flag.LB_REG | Flag.UB_REG | Flag.STEP_REG,
                  Opcode.DMA_COPY: Flag.PEER, Opcode.SEND: Flag.PEER,
                  Opcode.RECV: Flag.PEER, Opcode.MATMUL: Flag.ACCUMULATE,
                  Opcode.VSCALAR: Flag.SCALAR_REG, Opcode.VFILL: Flag.SCALAR_REG,
                  Opcode.VSORT: Flag.DESCENDING, Opcode.DMA_SCATTER: Flag.ACCUMULATE}
_REQUIRED_FLAGS = {Opcode.SEND: Flag.PEER, Opcode.RECV: Flag.PEER}
_SCAN_KINDS = (ReductionKind.SUM, ReductionKind.MAX, ReductionKind.MIN, ReductionKind.PROD)
_COLLECTIVE_KINDS = (ReductionKind.SUM, ReductionKind.MAX, ReductionKind.MIN, ReductionKind.AVG)
_FUSED_KINDS = (ElementwiseKind.ADD, ElementwiseKind.SUB, ElementwiseKind.MUL, ElementwiseKind.DIV,
                ElementwiseKind.MAX, ElementwiseKind.MIN)
#: Which field an opcode's optional register replaces when a flag is set:
#: (opcode, flag, register field, immediate field).
_REG_OR_IMM = ((Opcode.LOOP, Flag.LB_REG, "ra", "imm0"), (Opcode.LOOP, Flag.UB_REG, "rb", "imm1"),
               (Opcode.LOOP, Flag.STEP_REG, "rc", "imm2"),
               (Opcode.VSCALAR, Flag.SCALAR_REG, "rb", "imm0"),
               (Opcode.VFILL, Flag.SCALAR_REG, "ra", "imm0"))
#: Operands that are a tile or, when their slot holds NO_TILE, an immediate:
#: (opcode, tile slot, register field, immediate field).
_TILE_OR_IMM = ((Opcode.VFUSED, "tile_b", "rb", "imm0"), (Opcode.VFUSED, "tile_c", "rc", "imm1"))
_KINDS = {
    Opcode.SALU: [int(k) for k in SaluKind],
    Opcode.VUNARY: [int(k) for k in ElementwiseKind if k.is_unary],
    Opcode.VBINARY: [int(k) for k in ElementwiseKind if not k.is_unary],
    Opcode.VSCALAR: [int(k) for k in ElementwiseKind if not k.is_unary],
    Opcode.VFUSED: [int(k) for k in _FUSED_KINDS],
    Opcode.VREDUCE: [int(k) for k in ReductionKind],
    Opcode.VSCAN: [int(k) for k in _SCAN_KINDS],
    Opcode.ALL_REDUCE: [int(k) for k in _COLLECTIVE_KINDS],
    Opcode.REDUCE_SCATTER: [int(k) for k in _COLLECTIVE_KINDS],
}
_TILE_SLOTS = ("tile_a", "tile_b", "tile_c", "tile_d")

_KNOWN = np.zeros(256, bool)
_ENGINE_OK = np.zeros((256, 256), bool)
_FLAGS_OK = np.zeros(256, np.uint8)
_FLAGS_REQ = np.zeros(256, np.uint8)
_KIND_OK = np.zeros((256, 256), bool)
_USED = {name: np.zeros(256, bool) for name in _FIELDS}
for _op, _fields in _USES.items():
    _KNOWN[_op] = True
    for _e in ALLOWED_ENGINES[_op]:
        _ENGINE_OK[_op, _e] = True
    _FLAGS_OK[_op] = int(_ALLOWED_FLAGS.get(_op, 0))
    _FLAGS_REQ[_op] = int(_REQUIRED_FLAGS.get(_op, 0))
    for _name in _fields:
        _USED[_name][_op] = True
    if "kind" not in _fields:
        _KIND_OK[_op, 0] = True
    for _k in _KINDS.get(_op, ()):
        _KIND_OK[_op, _k] = True
_CONTROL = np.zeros(256, bool)
for _op in (Opcode.LOOP, Opcode.ENDLOOP, Opcode.IF, Opcode.ELSE, Opcode.ENDIF):
    _CONTROL[_op] = True


def check_code(w: np.ndarray, where: str, tiles: tuple[Tile, ...],
               groups: tuple[ReplicaGroups, ...], dma_engines: int,
               activation: bool = False, queued_nop: bool = False, fused: bool = False) -> None:
    """Checks a code section's words (docs/isa.md 3; binary-format 7) against its
    tile and group tables; raises :class:`BinaryFormatError` naming the first
    broken rule and its instruction index. ``activation``: the binary may use the
    activation engine (ISA version 3 and a target with one); ``queued_nop``: a NOP
    on dma may name its queue (ISA version 4); ``fused``: it may hold VFUSED (ISA
    version 5)."""
    n = len(w)

    def first(bad: np.ndarray, message) -> None:
        if bad.any():
            i = int(np.argmax(bad))
            raise instruction_error(w, where, i, message(i), tiles)

    op = w["opcode"]
    engine = w["engine"]
    first(~_KNOWN[op], lambda i: f"unknown opcode 0x{op[i]:02x}")
    opn = lambda i: Opcode(int(op[i])).name  # noqa: E731
    first((op == Opcode.VFUSED) & (not fused), lambda i: "VFUSED needs ISA version 5")
    first(engine > (Engine.ACTIVATION if activation else Engine.COLLECTIVE),
          lambda i: f"unknown engine {engine[i]}" if engine[i] > Engine.ACTIVATION else
          "engine activation needs ISA version 3 and a target with an activation engine")
    first(~_ENGINE_OK[op, engine],
          lambda i: f"{opn(i)} cannot run on engine {Engine(int(engine[i])).name.lower()}")
    flags = w["flags"]
    first((flags & ~_FLAGS_OK[op]) != 0,
          lambda i: f"flag bits 0x{int(flags[i]) & ~int(_FLAGS_OK[op[i]]) & 0xFF:02x} "
                    f"are not defined for {opn(i)}")
    first((flags & _FLAGS_REQ[op]) != _FLAGS_REQ[op],
          lambda i: f"{opn(i)} must have the peer flag set")
    # Fields the opcode does not use hold their default value.
    for name in _FIELDS:
        default = NO_TILE if name.startswith("tile_") else 0
        unused = ~_USED[name][op]
        for opcode, flag, reg, imm in _REG_OR_IMM:
            if name in (reg, imm):
                # the register is used with the flag, the immediate without it
                cond = (op == opcode) & (((flags & flag) != 0) == (name == imm))
                unused = unused | cond
        for opcode, slot, reg, imm in _TILE_OR_IMM:
            if name in (reg, imm):
                # the register is used with a tile, the immediate without one
                cond = (op == opcode) & ((w[slot] == NO_TILE) == (name == reg))
                unused = unused | cond
        if name == "rc":
            unused = unused | ((op == Opcode.DMA_COPY) & ((flags & Flag.PEER) == 0))
        if name == "queue" and queued_nop:
            unused = unused & ~((op == Opcode.NOP) & (engine == Engine.DMA))
        col = w[name]
        first(unused & (col != default),
              lambda i: f"nonzero reserved field '{name}' (= {int(col[i])}), "
                        f"not used by {opn(i)}")
    kind = w["kind"]
    first(~_KIND_OK[op, kind], lambda i: f"kind {kind[i]} is not valid for {opn(i)}")
    imm2 = w["imm2"]
    first((op == Opcode.VFUSED) & ~np.isin(imm2, [int(k) for k in _FUSED_KINDS]),
          lambda i: f"VFUSED op1 kind {imm2[i]} (imm2) is not one of add(32) sub(33) mul(34) "
                    f"div(35) max(36) min(37)")
    dma = (op == Opcode.DMA_COPY) | (op == Opcode.DMA_GATHER) | (op == Opcode.DMA_SCATTER) | \
        ((op == Opcode.NOP) & (engine == Engine.DMA))
    first(dma & (w["queue"] >= dma_engines),
          lambda i: f"DMA queue {w['queue'][i]} is out of range "
                    f"[0, {dma_engines})")
    first((op == Opcode.SEM_WAIT) & (w["wait"] == 0),
          lambda i: "SEM_WAIT with an empty semaphore mask")
    first((op == Opcode.SEM_SIGNAL) & (w["signal"] == 0),
          lambda i: "SEM_SIGNAL with an empty semaphore mask")
    ntiles = len(tiles)
    for slot in _TILE_SLOTS:
        col = w[slot]
        immediate = (col == NO_TILE) & np.isin(op, [int(o) for o, s, _, _ in _TILE_OR_IMM if s == slot])
        first(_USED[slot][op] & (col >= ntiles) & ~immediate,
              lambda i: f"{slot} index {col[i]} is out of range "
                        f"({ntiles} tiles)")
    first(_USED["group"][op] & (w["group"] >= len(groups)),
          lambda i: f"group index {w['group'][i]} is out of range "
                    f"({len(groups)} groups)")
    first((op == Opcode.LOOP) & ((flags & Flag.STEP_REG) == 0) & (w["imm2"] <= 0),
          lambda i: f"LOOP immediate step {w['imm2'][i]} is not positive")
    first(((op == Opcode.SEND) | (op == Opcode.RECV))
          & ((w["imm1"] < 0) | (w["imm1"] > 255)),
          lambda i: f"channel {w['imm1'][i]} is out of range [0, 255]")
    # Immediates that index the dimensions of tile a.
    ranks = np.array([t.rank for t in tiles] + [0], np.int64)
    rank_a = ranks[np.minimum(w["tile_a"], ntiles)]
    dim_ops = ((op == Opcode.VREDUCE) | (op == Opcode.ALL_GATHER)
               | (op == Opcode.REDUCE_SCATTER) | (op == Opcode.ALL_TO_ALL)
               | (op == Opcode.VSCAN) | (op == Opcode.VSORT))
    first(dim_ops & ((w["imm0"] < 0) | (w["imm0"] >= rank_a)),
          lambda i: f"{opn(i)} axis/dim {w['imm0'][i]} is out of range for "
                    f"a rank-{rank_a[i]} tile")
    rank_d = ranks[np.minimum(w["tile_d"], ntiles)]
    first((op == Opcode.VIOTA) & ((w["imm0"] < 0) | (w["imm0"] >= rank_d)),
          lambda i: f"VIOTA axis {w['imm0'][i]} is out of range for a "
                    f"rank-{rank_d[i]} tile")
    check_types(w, where, tiles)
    first((op == Opcode.ALL_TO_ALL) & ((w["imm1"] < 0) | (w["imm1"] >= rank_a)),
          lambda i: f"ALL_TO_ALL concat_dim {w['imm1'][i]} is out of range "
                    f"for a rank-{rank_a[i]} tile")
    for i in np.nonzero(op == Opcode.VTRANSPOSE)[0].tolist():
        rank = int(rank_a[i])
        perm = int(w["imm0"][i]) & 0xFFFFFFFFFFFFFFFF
        digits = [(perm >> (8 * k)) & 0xFF for k in range(8)]
        if sorted(digits[:rank]) != list(range(rank)) or any(digits[rank:]):
            raise instruction_error(w, where, i, f"VTRANSPOSE permutation "
                                    f"{digits[:rank]} is not a permutation of "
                                    f"0..{rank - 1}", tiles)
    check_control_flow(w, where)
    if op[-1] != Opcode.HALT:
        raise _fail(f"code of {where}: the last instruction ({n - 1}) is "
                    f"not HALT")


def check_control_flow(w: np.ndarray, where: str) -> None:
    op, target = w["opcode"], w["target"]
    stack: list[list[int]] = []  # [opcode, index, else index]
    loops = 0
    for i in np.nonzero(_CONTROL[op])[0].tolist():
        code = int(op[i])
        tgt = int(target[i])
        bad = lambda m: instruction_error(w, where, i, m)  # noqa: E731
        if code == Opcode.LOOP:
            loops += 1
            if loops > MAX_LOOP_DEPTH:
                raise bad(f"loops nest deeper than {MAX_LOOP_DEPTH}")
            stack.append([code, i, -1])
        elif code == Opcode.IF:
            stack.append([code, i, -1])
        elif code == Opcode.ENDLOOP:
            if not stack or stack[-1][0] != Opcode.LOOP:
                raise bad("ENDLOOP without a matching LOOP")
            start = stack.pop()[1]
            loops -= 1
            if tgt != start:
                raise bad(f"bad jump target: ENDLOOP target {tgt}, its LOOP "
                          f"is instruction {start}")
            if int(target[start]) != i:
                raise instruction_error(w, where, start, f"bad jump target: LOOP target "
                                        f"{int(target[start])}, its ENDLOOP is "
                                        f"instruction {i}")
        elif code == Opcode.ELSE:
            if not stack or stack[-1][0] != Opcode.IF or stack[-1][2] >= 0:
                raise bad("ELSE without a matching IF")
            stack[-1][2] = i
            start = stack[-1][1]
            if int(target[start]) != i:
                raise instruction_error(w, where, start, f"bad jump target: IF target "
                                        f"{int(target[start])}, its ELSE is "
                                        f"instruction {i}")
        else:  # ENDIF
            if not stack or stack[-1][0] != Opcode.IF:
                raise bad("ENDIF without a matching IF")
            _, start, els = stack.pop()
            opener = els if els >= 0 else start
            if int(target[opener]) != i:
                name = "ELSE" if els >= 0 else "IF"
                raise instruction_error(w, where, opener, f"bad jump target: {name} "
                                        f"target {int(target[opener])}, its ENDIF "
                                        f"is instruction {i}")
    if stack:
        kind, start, _ = stack[-1]
        raise instruction_error(w, where, start, f"{Opcode(kind).name} is never closed")


# ----------------------------------------------------------------------------
# Element-type rules the decoder checks (docs/isa.md 2.3-2.6)
# ----------------------------------------------------------------------------

_ARG = (ReductionKind.ARGMAX, ReductionKind.ARGMIN)
_INDEX = (DType.I64, DType.I32)


def _type_rule(op: Opcode, kind: int, t: list[Tile | None]) -> str | None:
    """The element-type rule an instruction breaks (tiles of slots a..d), or None.
    The `nova_isa` verifiers enforce all of them; the decoder checks those whose
    breach would leave an instruction without a meaning (an integer average, an
    integer matmul, a float index), the simulator the rest (nova.binary.type_rules)."""
    a, b, c, d = t
    name = op.name
    if op in (Opcode.VREDUCE, Opcode.VSCAN, Opcode.ALL_REDUCE, Opcode.REDUCE_SCATTER):
        if kind == ReductionKind.AVG and not a.dtype.is_float:
            return f"{name} avg takes float tiles, got {a.dtype.name.lower()}"
        if op == Opcode.VREDUCE and kind in _ARG and d.dtype not in _INDEX:
            return (f"{name} {ReductionKind(kind).name.lower()} writes an i64 or i32 "
                    f"tile, got {d.dtype.name.lower()}")
    elif op == Opcode.MATMUL:
        for tile, what in ((a, "lhs"), (b, "rhs"), (d, "accumulator")):
            if not tile.dtype.is_float:
                return f"MATMUL takes float tiles only, {what} is {tile.dtype.name.lower()}"
    elif op == Opcode.VSORT and c.dtype not in _INDEX:
        return f"VSORT indices must be an i64 or i32 tile, got {c.dtype.name.lower()}"
    elif op in (Opcode.DMA_GATHER, Opcode.DMA_SCATTER):
        if b.dtype not in _INDEX:
            return f"{name} indices must be an i64 or i32 tile, got {b.dtype.name.lower()}"
        if a.dtype != d.dtype:
            return (f"{name} source and destination must have one element type, got "
                    f"{a.dtype.name.lower()} and {d.dtype.name.lower()}")
    return None


_TYPED = (Opcode.VREDUCE, Opcode.VSCAN, Opcode.ALL_REDUCE, Opcode.REDUCE_SCATTER,
          Opcode.MATMUL, Opcode.VSORT, Opcode.DMA_GATHER, Opcode.DMA_SCATTER)
_TYPED_MASK = np.zeros(256, bool)
_TYPED_MASK[list(_TYPED)] = True


def check_types(w: np.ndarray, where: str, tiles: tuple[Tile, ...]) -> None:
    for i in np.nonzero(_TYPED_MASK[w["opcode"]])[0].tolist():
        t = [None if w[s][i] == NO_TILE else tiles[int(w[s][i])] for s in _TILE_SLOTS]
        problem = _type_rule(Opcode(int(w["opcode"][i])), int(w["kind"][i]), t)
        if problem:
            raise instruction_error(w, where, i, problem, tiles)


# ----------------------------------------------------------------------------
# Decoding to objects
# ----------------------------------------------------------------------------

_OPCODES = {int(o): o for o in Opcode}
_ENGINES = {int(e): e for e in Engine}


def decode_instructions(words: np.ndarray) -> list[Instruction]:
    # Frozen dataclass __init__ costs ~18 object.__setattr__ calls per word;
    # filling __dict__ directly is ~5x faster (1e5 words in well under 1 s).
    out = []
    append = out.append
    new = object.__new__
    cls = Instruction
    for (opcode, engine, kind, flags, queue, rd, ra, rb, rc, rdst, ta, tb, tc, td,
         group, target, wait, signal, imm0, imm1, imm2) in words.tolist():
        ins = new(cls)
        ins.__dict__.update(
            opcode=_OPCODES[opcode], engine=_ENGINES[engine], kind=kind,
            flags=flags, queue=queue, rd=rd, ra=ra, rb=rb, rc=rc, rdst=rdst,
            tiles=(ta, tb, tc, td), group=group, target=target, wait=wait,
            signal=signal, imm0=imm0, imm1=imm1, imm2=imm2)
        append(ins)
    return out
