"""The device's eager profile: per op, calls, simulated time and bytes; and a
Chrome trace of the ops on each stream's simulated clock."""
from __future__ import annotations

import json
from collections import defaultdict, deque
from pathlib import Path
from typing import Any

_rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0])  # calls, ns, op ns, bytes
#: The latest ops on the simulated clock, for the Chrome trace (the oldest drop out).
_events: deque[tuple[str, float, float, str, dict | None]] = deque(maxlen=200_000)
#: The trace's process name: "nova", or "rank N" under torch.distributed (set by nova.distributed).
process = {"name": "nova"}
#: Host wall time of the device's ops (compiles excluded) and the part of it the
#: simulator itself took: their difference is the device's own overhead per op.
host: dict[str, float] = {"op_s": 0.0, "simulator_s": 0.0}


def record(name: str, start: float, end: float, program_ns: float, nbytes: int,
           lane: str = "stream", args: dict | None = None) -> None:
    """One op from ``start`` to ``end`` (simulated ns) on ``lane`` (the compute
    stream, or "comm" for collectives); ``args`` go into its trace event."""
    row = _rows[name]
    row[0] += 1
    row[1] += end - start
    row[2] += program_ns
    row[3] += nbytes
    _events.append((name, start, end, lane, args))


def reset() -> None:
    _rows.clear()
    _events.clear()
    host.update(op_s=0.0, simulator_s=0.0)


def launches() -> int:
    return int(sum(r[0] for r in _rows.values()))


def table(top: int = 30) -> str:
    """Ops by simulated time (launch cost included)."""
    rows = sorted(_rows.items(), key=lambda kv: -kv[1][1])
    total = sum(r[1] for _, r in rows) or 1.0
    lines = [f"{'op':<44} {'calls':>6} {'sim us':>10} {'%':>6} {'MB in':>9}"]
    for name, (calls, ns, _, nbytes) in rows[:top]:
        lines.append(f"{name[:44]:<44} {int(calls):>6} {ns / 1e3:>10.1f} {100 * ns / total:>6.1f} "
                     f"{nbytes / 1e6:>9.3f}")
    lines.append(f"{'total':<44} {launches():>6} {total / 1e3:>10.1f}")
    return "\n".join(lines)


def rows() -> dict[str, dict[str, Any]]:
    return {name: {"calls": int(r[0]), "time_ns": r[1], "program_ns": r[2], "bytes": int(r[3])}
            for name, r in _rows.items()}


def write_trace(path: str | Path) -> None:
    """The latest ops (up to 200,000, since ``reset_profile()``) as a Chrome trace
    (chrome://tracing, Perfetto): one slice per op on the simulated clock."""
    pid = process["name"]
    events = [{"name": n, "ph": "X", "ts": s / 1e3, "dur": (e - s) / 1e3, "pid": pid, "tid": lane,
               **({"args": args} if args else {})}
              for n, s, e, lane, args in _events]
    Path(path).write_text(json.dumps({"traceEvents": events}))
