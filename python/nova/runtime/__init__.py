"""Nova runtime: runs programs built from ``.nova`` binaries (the format itself,
reader and validator, is :mod:`nova.binary`, the layer below).

Works on the binary format alone; it imports neither MLIR nor the compiler.

    from nova.runtime import load_binary, disassemble
    binary = load_binary("model.nova")
    print(disassemble(binary))
"""

from nova.binary.format import Binary, IOEntry, Program, disassemble, load_binary
from nova.binary.isa import Instruction, Opcode, Tile
from nova.runtime.errors import BinaryFormatError, NovaRuntimeError

__all__ = [
    "Binary", "BinaryFormatError", "IOEntry", "Instruction", "NovaRuntimeError",
    "Opcode", "Program", "Tile", "disassemble", "load_binary",
]
