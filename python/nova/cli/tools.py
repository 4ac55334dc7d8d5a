"""``nova-opt`` and ``nova-translate`` on the PATH: console scripts that exec the
C++ tools shipped in ``nova/bin`` (or ``NOVA_TOOLS_DIR``), argv passed through."""

from __future__ import annotations

import os
import sys
from typing import NoReturn, Sequence

from nova.compiler.errors import NovaToolNotFoundError
from nova.compiler.tools import find_tool


def exec_tool(name: str, argv: Sequence[str] | None = None) -> NoReturn:
    """Replaces this process with tool ``name`` run on ``argv`` (default: this
    process's arguments); a missing tool is one line on stderr and status 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        path = find_tool(name)
    except NovaToolNotFoundError as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        raise SystemExit(1) from None
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [name, *args])


def nova_opt() -> NoReturn:
    """The ``nova-opt`` console script."""
    exec_tool("nova-opt")


def nova_translate() -> NoReturn:
    """The ``nova-translate`` console script."""
    exec_tool("nova-translate")
