"""Pointing compiler diagnostics at the user's own line of Python.

torch-mlir keeps every op's PyTorch stack as a call-site location, so
nova-opt's errors name frames inside torch.nn and Nova's frontend as well as
the model; the user wants the model's frame and its source line.
"""

from __future__ import annotations

import linecache
import re
from pathlib import Path

from nova.errors import SourceFrame

_LOCATION = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<kind>error|note|warning|remark): (?P<msg>.*)$")

# Frames that are never the user's code.
_LIBRARY_PARTS = ("site-packages", "dist-packages", "/torch/", "nova/frontend/")


def is_user_file(path: str) -> bool:
    return Path(path).suffix == ".py" and not any(part in path for part in _LIBRARY_PARTS)


def first_error(stderr: str) -> str:
    """The first ``error:`` message of a tool's diagnostics, without its location."""
    for line in stderr.splitlines():
        match = _LOCATION.match(line)
        if match and match["kind"] == "error":
            return match["msg"]
        if line.startswith("error: "):
            return line[len("error: "):]
    return stderr.strip().splitlines()[0] if stderr.strip() else ""


def user_frame(stderr: str) -> SourceFrame | None:
    """The first location of the first error (or its call-stack notes) in the user's code."""
    seen_error = False
    for line in stderr.splitlines():
        match = _LOCATION.match(line)
        if not match:
            continue
        if match["kind"] == "error":
            if seen_error:
                break
            seen_error = True
        if seen_error and is_user_file(match["file"]):
            number = int(match["line"])
            text = linecache.getline(match["file"], number).strip()
            return SourceFrame(match["file"], number, text)
    return None


_LOC_FILE_LINE = re.compile(r'"(?P<file>[^"]+)":(?P<line>\d+):(?P<col>\d+)')


def frame_of_location(location: str) -> SourceFrame | None:
    """The user's frame in a printed MLIR location (``loc(callsite(...))``)."""
    for match in _LOC_FILE_LINE.finditer(location):
        if is_user_file(match["file"]):
            number = int(match["line"])
            return SourceFrame(match["file"], number,
                               linecache.getline(match["file"], number).strip())
    return None
