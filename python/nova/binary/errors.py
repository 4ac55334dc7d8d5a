"""Exceptions raised by the binary-format layer: a ``.nova`` file or a target
description that breaks its documented rules. Both are run-time errors (the
compiler never raises them), so they derive from :class:`nova.errors.NovaRuntimeError`;
``nova.runtime`` and ``nova.sim`` re-export them under their old names."""

from __future__ import annotations

from nova.errors import NovaRuntimeError

__all__ = ["BinaryFormatError", "TargetError"]


class BinaryFormatError(NovaRuntimeError, ValueError):
    """A ``.nova`` file violates docs/binary-format.md or docs/isa.md.

    The message names the broken rule and where it is broken (section, chip
    set, instruction index), e.g.
    ``"code of chips [0, 1], instruction 7: tile_a index 9 is out of range (3 tiles)"``.
    """


class TargetError(NovaRuntimeError):
    """A target description is missing a field or holds an invalid value, or a
    target file cannot be found or read."""
