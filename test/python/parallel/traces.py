"""Reading the Chrome traces that multi-chip programs write (write_trace)."""

from __future__ import annotations

import json
from pathlib import Path


def engine_spans(path: Path, chip: int, engine: str) -> list[dict]:
    """The complete events of one engine queue ("matrix", "collective", ...)
    of one chip."""
    events = json.loads(Path(path).read_text())["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    return [e for e in events if e.get("ph") == "X" and e["pid"] == chip
            and names.get((chip, e["tid"])) == engine]


def any_overlap(a: list[dict], b: list[dict]) -> bool:
    """Whether some span of ``a`` runs at the same time as some span of ``b``."""
    return any(x["ts"] < y["ts"] + y["dur"] and y["ts"] < x["ts"] + x["dur"]
               for x in a for y in b)
