"""Exceptions raised by the Nova runtime.

The runtime works on the binary format alone and imports nothing from the
compiler; its errors derive from :class:`nova.errors.NovaRuntimeError` (a
``NovaError``), the bottom module every layer shares.
"""

from __future__ import annotations

from nova.errors import NovaRuntimeError

__all__ = ["BinaryFormatError", "NovaRuntimeError", "ProgramArchiveError"]


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
