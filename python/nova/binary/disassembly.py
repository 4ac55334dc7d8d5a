"""The disassembler of loaded ``.nova`` binaries (docs/isa.md syntax, one line per
instruction, with the tile and group tables and debug locations)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Sequence

from nova.binary.isa import (
    NO_TILE, ElementwiseKind, Flag, Instruction, Opcode, ReductionKind, SaluKind, Tile,
)

if TYPE_CHECKING:
    from nova.binary.format import Binary

__all__ = ["disassemble", "format_instruction"]


def _fmt_chips(chips: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, chips)) + "]"


def _sync(ins: Instruction) -> str:
    text = f" on {ins.engine.name.lower()}"
    if ins.wait:
        text += f" wait {list(ins.wait_ids)}"
    if ins.signal:
        text += f" signal {list(ins.signal_ids)}"
    return text


def _scalar(ins: Instruction, tile: Tile | None, reg: int) -> str:
    """VSCALAR / VFILL's scalar: a register, an i64 (integer and i1 tiles) or an f64."""
    if ins.has_flag(Flag.SCALAR_REG):
        return f"r{reg}"
    if tile is not None and not tile.dtype.is_float:
        return str(ins.imm0)
    return repr(ins.imm0_f64)


def _fused_operands(ins: Instruction, a: str, b: str, c: str) -> str:
    """VFUSED's ``op0, op1 x, A, B``: A and B a tile, or the f64 immediate when
    their slot holds no tile."""
    first = b if ins.tiles[1] != NO_TILE else repr(ins.imm0_f64)
    second = c if ins.tiles[2] != NO_TILE else repr(ins.imm1_f64)
    kinds = ", ".join(ElementwiseKind(k).name.lower() for k in (ins.kind, ins.imm2))
    return f"{kinds} {a}, {first}, {second}"


def format_instruction(ins: Instruction, depth: int = 0,
                       tiles: Sequence[Tile] = ()) -> str:
    """One instruction in the syntax of docs/isa.md, operands as ``rN:tK`` (address
    register, tile-table index); ``tiles`` (the program's table) lets VSCALAR and
    VFILL print integer immediates as integers."""
    op = ins.opcode
    tile = lambda slot: (tiles[ins.tiles[slot]]  # noqa: E731
                         if ins.tiles[slot] < len(tiles) else None)
    r = lambda n: f"r{n}"  # noqa: E731
    t = lambda slot, reg: f"{r(reg)}:t{ins.tiles[slot]}"  # noqa: E731
    a, b, c, d = t(0, ins.ra), t(1, ins.rb), t(2, ins.rc), t(3, ins.rdst)
    if op == Opcode.NOP:
        queue = f" queue {ins.queue}" if ins.queue else ""
        text = "nop" + queue + _sync(ins)
    elif op == Opcode.HALT:
        text = "halt"
    elif op == Opcode.LI:
        text = f"li {r(ins.rd)}, {ins.imm0}"
    elif op == Opcode.SALU:
        text = f"salu {SaluKind(ins.kind).name.lower()} {r(ins.rd)}, {r(ins.ra)}, {r(ins.rb)}"
    elif op == Opcode.CHIP_ID:
        text = f"chip_id {r(ins.rd)}"
    elif op == Opcode.SEM_WAIT:
        text = f"sem_wait {list(ins.wait_ids)}"
    elif op == Opcode.SEM_SIGNAL:
        text = f"sem_signal {list(ins.signal_ids)}"
    elif op == Opcode.LOOP:
        lb = r(ins.ra) if ins.has_flag(Flag.LB_REG) else ins.imm0
        ub = r(ins.rb) if ins.has_flag(Flag.UB_REG) else ins.imm1
        st = r(ins.rc) if ins.has_flag(Flag.STEP_REG) else ins.imm2
        text = f"loop {r(ins.rd)} = {lb} to {ub} step {st}  -> {ins.target}"
    elif op == Opcode.ENDLOOP:
        text = f"endloop  -> {ins.target}"
    elif op == Opcode.IF:
        text = f"if {r(ins.ra)}  -> {ins.target}"
    elif op == Opcode.ELSE:
        text = f"else  -> {ins.target}"
    elif op == Opcode.ENDIF:
        text = "endif"
    elif op == Opcode.DMA_COPY:
        peer = f" peer {r(ins.rc)}" if ins.has_flag(Flag.PEER) else ""
        text = f"dma_copy {a} -> {d} queue {ins.queue}{peer}" + _sync(ins)
    elif op in (Opcode.DMA_GATHER, Opcode.DMA_SCATTER):
        acc = " accumulate" if ins.has_flag(Flag.ACCUMULATE) else ""
        text = f"{op.name.lower()} {a}, {b} -> {d} queue {ins.queue}{acc}" + _sync(ins)
    elif op == Opcode.MATMUL:
        acc = " accumulate" if ins.has_flag(Flag.ACCUMULATE) else ""
        text = f"matmul {a}, {b} -> {d}{acc}" + _sync(ins)
    elif op in (Opcode.VUNARY, Opcode.VBINARY, Opcode.VSCALAR):
        kind = ElementwiseKind(ins.kind).name.lower()
        ins_text = {Opcode.VUNARY: a, Opcode.VBINARY: f"{a}, {b}",
                    Opcode.VSCALAR: f"{a}, {_scalar(ins, tile(0), ins.rb)}"}[op]
        text = f"{op.name.lower()} {kind} {ins_text} -> {d}" + _sync(ins)
    elif op == Opcode.VFUSED:
        text = f"vfused {_fused_operands(ins, a, b, c)} -> {d}" + _sync(ins)
    elif op == Opcode.VSELECT:
        text = f"vselect {a}, {b}, {c} -> {d}" + _sync(ins)
    elif op == Opcode.VREDUCE:
        text = (f"vreduce {ReductionKind(ins.kind).name.lower()} {a} -> {d} "
                f"axis {ins.imm0}" + _sync(ins))
    elif op == Opcode.VTRANSPOSE:
        text = f"vtranspose {a} -> {d} perm 0x{ins.imm0 & (2**64 - 1):x}" + _sync(ins)
    elif op == Opcode.VFILL:
        text = f"vfill {_scalar(ins, tile(3), ins.ra)} -> {d}" + _sync(ins)
    elif op == Opcode.VCOPY:
        text = f"vcopy {a} -> {d}" + _sync(ins)
    elif op == Opcode.VIOTA:
        text = f"viota -> {d} axis {ins.imm0}" + _sync(ins)
    elif op == Opcode.VASSERT:
        text = f"vassert {a}" + _sync(ins)
    elif op == Opcode.VSCAN:
        text = (f"vscan {ReductionKind(ins.kind).name.lower()} {a} -> {d} "
                f"axis {ins.imm0}" + _sync(ins))
    elif op == Opcode.VSORT:
        desc = " descending" if ins.has_flag(Flag.DESCENDING) else ""
        text = f"vsort {a} -> {d}, {c} axis {ins.imm0}{desc}" + _sync(ins)
    elif op in (Opcode.ALL_REDUCE, Opcode.REDUCE_SCATTER):
        dim = f" dim {ins.imm0}" if op == Opcode.REDUCE_SCATTER else ""
        text = (f"{op.name.lower()} {ReductionKind(ins.kind).name.lower()} {a} -> "
                f"{d}{dim} groups g{ins.group}" + _sync(ins))
    elif op == Opcode.ALL_GATHER:
        text = f"all_gather {a} -> {d} dim {ins.imm0} groups g{ins.group}" + _sync(ins)
    elif op == Opcode.ALL_TO_ALL:
        text = (f"all_to_all {a} -> {d} split_dim {ins.imm0} concat_dim {ins.imm1} "
                f"groups g{ins.group}" + _sync(ins))
    elif op == Opcode.SEND:
        text = f"send {a} to {r(ins.rc)} channel {ins.imm1}" + _sync(ins)
    elif op == Opcode.RECV:
        text = f"recv {d} from {r(ins.rc)} channel {ins.imm1}" + _sync(ins)
    else:  # BARRIER
        text = f"barrier groups g{ins.group}" + _sync(ins)
    return "  " * depth + text


def disassemble(binary: "Binary") -> str:
    """A readable listing of a loaded binary: target, programs (tables and
    code with debug locations), I/O and constants."""
    h = binary.header
    lines = [f"; nova binary format {h.format_version}, isa {h.isa_version}, "
             f"target {h.target_name} ({h.chips} chips)",
             "; target " + json.dumps(dict(binary.target), separators=(",", ":"))]
    for p, program in enumerate(binary.programs):
        lines.append(f"program {p} chips {_fmt_chips(program.chips)}: "
                     f"{len(program)} instructions")
        for i, tile in enumerate(program.tiles):
            lines.append(f"  t{i} = {tile}")
        for g, groups in enumerate(program.groups):
            lines.append(f"  g{g} = {[list(x) for x in groups]}")
        depth = 0
        for i, ins in enumerate(program.instructions):
            if ins.opcode in (Opcode.ENDLOOP, Opcode.ENDIF, Opcode.ELSE):
                depth -= 1
            text = f"  {i:6d}  " + format_instruction(ins, depth, program.tiles)
            if i in program.debug:
                text = f"{text:<72} ; {program.debug[i]}"
            lines.append(text)
            if ins.opcode in (Opcode.LOOP, Opcode.IF, Opcode.ELSE):
                depth += 1
    for e in binary.io:
        lines.append(f"{e.role.name.lower()} {e.index} '{e.name}': "
                     f"{e.dtype.name.lower()}{list(e.shape)} at hbm 0x{e.address:x} "
                     f"({e.byte_size} bytes)")
    for c in binary.constants:
        lines.append(f"constant '{c.name}' at hbm 0x{c.address:x} ({len(c.data)} bytes)")
    return "\n".join(lines) + "\n"
