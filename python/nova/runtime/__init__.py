"""Nova runtime: reads ``.nova`` binaries (docs/binary-format.md).

Works on the binary format alone; it imports neither MLIR nor the compiler.

    from nova.runtime import load_binary, disassemble
    binary = load_binary("model.nova")
    print(disassemble(binary))
"""

from nova.runtime.errors import BinaryFormatError, NovaRuntimeError
from nova.runtime.isa import Instruction, Opcode, Tile

_BINARY_NAMES = ("Binary", "IOEntry", "Program", "disassemble", "load_binary")


def __getattr__(name: str):
    # Imported lazily so that `python -m nova.runtime.binary` runs cleanly.
    if name in _BINARY_NAMES:
        from nova.runtime import binary
        return getattr(binary, name)
    raise AttributeError(f"module 'nova.runtime' has no attribute {name!r}")

__all__ = [
    "Binary", "BinaryFormatError", "IOEntry", "Instruction", "NovaRuntimeError",
    "Opcode", "Program", "Tile", "disassemble", "load_binary",
]
