"""The text ``nova inspect`` prints: header, sections, I/O table, disassembly."""

from __future__ import annotations

from nova.binary.format import Role, disassemble
from nova.runtime.program import CompiledProgram


def describe(program: CompiledProgram, *, code: bool = True) -> str:
    """A readable summary of ``program``'s binary, followed by its disassembly when ``code``."""
    binary = program.binary
    h = binary.header
    lines = [
        "header",
        f"  format version  {h.format_version}",
        f"  isa version     {h.isa_version}",
        f"  flags           0x{h.flags:x}",
        f"  file size       {h.file_size} bytes",
        f"target            {h.target_name} ({h.chips} chip{'s' if h.chips != 1 else ''})",
        f"sections          {len(binary.sections)}",
    ]
    for s in binary.sections:
        chips = f" chips {list(s.chips)}" if s.chips else ""
        lines.append(f"  {s.type.name.lower():12s} offset 0x{s.offset:08x} size {s.size:10d}{chips}")
    for i, p in enumerate(binary.programs):
        lines.append(f"program {i}         chips {list(p.chips)}: {len(p)} instructions, "
                     f"{len(p.tiles)} tiles")
    # Inputs the program binds itself (parameters): those a call does not pass
    # (on a mesh, each chip its pieces).
    bound = {e.index for e in binary.inputs} - {e.index for e in program.input_entries}
    lines.append(f"io                {len(program.input_entries)} input(s), "
                 f"{len(program.output_entries)} output(s), {len(bound)} bound parameter(s)")
    lines.append(f"  {'#':>3} {'role':9s} {'name':24s} {'dtype':6s} {'shape':18s} "
                 f"{'hbm address':>12s} {'bytes':>10s}")
    for e in sorted(binary.io, key=lambda e: e.index):
        role = "param" if e.index in bound else e.role.name.lower()
        if e.role == Role.OUTPUT:
            role = "output"
        lines.append(f"  {e.index:3d} {role:9s} {e.name:24.24s} {e.dtype.name.lower():6s} "
                     f"{str(list(e.shape)):18s} {f'0x{e.address:x}':>12s} {e.byte_size:10d}")
    lines.append(f"constants         {len(binary.constants)} "
                 f"({sum(len(c.data) for c in binary.constants)} bytes)")
    text = "\n".join(lines) + "\n"
    if code:
        text += "\ndisassembly\n" + disassemble(binary)
    return text
