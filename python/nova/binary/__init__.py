"""The binary format, Nova's bottom layer: the ``.nova`` reader and its validation
rules (docs/binary-format.md), the ISA tables (docs/isa.md), the target schema and
the disassembler. The contract between the compiler and the simulator/runtime;
imports nothing from ``nova.sim``, ``nova.runtime``, ``nova.compiler`` or
``nova.frontend``.

    from nova.binary import load_binary, disassemble
    print(disassemble(load_binary("model.nova")))

Public names load lazily, so ``python -m nova.binary.format FILE`` runs cleanly.
"""

from __future__ import annotations

from nova.binary.errors import BinaryFormatError, TargetError

#: Public name -> the module that defines it.
_LAZY = {
    "Binary": "nova.binary.format", "IOEntry": "nova.binary.format", "Program": "nova.binary.format",
    "load_binary": "nova.binary.format", "disassemble": "nova.binary.disassembly",
    "Instruction": "nova.binary.isa", "Opcode": "nova.binary.isa", "Tile": "nova.binary.isa",
    "validate_target": "nova.binary.target_schema",
}

__all__ = ["BinaryFormatError", "TargetError", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nova.binary' has no attribute {name!r}")
