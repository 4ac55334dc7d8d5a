"""Chrome-trace / Perfetto timeline: one process per chip, one thread per engine queue,
plus an ``interconnect`` process with one thread per link."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LINKS_PID = 1_000_000


class TraceRecorder:
    """Collects complete ("X") events while the simulator runs (times in ns)."""

    def __init__(self) -> None:
        self.ops: list[tuple[int, str, str, int, float, float]] = []
        self.links: list[tuple[str, str, float, float, float]] = []
        #: Per chip, instruction index -> DEBUG-section location (set by the
        #: simulator): slices are named after the module / line they came from.
        self.locations: dict[int, dict[int, str]] = {}
        #: Every completed engine instruction: (chip, track, name, pc, start, end,
        #: dispatch time, previous instance on its queue, instances it waited on).
        self.instances: list[tuple[int, str, str, int, float, float, float, int,
                                   tuple[int, ...]]] = []

    def instance(self, chip: int, track: str, name: str, pc: int, start: float, end: float,
                 dispatched: float, previous: int, deps: tuple[int, ...]) -> int:
        self.instances.append((chip, track, name, pc, start, end, dispatched, previous, deps))
        return len(self.instances) - 1

    def op(self, chip: int, track: str, name: str, pc: int, start_ns: float, dur_ns: float) -> None:
        self.ops.append((chip, track, name, pc, start_ns, dur_ns))

    def link(self, link: str, name: str, start_ns: float, dur_ns: float, nbytes: float) -> None:
        self.links.append((link, name, start_ns, dur_ns, nbytes))

    def to_json(self) -> dict[str, Any]:
        """The ``{"traceEvents": [...]}`` object (ts and dur in µs)."""
        ev: list[dict[str, Any]] = []
        tids: dict[tuple[int, str], int] = {}

        def tid(pid: int, track: str) -> int:
            t = tids.get((pid, track))
            if t is None:
                t = tids[(pid, track)] = len([k for k in tids if k[0] == pid])
                ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": t, "args": {"name": track}})
                ev.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": t,
                           "args": {"sort_index": t}})
            return t

        chips = sorted({c for c, *_ in self.ops})
        for c in chips:
            ev.append({"ph": "M", "name": "process_name", "pid": c, "args": {"name": f"chip {c}"}})
        from .report_profile import UNKNOWN, module_of, source_line

        for chip, track, name, pc, s, d in self.ops:
            args: dict[str, Any] = {"pc": pc}
            location = self.locations.get(chip, {}).get(pc)
            if location:
                # The same names as nova profile's rows: module, then the model's line.
                module, line = module_of(location), source_line(location)
                where = module if module != UNKNOWN else line
                name = f"{name} {where}"
                args.update(module=module, line=line, location=location)
            ev.append({"ph": "X", "name": name, "cat": track, "pid": chip, "tid": tid(chip, track),
                       "ts": s / 1e3, "dur": d / 1e3, "args": args})
        if self.links:
            ev.append({"ph": "M", "name": "process_name", "pid": LINKS_PID, "args": {"name": "interconnect"}})
        for link, name, s, d, b in self.links:
            ev.append({"ph": "X", "name": name, "cat": "link", "pid": LINKS_PID, "tid": tid(LINKS_PID, link),
                       "ts": s / 1e3, "dur": d / 1e3, "args": {"bytes": b}})
        return {"traceEvents": ev, "displayTimeUnit": "ns"}

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json()))
