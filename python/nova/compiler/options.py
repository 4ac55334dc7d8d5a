"""Compiler options, validated once at the API boundary."""

from __future__ import annotations

import re
from dataclasses import dataclass

from nova.compiler.errors import NovaOptionError

_TARGET_NAME = re.compile(r"[A-Za-z0-9_.\-/]+")


@dataclass(frozen=True)
class TargetOptions:
    """Which hardware description to compile for.

    name: a target in ``targets/`` (``nova-t1``) or a path to a target ``.json``.
    chips: number of chips in the system; 0 keeps the target file's value.
    """

    name: str = "nova-t1"
    chips: int = 0

    def __post_init__(self) -> None:
        if not _TARGET_NAME.fullmatch(self.name):
            raise NovaOptionError(
                f"target name must be a file name or path without spaces or quotes, got {self.name!r}"
            )
        if isinstance(self.chips, bool) or not isinstance(self.chips, int) or self.chips < 0:
            raise NovaOptionError(f"chips must be a non-negative integer, got {self.chips!r}")
