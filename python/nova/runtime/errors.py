"""Exceptions raised by the Nova runtime.

The runtime works on the binary format alone and imports nothing from the
compiler; its errors derive from :class:`nova.errors.NovaRuntimeError` (a
``NovaError``), the bottom module every layer shares.
"""

from __future__ import annotations

from nova.binary.errors import BinaryFormatError
from nova.errors import NovaRuntimeError

__all__ = ["BinaryFormatError", "NovaRuntimeError", "ProgramArchiveError"]


class ProgramArchiveError(NovaRuntimeError, ValueError):
    """A saved program (``.novaprog``, a zip archive) is corrupt or incomplete; the
    message names the file, the member and the problem, e.g.
    ``"model.novaprog: member 'param3.npy' is missing"``."""
