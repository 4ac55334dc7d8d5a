"""Environment knobs: the one place where Nova reads environment variables.

Everything else asks :func:`knobs` instead of looking at ``os.environ``, so that
the list of variables that change Nova's behaviour is this file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


@dataclass(frozen=True)
class Knobs:
    """Settings taken from the environment.

    tools_dir: folder holding ``nova-opt`` and ``nova-translate``
        (``NOVA_TOOLS_DIR``), for running the Python package against a
        development build such as ``build-py/bin``; ``None`` means the tools
        installed with the package (``nova/bin``).
    """

    tools_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.tools_dir is not None and not isinstance(self.tools_dir, Path):
            raise TypeError(f"tools_dir must be a Path, got {type(self.tools_dir).__name__}")


def knobs(environ: Mapping[str, str] | None = None) -> Knobs:
    """Reads the knobs from ``environ`` (default: the process environment) now."""
    env = os.environ if environ is None else environ
    tools_dir = env.get("NOVA_TOOLS_DIR") or None
    return Knobs(tools_dir=Path(tools_dir).expanduser() if tools_dir else None)
