"""Exceptions raised by the Nova runtime.

The runtime works on the binary format alone and imports nothing from the
compiler, so these do not derive from ``nova.compiler.errors.NovaError``.
"""

from __future__ import annotations

__all__ = ["BinaryFormatError", "NovaRuntimeError", "ProgramArchiveError"]


class NovaRuntimeError(Exception):
    """Base class of every error the runtime raises on purpose."""


class BinaryFormatError(NovaRuntimeError, ValueError):
    """A ``.nova`` file violates docs/binary-format.md or docs/isa.md.

    The message names the broken rule and where it is broken (section, chip
    set, instruction index), e.g.
    ``"code of chips [0, 1], instruction 7: tile_a index 9 is out of range (3 tiles)"``.
    """


class ProgramArchiveError(NovaRuntimeError, ValueError):
    """A saved program (``.novaprog``, a zip archive) is corrupt or incomplete; the
    message names the file, the member and the problem, e.g.
    ``"model.novaprog: member 'param3.npy' is missing"``."""
